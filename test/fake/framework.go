// Package fake holds the framework double Cardinal's unit tests share: it
// records what Cardinal asks of kube-scheduler. The scheduling state for
// tests is test/statetest's.
package fake

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/test/builder"
)

// Framework records what Cardinal asks of kube-scheduler's framework: the
// pods it wakes, the events it records, the nominations it clears, and
// what it does to pods waiting at Permit. It serves as the framework
// handle for the parts Cardinal's plugins use; anything else panics (the
// embedded Handle is nil). The zero value is ready to use; a test that
// needs another behaviour (a lock taken in Activate, say) embeds it and
// overrides that method.
type Framework struct {
	fwk.Handle
	// Client is what ClientSet returns; an empty fake clientset when nil.
	Client kubernetes.Interface

	mu        sync.Mutex
	activated []string
	events    []string
	cleared   []string
	waiting   map[types.UID]*WaitingPod
}

// ProfileName is Cardinal's test profile (builder.SchedulerName).
func (f *Framework) ProfileName() string { return builder.SchedulerName }

// Activate records the pods woken, as namespace/name, kept sorted.
func (f *Framework) Activate(_ klog.Logger, pods map[string]*corev1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range pods {
		f.activated = append(f.activated, k)
	}
	sort.Strings(f.activated)
}

// Activated returns the pods woken so far.
func (f *Framework) Activated() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.activated)
}

// TakeActivated returns the pods woken since the last call, and forgets them.
func (f *Framework) TakeActivated() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.activated
	f.activated = nil
	return out
}

// EventRecorder records events as "Type Kind/name Reason: note".
func (f *Framework) EventRecorder() events.EventRecorderLogger { return &recorder{f: f} }

// Events returns the events recorded so far.
func (f *Framework) Events() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.events)
}

type recorder struct {
	events.EventRecorderLogger
	f *Framework
}

func (r *recorder) Eventf(regarding, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	ref := regarding.(*corev1.ObjectReference)
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	r.f.events = append(r.f.events, fmt.Sprintf("%s %s/%s %s: %s", eventtype, ref.Kind, ref.Name, reason, fmt.Sprintf(note, args...)))
}

// DeleteNominatedPodIfExists records a nomination cleared, by pod name.
func (f *Framework) DeleteNominatedPodIfExists(pod *corev1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cleared = append(f.cleared, pod.Name)
}

// Cleared returns the pods whose nominations were cleared, by name.
func (f *Framework) Cleared() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.cleared)
}

// ClientSet returns Client.
func (f *Framework) ClientSet() kubernetes.Interface {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Client == nil {
		f.Client = kubefake.NewClientset()
	}
	return f.Client
}

// Wait puts pod at Permit, waiting.
func (f *Framework) Wait(pod *corev1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.waiting == nil {
		f.waiting = map[types.UID]*WaitingPod{}
	}
	f.waiting[pod.UID] = &WaitingPod{pod: pod}
}

// WaitingPod is pod as it waits at Permit; nil if it never waited.
func (f *Framework) WaitingPod(pod *corev1.Pod) *WaitingPod {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.waiting[pod.UID]
}

// GetWaitingPod returns the pod waiting at Permit with uid, or nil.
func (f *Framework) GetWaitingPod(uid types.UID) fwk.WaitingPod {
	f.mu.Lock()
	defer f.mu.Unlock()
	if wp, ok := f.waiting[uid]; ok {
		return wp
	}
	return nil
}

// IterateOverWaitingPods calls fn for every pod waiting at Permit.
func (f *Framework) IterateOverWaitingPods(fn func(fwk.WaitingPod)) {
	f.mu.Lock()
	wps := make([]*WaitingPod, 0, len(f.waiting))
	for _, wp := range f.waiting {
		wps = append(wps, wp)
	}
	f.mu.Unlock()
	for _, wp := range wps {
		fn(wp)
	}
}

// WaitingPod is a pod waiting at Permit: it records whether it was let
// through or turned away, and why.
type WaitingPod struct {
	pod      *corev1.Pod
	mu       sync.Mutex
	allowed  bool
	rejected string
}

func (w *WaitingPod) GetPod() *corev1.Pod         { return w.pod }
func (w *WaitingPod) GetPendingPlugins() []string { return nil }
func (w *WaitingPod) Allow(string)                { w.mu.Lock(); w.allowed = true; w.mu.Unlock() }
func (w *WaitingPod) Reject(_, msg string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rejected = msg
	return true
}
func (w *WaitingPod) Preempt(plugin, msg string) bool { return w.Reject(plugin, msg) }

// Allowed tells whether the pod was let through Permit.
func (w *WaitingPod) Allowed() bool { w.mu.Lock(); defer w.mu.Unlock(); return w.allowed }

// Rejected is why the pod was turned away at Permit; "" if it was not.
func (w *WaitingPod) Rejected() string { w.mu.Lock(); defer w.mu.Unlock(); return w.rejected }
