package state

import (
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/quota"
)

// books are what is charged where: every pod of Cardinal's profile by UID,
// the gangs they form, the queues they are charged to and the nodes they
// are placed on, with the indexes that find them again. A pod's charge is
// its queue's business (queueEntry.charge), a gang's ranks its own
// (gangEntry); the books keep the maps and the indexes consistent.
type books struct {
	pods       map[types.UID]*podEntry
	gangs      map[gang.Key]*gangEntry
	queues     map[string]*queueEntry
	nodes      map[string]*nodeEntry
	namespaces map[string]map[string]string // namespace -> labels
	// inNamespace indexes pods by namespace (a relabelled namespace moves them).
	inNamespace index[string, *podEntry]
	// podsOn indexes placed pods by node (a relabelled node recharges them).
	podsOn index[string, *podEntry]
	// podsByController indexes pods by their namespace and their
	// controller's UID (controllerKey): an owner's preemptibility label
	// reclassifies them (owners.go), and the grouper rules on a workload's
	// pods together. The namespace keeps pods of another namespace that
	// name the UID (it is not secret) out of a workload's walks.
	podsByController index[string, *podEntry]
	// claimUsers indexes pending pods by the ResourceClaims they name, as
	// namespace/name (resourceclaims.go).
	claimUsers index[string, *podEntry]
	// foreign is the gang of each pod of another scheduler that joins one.
	foreign map[types.UID]gang.Key
	// unverified are pods booked from their placed-as annotation before the
	// state synced: whether their namespace may use the queue it names is
	// judged once namespaces and Queues are all known (placedas.go).
	unverified map[types.UID]*podEntry
	// evicted are placed pods a scheduler's preemption is deleting
	// (EvictedByScheduler): after a restart, the victims of reclaims this
	// process no longer remembers (InFlight).
	evicted map[types.UID]*podEntry
	// left are the placed pods lately gone, oldest first (leaving.go).
	left []Leaving

	// cardResources are resources some node carries as cards beyond the well-known ones.
	cardResources map[corev1.ResourceName]bool
	// capacity is the sum of the nodes' allocatable; cardCapacity the cards of each model.
	capacity     quota.Resources
	cardCapacity map[string]int64
	// nodesByCard are, per card resource, the nodes that carry it under
	// each model (model "" for nodes whose cards of it have no product
	// label), so PreFilter can tell when every node would pass card Filter
	// and which nodes to narrow a pod to; modelLists the same as sorted
	// lists, made when first read after a change (nodes.go).
	nodesByCard map[corev1.ResourceName]map[string]map[string]struct{}
	modelLists  map[cardKey][]string
	// carriers counts, per resource, the nodes that have it allocatable.
	carriers map[corev1.ResourceName]int
	// renamedModels maps a card model's former name to its name now (MPS
	// shares, SPEC §1.4), as nodes show them, to tell Queues that still list
	// a former name.
	renamedModels map[string]string
	deserved      deservedCache

	// nodesGen counts changes to the set of nodes and their models, so a
	// cycle can tell whether what it read of them still holds. Read
	// without the lock.
	nodesGen atomic.Uint64
	// views is every node's card models at one nodes generation, made
	// anew on the first read after a change (NodeViews). Read without the lock.
	views atomic.Pointer[nodeViews]
	// groupedAs is the gang of each pending pod the grouper put in its
	// workload's gang without a label (grouping.go), read without the
	// lock (GangOf).
	groupedAs sync.Map // types.UID -> gang.Key
	// gangAdmitted is when each gang was first admissible (GangAdmitted).
	gangAdmitted sync.Map // gang.Key -> time.Time
	// gangCreated is when each gang's PodGroup was first seen created, for
	// the queue order: read without the lock, set once per gang.
	gangCreated sync.Map
}

func newBooks() books {
	return books{
		pods:             map[types.UID]*podEntry{},
		gangs:            map[gang.Key]*gangEntry{},
		queues:           map[string]*queueEntry{},
		nodes:            map[string]*nodeEntry{},
		namespaces:       map[string]map[string]string{},
		inNamespace:      index[string, *podEntry]{},
		podsOn:           index[string, *podEntry]{},
		podsByController: index[string, *podEntry]{},
		claimUsers:       index[string, *podEntry]{},
		foreign:          map[types.UID]gang.Key{},
		unverified:       map[types.UID]*podEntry{},
		evicted:          map[types.UID]*podEntry{},
		cardResources:    map[corev1.ResourceName]bool{},
		capacity:         quota.Resources{},
		cardCapacity:     map[string]int64{},
		nodesByCard:      map[corev1.ResourceName]map[string]map[string]struct{}{},
		modelLists:       map[cardKey][]string{},
		carriers:         map[corev1.ResourceName]int{},
		renamedModels:    map[string]string{},
	}
}

// index files values by key, each by its UID; a key with none is dropped.
type index[K comparable, V any] map[K]map[types.UID]V

func (x index[K, V]) add(k K, uid types.UID, v V) {
	m := x[k]
	if m == nil {
		m = map[types.UID]V{}
		x[k] = m
	}
	m[uid] = v
}

func (x index[K, V]) remove(k K, uid types.UID) {
	if m := x[k]; m != nil {
		delete(m, uid)
		if len(m) == 0 {
			delete(x, k)
		}
	}
}

func (x index[K, V]) has(k K, uid types.UID) bool {
	_, ok := x[k][uid]
	return ok
}

// take removes and returns the values filed under k.
func (x index[K, V]) take(k K) map[types.UID]V {
	m := x[k]
	delete(x, k)
	return m
}

// add records a new pod's entry and indexes it by namespace and controller.
func (b *books) add(e *podEntry) {
	b.pods[e.pod.UID] = e
	b.inNamespace.add(e.pod.Namespace, e.pod.UID, e)
	b.fileController(e)
	b.fileClaims(e)
}

// setPod replaces the pod of a recorded entry by its newer copy, and files
// it under the controller that copy names.
func (b *books) setPod(e *podEntry, pod *corev1.Pod) {
	e.pod = pod
	b.fileController(e)
	b.fileClaims(e)
}

// fileController indexes a pod under its controller as its owner
// references name it now, out of where it was filed before (e.controller):
// owner references change (a controller releases or adopts a pod), and an
// entry left under the old controller would outlive the pod.
func (b *books) fileController(e *podEntry) {
	key := ""
	if uid := controllerUID(e); uid != "" {
		key = controllerKey(e.pod.Namespace, uid)
	}
	if key == e.controller {
		return
	}
	b.podsByController.remove(e.controller, e.pod.UID)
	e.controller = key
	if key != "" {
		b.podsByController.add(key, e.pod.UID, e)
	}
}

// remove forgets a pod's entry and its indexes; a placed pod leaves its
// node's first (unplace).
func (b *books) remove(e *podEntry) {
	uid := e.pod.UID
	delete(b.pods, uid)
	delete(b.unverified, uid)
	b.inNamespace.remove(e.pod.Namespace, uid)
	b.podsByController.remove(e.controller, uid)
	b.unfileClaims(e)
}
