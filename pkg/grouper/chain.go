package grouper

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// maxDepth bounds the walk up a pod's owners. The deepest chain Cardinal
// reads is a LeaderWorkerSet's worker: pod, worker StatefulSet, leader
// pod, leader StatefulSet, LeaderWorkerSet. A cycle of controller
// references, which the API does not forbid, ends here too.
const maxDepth = 8

// Reader reads the objects on a pod's owner chain.
type Reader interface {
	// Knows tells whether the reader reads objects of gk at all.
	Knows(gk schema.GroupKind) bool
	// Get returns the object, or an error: NotFound (not seen yet, or
	// gone), or an Unreadable when the scheduler may not read its kind.
	Get(gk schema.GroupKind, namespace, name string) (*unstructured.Unstructured, error)
}

// Unreadable is the error of a kind the scheduler may not list and watch:
// the RBAC rule it lacks.
type Unreadable struct {
	Kind     schema.GroupKind
	Resource string
	Why      string
}

func (u *Unreadable) Error() string {
	return fmt.Sprintf("the scheduler may not read %s (%s): add to its ClusterRole a rule with apiGroups [%q], resources [%q], verbs [get, list, watch]",
		u.Kind, u.Why, u.Kind.Group, u.Resource)
}

// Link is one owner on a pod's chain.
type Link struct {
	Kind schema.GroupKind
	Obj  *unstructured.Unstructured
}

// Chain is a pod's owners through controller references: Links[0] is its
// controller, the last its top-level owner (as far as the reader reads).
type Chain struct {
	Pod   *corev1.Pod
	Links []Link
}

// Controller is the pod's controller, nil if it has none.
func (c Chain) Controller() *Link {
	if len(c.Links) == 0 {
		return nil
	}
	return &c.Links[0]
}

// Top is the pod's top-level owner, nil if it has none.
func (c Chain) Top() *Link {
	if len(c.Links) == 0 {
		return nil
	}
	return &c.Links[len(c.Links)-1]
}

// Find is the first link of kind gk, from the controller up, or nil.
func (c Chain) Find(gk schema.GroupKind) *Link {
	for i := range c.Links {
		if c.Links[i].Kind == gk {
			return &c.Links[i]
		}
	}
	return nil
}

// ErrOwnerUnseen is returned when an owner on the chain is not in the
// reader's caches, or is another object of the same name (one deleted and
// made again): it may be about to arrive, so the walk is tried again.
var ErrOwnerUnseen = errors.New("an owner of the pod is not known yet")

// Walk follows pod's controller references up to its top-level owner. It
// stops at an owner of a kind the reader does not read (another project's
// workload Cardinal does not group): the chain then ends below it. Each
// hop checks the owner's UID, so a workload made again under the same name
// is not taken for the pod's owner. An owner the scheduler may not read
// ends the walk with an *Unreadable error.
func Walk(r Reader, pod *corev1.Pod) (Chain, error) {
	c := Chain{Pod: pod}
	ref := metav1.GetControllerOfNoCopy(pod)
	for depth := 0; ref != nil; depth++ {
		if depth == maxDepth {
			return c, fmt.Errorf("pod %s/%s has more than %d owners above it through controller references (a cycle?)", pod.Namespace, pod.Name, maxDepth)
		}
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			return c, nil
		}
		gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
		if !r.Knows(gk) {
			return c, nil
		}
		obj, err := r.Get(gk, pod.Namespace, ref.Name)
		if err != nil {
			var u *Unreadable
			if errors.As(err, &u) {
				return c, err
			}
			return c, fmt.Errorf("%w: %s %s/%s: %w", ErrOwnerUnseen, gk.Kind, pod.Namespace, ref.Name, err)
		}
		if obj.GetUID() != ref.UID {
			return c, fmt.Errorf("%w: %s %s/%s is another object than the one that owns it", ErrOwnerUnseen, gk.Kind, pod.Namespace, ref.Name)
		}
		c.Links = append(c.Links, Link{Kind: gk, Obj: obj})
		ref = metav1.GetControllerOfNoCopy(obj)
	}
	return c, nil
}
