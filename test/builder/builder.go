// Package builder makes the API objects of Cardinal's tests and examples
// readable: MakeNode("n1").GPU("NVIDIA-H200", 8).Obj().
package builder

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
)

// SchedulerName is the profile Cardinal's pods opt in with.
const SchedulerName = "cardinal-scheduler"

// GPUResource is the whole-card resource of NVIDIA's device plugin.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// NodeWrapper builds a Node.
type NodeWrapper struct{ corev1.Node }

// MakeNode starts a node with 32 cpu, 256Gi memory and room for 110 pods.
func MakeNode(name string) *NodeWrapper {
	n := &NodeWrapper{corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}}
	n.Status.Allocatable = corev1.ResourceList{}
	n.Status.Capacity = corev1.ResourceList{}
	return n.Res(corev1.ResourceCPU, "32").Res(corev1.ResourceMemory, "256Gi").Res(corev1.ResourcePods, "110")
}

// Res sets the node's capacity and allocatable of one resource.
func (n *NodeWrapper) Res(name corev1.ResourceName, qty string) *NodeWrapper {
	q := resource.MustParse(qty)
	n.Status.Allocatable[name] = q
	n.Status.Capacity[name] = q
	return n
}

// Label sets a label.
func (n *NodeWrapper) Label(k, v string) *NodeWrapper {
	n.Labels[k] = v
	return n
}

// GPU gives the node count whole NVIDIA cards of product, labelled as GPU
// feature discovery labels them.
func (n *NodeWrapper) GPU(product string, count int) *NodeWrapper {
	return n.Res(GPUResource, resource.NewQuantity(int64(count), resource.DecimalSI).String()).
		Label("nvidia.com/gpu.product", product).
		Label("nvidia.com/gpu.count", resource.NewQuantity(int64(count), resource.DecimalSI).String())
}

// Obj returns the node.
func (n *NodeWrapper) Obj() *corev1.Node { return &n.Node }

// PodWrapper builds a Pod.
type PodWrapper struct{ corev1.Pod }

// MakePod starts a pod for Cardinal with one container and no requests.
func MakePod(namespace, name string) *PodWrapper {
	return &PodWrapper{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{
			SchedulerName:                 SchedulerName,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{
				Name: "main", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}},
			}},
		},
	}}
}

// SchedulerName sets spec.schedulerName.
func (p *PodWrapper) SchedulerName(name string) *PodWrapper {
	p.Spec.SchedulerName = name
	return p
}

// Req adds a request of the first container.
func (p *PodWrapper) Req(name corev1.ResourceName, qty string) *PodWrapper {
	p.Spec.Containers[0].Resources.Requests[name] = resource.MustParse(qty)
	return p
}

// GPU requests count whole cards (request and limit, as extended resources need).
func (p *PodWrapper) GPU(count int) *PodWrapper { return p.Extended(GPUResource, count) }

// Extended requests count of an extended resource, such as a MIG slice or
// an MPS share (request and limit, as extended resources need).
func (p *PodWrapper) Extended(name corev1.ResourceName, count int) *PodWrapper {
	q := *resource.NewQuantity(int64(count), resource.DecimalSI)
	p.Spec.Containers[0].Resources.Requests[name] = q
	p.Spec.Containers[0].Resources.Limits[name] = q
	return p
}

// CardName sets the card models the pod may use, in order of preference.
func (p *PodWrapper) CardName(models string) *PodWrapper {
	return p.Annotation(v1alpha1.CardNameAnnotation, models)
}

// Label sets a label.
func (p *PodWrapper) Label(k, v string) *PodWrapper {
	p.Labels[k] = v
	return p
}

// Annotation sets an annotation.
func (p *PodWrapper) Annotation(k, v string) *PodWrapper {
	p.Annotations[k] = v
	return p
}

// NodeSelector requires a node label.
func (p *PodWrapper) NodeSelector(k, v string) *PodWrapper {
	if p.Spec.NodeSelector == nil {
		p.Spec.NodeSelector = map[string]string{}
	}
	p.Spec.NodeSelector[k] = v
	return p
}

// Gate adds a scheduling gate: the pod is not scheduled until it is removed.
func (p *PodWrapper) Gate(name string) *PodWrapper {
	p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: name})
	return p
}

// ControlledBy makes the pod's controller the object of apiVersion, kind,
// name and uid, as a workload's controller does.
func (p *PodWrapper) ControlledBy(apiVersion, kind, name, uid string) *PodWrapper {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: ptr.To(true)}}
	return p
}

// SchedulingGroup joins the pod to Kubernetes' PodGroup name (SPEC §1.2).
func (p *PodWrapper) SchedulingGroup(name string) *PodWrapper {
	p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(name)}
	return p
}

// Obj returns the pod.
func (p *PodWrapper) Obj() *corev1.Pod { return &p.Pod }

// QueueWrapper builds a Queue.
type QueueWrapper struct{ v1alpha1.Queue }

// MakeQueue starts a queue of weight 1.
func MakeQueue(name string) *QueueWrapper {
	return &QueueWrapper{v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.QueueSpec{Weight: 1}}}
}

// Weight sets the weight.
func (q *QueueWrapper) Weight(w int32) *QueueWrapper {
	q.Spec.Weight = w
	return q
}

// Guarantee sets the guarantee of one resource.
func (q *QueueWrapper) Guarantee(name corev1.ResourceName, qty string) *QueueWrapper {
	if q.Spec.Guarantee == nil {
		q.Spec.Guarantee = corev1.ResourceList{}
	}
	q.Spec.Guarantee[name] = resource.MustParse(qty)
	return q
}

// Capability sets the capability of one resource.
func (q *QueueWrapper) Capability(name corev1.ResourceName, qty string) *QueueWrapper {
	if q.Spec.Capability == nil {
		q.Spec.Capability = corev1.ResourceList{}
	}
	q.Spec.Capability[name] = resource.MustParse(qty)
	return q
}

// Card adds a card model quota with its guarantee and capability.
func (q *QueueWrapper) Card(model string, guarantee, capability int32) *QueueWrapper {
	q.Spec.Cards = append(q.Spec.Cards, v1alpha1.CardQuota{Name: model, Guarantee: guarantee, Capability: ptr.To(capability)})
	return q
}

// Obj returns the queue.
func (q *QueueWrapper) Obj() *v1alpha1.Queue { return &q.Queue }
