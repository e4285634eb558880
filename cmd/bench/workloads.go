package main

import (
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
	"cardinal.dev/cardinal/test/builder"
)

// models are the card models of the card quota workloads.
var models = []string{"NVIDIA-H200", "NVIDIA-H800", "NVIDIA-GeForce-RTX-4090", "NVIDIA-GeForce-RTX-4090-D"}

// workload is one scenario, sized for a 2-core machine.
type workload struct {
	Name string
	// What it shows, for the report.
	About string
	// Nodes, each with GPUs cards of the model at index i % len(Models).
	Nodes, GPUs int
	Models      []string
	// Queues with card quota for every model; pods are spread over them.
	Queues int
	// Gangs of GangSize pods (min = GangSize), each pod using PodGPUs cards;
	// or, with Gangs 0, Pods plain pods.
	Gangs, GangSize, PodGPUs int
	Pods                     int
	// CardName, when set, is the card-name of every pod.
	CardName string
	// Contended workloads do not all fit: the run ends when binding stops,
	// and partial gangs are counted.
	Contended bool
	// Preempt fills every node with low-priority work before the scheduler
	// starts (preempt.go); the Gangs then arrive at high priority.
	Preempt bool
	// Interleaved gangs arrive while the scheduler runs and complete after
	// a while (interleaved.go): Gangs and Pods are unused. Gangs that fit
	// but have not run within Timeout are stuck.
	Interleaved bool
	Timeout     time.Duration
	// Reclaim is the reclaim storm (reclaim.go): queue A holds every card,
	// queue B arrives for its share. Gangs and Pods are unused; Timeout
	// bounds the wait for the storm to settle.
	Reclaim bool
	// Peer tells whether scheduler-plugins' scheduler can be compared on it
	// (it has no card-model quota).
	Peer bool
	// Jobs makes each gang a batch/v1 Job whose pods exist up front, made
	// as its controller makes them (no Job controller runs). With Grouped,
	// the Jobs carry cardinal.dev/min-member and there are neither
	// PodGroups nor pod-group labels: Cardinal's grouper makes the gangs
	// (SPEC §7). CardinalOnly runs it with Cardinal alone.
	Jobs, Grouped, CardinalOnly bool
	// Turns names the workloads whose results are compared with one
	// another: they take turns, run after run, as contenders do.
	Turns string
	// AffinityForDefault gives the default profile's pods their card-name
	// order as preferred node affinity on the product label, as a user of
	// the default scheduler would ask for the same preference (SPEC §4.3);
	// Cardinal's pods are those of the workload without it.
	AffinityForDefault bool
	// affinity is set for the run that gives pods that affinity.
	affinity bool
}

