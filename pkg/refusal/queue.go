package refusal

import (
	"fmt"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
)

// Refusals that come before any quota: which queue a pod belongs to, and
// whether Cardinal can read what it needs (SPEC §1.1, §6).

// NoQueue: the pod's queue does not exist.
type NoQueue struct {
	Queue string
}

func (r NoQueue) String() string {
	return fmt.Sprintf("queue %s does not exist: create it, or set the label %s on the pod, its PodGroup or its namespace to an existing queue", r.Queue, v1alpha1.QueueLabel)
}

func (r NoQueue) Error() string { return r.String() }

func (r NoQueue) Fix() string {
	return fmt.Sprintf("create the Queue %s, or set the label %s to a queue that exists", r.Queue, v1alpha1.QueueLabel)
}

// QueueUnreadable: the Queue API cannot be read (no CRD, no RBAC).
type QueueUnreadable struct {
	Queue, Why string
}

func (r QueueUnreadable) String() string {
	return fmt.Sprintf("queue %s cannot be read: %s; its pods wait until it can", r.Queue, r.Why)
}

func (r QueueUnreadable) Error() string { return r.String() }

func (r QueueUnreadable) Fix() string {
	return "install Cardinal's Queue CRD and the RBAC to read it (kubectl apply -k config/)"
}

// NamespaceDenied: the queue's spec.namespaceSelector does not select the
// pod's namespace (SPEC §1.1).
type NamespaceDenied struct {
	Namespace, Queue string
	// Selector is the queue's namespaceSelector as kubectl prints it.
	Selector string
}

func (r NamespaceDenied) String() string {
	return fmt.Sprintf("namespace %s may not use queue %s: its spec.namespaceSelector %s does not match the namespace's labels; label namespace %s to match it, or set the label %s on the pod, its PodGroup or its namespace to a queue namespace %s may use",
		r.Namespace, r.Queue, r.Selector, r.Namespace, v1alpha1.QueueLabel, r.Namespace)
}

func (r NamespaceDenied) Error() string { return r.String() }

func (r NamespaceDenied) Fix() string {
	return fmt.Sprintf("label namespace %s to match queue %s's namespaceSelector %s, or use a queue namespace %s may use", r.Namespace, r.Queue, r.Selector, r.Namespace)
}

// OwnerUnseen: the pod's owner, whose labels decide how it is placed, has
// not been seen yet.
type OwnerUnseen struct {
	Owner string
}

func (r OwnerUnseen) String() string {
	return fmt.Sprintf("its owner %s is not seen yet: the pod waits for it, since its %s label decides how the pod is placed", r.Owner, v1alpha1.PreemptibilityLabel)
}

func (r OwnerUnseen) Error() string { return r.String() }

func (r OwnerUnseen) Fix() string {
	return fmt.Sprintf("nothing: it is tried as soon as %s is seen; if it was deleted, delete the pod", r.Owner)
}

// Relabelled: the pod's labels changed what it was checked as (its queue,
// or its preemptibility) between PreFilter and Reserve; what was not
// checked is not booked (SPEC §3.5, §3.7).
type Relabelled struct {
	// What changed: "queue" or "preemptibility".
	What     string
	From, To string
}

func (r Relabelled) String() string {
	return fmt.Sprintf("its %s changed from %s to %s while it was being scheduled; it is tried again", r.What, r.From, r.To)
}

func (r Relabelled) Error() string { return r.String() }

func (r Relabelled) Fix() string {
	return fmt.Sprintf("nothing: it is tried again as its %s is now, %s", r.What, r.To)
}

// Loading: the scheduler has just started and has not loaded the cluster.
type Loading struct{}

func (Loading) String() string {
	return "waiting for Cardinal's view of the cluster to load (scheduler starting)"
}

func (r Loading) Error() string { return r.String() }
func (Loading) Fix() string     { return "nothing: it is tried once the scheduler has loaded the cluster" }

func init() {
	register[NoQueue]()
	register[QueueUnreadable]()
	register[NamespaceDenied]()
	register[OwnerUnseen]()
	register[Relabelled]()
	register[Loading]()
}
