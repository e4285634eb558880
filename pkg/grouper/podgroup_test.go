package grouper

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
)

func testPlan() *Plan {
	u := job("train", 4, 0).annotated(minAnn, "3").u
	return &Plan{Unit: Unit{Kind: u.GroupVersionKind().GroupKind(), Obj: u}, Name: "train", Min: 3, Max: 4,
		MinResources: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("3")},
		Labels:       map[string]string{v1alpha1.QueueLabel: "team-a"}, CardRequest: `{"NVIDIA-H200":3}`}
}

// TestPodGroupFor: the PodGroup is owned by the workload, marked as
// Cardinal's, and carries the plan.
func TestPodGroupFor(t *testing.T) {
	pg := PodGroupFor(testPlan(), "ns")
	want := &schedv1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ns",
			Labels:          map[string]string{v1alpha1.QueueLabel: "team-a"},
			Annotations:     map[string]string{v1alpha1.GroupedByAnnotation: "Job/train", v1alpha1.CardRequestAnnotation: `{"NVIDIA-H200":3}`},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "Job-train"}}},
		Spec: schedv1alpha1.PodGroupSpec{MinMember: 3, MinResources: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("3")}},
	}
	if diff := cmp.Diff(want, pg); diff != "" {
		t.Errorf("PodGroupFor (-want, +got):\n%s", diff)
	}
}

// TestDecide: Cardinal changes only its own PodGroups, only what it
// manages, and replaces one a gone workload of the same name left.
func TestDecide(t *testing.T) {
	want := PodGroupFor(testPlan(), "ns")
	lives := func(metav1.OwnerReference) (bool, error) { return true, nil }
	gone := func(metav1.OwnerReference) (bool, error) { return false, nil }
	unsure := func(metav1.OwnerReference) (bool, error) { return false, errNotYet }
	mod := func(f func(*schedv1alpha1.PodGroup)) *schedv1alpha1.PodGroup {
		pg := want.DeepCopy()
		f(pg)
		return pg
	}
	tests := []struct {
		name    string
		have    *schedv1alpha1.PodGroup
		lives   func(metav1.OwnerReference) (bool, error)
		want    Action
		wantErr bool
	}{
		{"none yet", nil, lives, Create, false},
		{"as planned", want.DeepCopy(), lives, Keep, false},
		{"the status writers' annotations and a user's label are not Cardinal's to mend", mod(func(pg *schedv1alpha1.PodGroup) {
			pg.Annotations["cardinal.dev/scheduled"] = "2"
			pg.Labels["team"] = "x"
		}), lives, Keep, false},
		{"min changed", mod(func(pg *schedv1alpha1.PodGroup) { pg.Spec.MinMember = 2 }), lives, Update, false},
		{"queue relabelled", mod(func(pg *schedv1alpha1.PodGroup) { pg.Labels[v1alpha1.QueueLabel] = "team-b" }), lives, Update, false},
		{"card request gone", mod(func(pg *schedv1alpha1.PodGroup) { delete(pg.Annotations, v1alpha1.CardRequestAnnotation) }), lives, Update, false},
		{"a user's PodGroup of that name", mod(func(pg *schedv1alpha1.PodGroup) { delete(pg.Annotations, v1alpha1.GroupedByAnnotation) }), lives, Conflict, false},
		{"Cardinal's, for a workload of that name that is gone", mod(func(pg *schedv1alpha1.PodGroup) { pg.OwnerReferences[0].UID = "old" }), gone, Replace, false},
		// Just after a start, before the owner's kind is listed: never
		// replaced on a guess (its pods may be running).
		{"Cardinal's, for a workload not read yet", mod(func(pg *schedv1alpha1.PodGroup) { pg.OwnerReferences[0].UID = "old" }), unsure, Keep, true},
		{"Cardinal's, for another workload still there", mod(func(pg *schedv1alpha1.PodGroup) {
			pg.OwnerReferences[0].UID = "other"
			pg.Annotations[v1alpha1.GroupedByAnnotation] = "JobSet/train"
		}), lives, Conflict, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decide(tc.have, want, tc.lives)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("Decide = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestMended keeps what Cardinal does not manage.
func TestMended(t *testing.T) {
	want := PodGroupFor(testPlan(), "ns")
	have := want.DeepCopy()
	have.Spec.MinMember = 1
	have.Spec.ScheduleTimeoutSeconds = new(int32)
	have.Labels["team"] = "x"
	have.Labels[v1alpha1.PreemptibilityLabel] = "non-preemptible"
	have.Annotations["cardinal.dev/waiting-reason"] = "waiting"
	got := Mended(have, want)
	if got.Spec.MinMember != 3 || got.Spec.ScheduleTimeoutSeconds == nil || got.Labels["team"] != "x" ||
		got.Annotations["cardinal.dev/waiting-reason"] != "waiting" {
		t.Errorf("Mended lost or missed something: %+v", got)
	}
	if _, ok := got.Labels[v1alpha1.PreemptibilityLabel]; ok {
		t.Errorf("a preemptibility label the plan does not carry was kept: %v", got.Labels)
	}
}

// TestMinResources: per resource, the least the min pods can ask for.
func TestMinResources(t *testing.T) {
	tests := []struct {
		name      string
		templates []podTemplate
		min       int32
		want      map[string]string
	}{
		{"all alike", []podTemplate{{tmpl(2, 1), 4}}, 3, map[string]string{"cpu": "6", "nvidia.com/gpu": "3"}},
		{"a cpu master and gpu workers", []podTemplate{{tmpl(4, 0), 1}, {tmpl(4, 1), 3}}, 3, map[string]string{"cpu": "12", "nvidia.com/gpu": "2"}},
		{"the smallest first", []podTemplate{{tmpl(8, 2), 2}, {tmpl(1, 1), 2}}, 3, map[string]string{"cpu": "10", "nvidia.com/gpu": "4"}},
		{"min covered by pods without gpus", []podTemplate{{tmpl(1, 0), 3}, {tmpl(1, 1), 3}}, 3, map[string]string{"cpu": "3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]string{}
			for k, q := range minResources(tc.templates, tc.min) {
				got[string(k)] = q.String()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("minResources (-want, +got):\n%s", diff)
			}
		})
	}
}