// workloads returns the scenarios of a mode: short finishes in a few
// minutes, full is the size the benchmark is quoted at.
func workloads(mode string) []workload {
	scale := func(full, short int) int {
		if mode == "full" {
			return full
		}
		return short
	}
	nodes := scale(1000, 250)
	out := []workload{
		{Name: "plain-pods", About: "pods without groups: the overhead of Cardinal's plugins",
			Nodes: nodes, GPUs: 8, Models: models[:1], Queues: 1, Pods: scale(5000, 1500), Peer: true},
		{Name: "gangs-of-8", About: "gangs of 8 one-card pods on 8-GPU nodes",
			Nodes: scale(375, 125), GPUs: 8, Models: models[:1], Queues: 1, Gangs: scale(375, 125), GangSize: 8, PodGPUs: 1, Peer: true},
		{Name: "gangs-of-1000", About: "3 gangs of 1000 (short: 3 of 300)",
			Nodes: nodes, GPUs: 8, Models: models[:1], Queues: 1, Gangs: 3, GangSize: scale(1000, 300), PodGPUs: 1, Peer: true},
		{Name: "contended", About: "gangs of 16 one-card pods asking for twice the GPUs there are: half the gangs fit",
			Nodes: scale(200, 64), GPUs: 8, Models: models[:1], Queues: 1, Gangs: scale(200, 64), GangSize: 16, PodGPUs: 1, Contended: true, Peer: true},
	}
	jobs := func(grouped bool) workload {
		w := workload{Name: "jobs-of-8-podgroups", About: "Jobs of 8 one-card pods with hand-written PodGroups",
			Nodes: scale(375, 125), GPUs: 8, Models: models[:1], Queues: 1, Gangs: scale(375, 125), GangSize: 8, PodGPUs: 1, Jobs: true, CardinalOnly: true, Turns: "jobs-of-8"}
		if grouped {
			w.Name, w.About, w.Grouped = "jobs-of-8-grouped", "the same Jobs annotated cardinal.dev/min-member: 8, their PodGroups made by Cardinal", true
		}
		return w
	}
	out = append(out, jobs(false), jobs(true))
	out = append(out, workload{Name: "interleaved", About: "gangs of 2-16 pods of 1-2 GPUs arrive over 30 s in random order asking for twice the GPUs, run 10 s once whole; one in 20 can never fit",
		Nodes: scale(200, 64), GPUs: 8, Models: models[:1], Queues: 1, Interleaved: true, Timeout: time.Duration(scale(5, 2)) * time.Minute, Peer: true})
	out = append(out, workload{Name: "reclaim-storm", About: "queue A holds every card with preemptible single pods and elastic gangs; queue B, of equal weight, asks for as many one-card pods and gangs of 8",
		Nodes: scale(500, 125), GPUs: 8, Models: models[:1], Queues: 2, Reclaim: true, CardinalOnly: true, Timeout: time.Duration(scale(5, 3)) * time.Minute})
	out = append(out, workload{Name: "preemption", About: "nodes full of low-priority elastic gangs and single pods; high-priority gangs of 8 one-card pods arrive",
		Nodes: nodes, GPUs: 8, Models: models[:1], Queues: 1, Gangs: scale(50, 20), GangSize: 8, PodGPUs: 1, Preempt: true})
	cards := func(q int) workload {
		return workload{
			Name: fmt.Sprintf("cards-%dq", q), About: fmt.Sprintf("one-card pods asking for any of 4 models, over %d queues with quota per model", q),
			Nodes: nodes, GPUs: 8, Models: models, Queues: q, Pods: scale(4000, 1500), PodGPUs: 1,
			CardName: models[0] + "|" + models[1] + "|" + models[2] + "|" + models[3],
		}
	}
	for _, q := range []int{20, 10, 100, 1000} {
		out = append(out, cards(q))
	}
	if mode == "full" { // short mode stays under 10 minutes
		w := cards(100)
		w.Name, w.About = "cards-100q-affinity", "cards-100q, with the default profile's pods asking for the same model preference as preferred node affinity"
		w.AffinityForDefault = true
		anyModel := cards(100)
		anyModel.Name, anyModel.About = "cards-100q-any", "cards-100q with pods that name no model: any model their queue has quota for"
		anyModel.CardName = ""
		out = append(out, w, anyModel)
	}
	return out
}

const benchNamespace = "bench"

func (w workload) nodes() []*corev1.Node {
	out := make([]*corev1.Node, 0, w.Nodes)
	for i := range w.Nodes {
		out = append(out, builder.MakeNode(fmt.Sprintf("node-%d", i)).
			Res(corev1.ResourceCPU, "64").Res(corev1.ResourceMemory, "512Gi").Res(corev1.ResourcePods, "110").
			GPU(w.Models[i%len(w.Models)], w.GPUs).Obj())
	}
	return out
}

// queues give every queue enough quota of every model for its share of the
// pods, so quota never limits: the runs measure its cost, not its effect.
// The preemption workload's high-priority pods are non-preemptible, which
// a queue admits within its guarantee: it guarantees every card.
func (w workload) queues() []*v1alpha1.Queue {
	out := make([]*v1alpha1.Queue, 0, w.Queues)
	for i := range w.Queues {
		q := builder.MakeQueue(queueName(i))
		for _, m := range w.Models {
			var guarantee int32
			if w.Preempt {
				guarantee = int32(w.Nodes * w.GPUs)
			}
			q.Card(m, guarantee, int32(w.Nodes*w.GPUs))
		}
		out = append(out, q.Obj())
	}
	return out
}

func queueName(i int) string { return fmt.Sprintf("q-%d", i) }

func (w workload) podGroups() []*schedv1alpha1.PodGroup {
	if w.Grouped {
		return nil
	}
	out := make([]*schedv1alpha1.PodGroup, 0, w.Gangs)
	for g := range w.Gangs {
		out = append(out, &schedv1alpha1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: fmt.Sprintf("gang-%d", g)},
			Spec:       schedv1alpha1.PodGroupSpec{MinMember: int32(w.GangSize)},
		})
	}
	return out
}

// modelOf is the card model of a node of the workload, by its name, as
// nodes() made it.
func (w workload) modelOf(node string) string {
	var i int
	if _, err := fmt.Sscanf(node, "node-%d", &i); err != nil {
		return ""
	}
	return w.Models[i%len(w.Models)]
}

// firstModelRoom is how many of the workload's pods the nodes of its first
// model hold.
func (w workload) firstModelRoom() int {
	nodes := (w.Nodes + len(w.Models) - 1) / len(w.Models)
	return nodes * w.GPUs / max(w.PodGPUs, 1)
}

// preferCardNames are preferred node affinity terms for the workload's
// card-name alternatives in order, weighted as CardinalCardQuota's Score
// ranks them: the first 100, the last 100/len.
func (w workload) preferCardNames() []corev1.PreferredSchedulingTerm {
	names := strings.Split(w.CardName, "|")
	out := make([]corev1.PreferredSchedulingTerm, 0, len(names))
	for i, m := range names {
		out = append(out, corev1.PreferredSchedulingTerm{
			Weight: int32(100 * (len(names) - i) / len(names)),
			Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "nvidia.com/gpu.product", Operator: corev1.NodeSelectorOpIn, Values: []string{m}},
			}},
		})
	}
	return out
}

// pods are the workload's pods; gang pods carry their gang's label.
func (w workload) pods() []*corev1.Pod {
	var out []*corev1.Pod
	add := func(name, gang string, i int) {
		p := builder.MakePod(benchNamespace, name).Req(corev1.ResourceCPU, "100m").Req(corev1.ResourceMemory, "256Mi").
			Label(v1alpha1.QueueLabel, queueName(i%w.Queues))
		if w.PodGPUs > 0 {
			p.GPU(w.PodGPUs)
		}
		if w.CardName != "" {
			p.CardName(w.CardName)
		}
		if w.affinity && w.CardName != "" {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: w.preferCardNames()}}
		}
		if gang != "" && !w.Grouped {
			p.Label(schedv1alpha1.PodGroupLabel, gang)
		}
		if w.Preempt {
			p.Spec.PriorityClassName = highClass
		}
		out = append(out, p.Obj())
	}
	if w.Gangs == 0 {
		for i := range w.Pods {
			add(fmt.Sprintf("pod-%d", i), "", i)
		}
		return out
	}
	for g := range w.Gangs {
		for i := range w.GangSize {
			add(fmt.Sprintf("gang-%d-%d", g, i), fmt.Sprintf("gang-%d", g), g)
		}
	}
	return out
}

// jobs are the workload's Jobs, one per gang, if it makes its gangs Jobs.
func (w workload) jobs() []*batchv1.Job {
	if !w.Jobs {
		return nil
	}
	out := make([]*batchv1.Job, 0, w.Gangs)
	for g := range w.Gangs {
		tmpl := builder.MakePod("", "").GPU(w.PodGPUs).Obj()
		tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
		j := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: fmt.Sprintf("gang-%d", g)},
			Spec:       batchv1.JobSpec{Parallelism: ptr.To(int32(w.GangSize)), Template: corev1.PodTemplateSpec{Spec: tmpl.Spec}},
		}
		if w.Grouped {
			j.Annotations = map[string]string{v1alpha1.MinMemberAnnotation: fmt.Sprint(w.GangSize)}
		}
		out = append(out, j)
	}
	return out
}

// jobOf is the Job a pod of the workload belongs to: its gang's.
func jobOf(pod string) string {
	i := strings.LastIndex(pod, "-")
	return pod[:i]
}
