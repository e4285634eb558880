package state

import (
	"strings"
	"testing"

	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/test/fake"
)

// TestMissingAPIs: with the PodGroup or Queue API missing (no CRD, no
// RBAC), the state does not wait for it to sync; a gang's pods wait with
// an event that says why, and the default queue stands in with no quota
// (SPEC §6).
func TestMissingAPIs(t *testing.T) {
	for _, tc := range []struct {
		name         string
		missing      string
		noCRD        bool // the CRD is missing, rather than the right to it
		wantGang     string
		defaultQueue bool // the default queue stands in with no quota
	}{
		{"nothing missing", "", false, "PodGroup ns/g not found", false},
		{"no PodGroup CRD", podGroupsAPI, true, "PodGroup ns/g cannot be read: no CRD", false},
		{"no Queue CRD", queuesAPI, true, "PodGroup ns/g not found", true},
		{"no right to Queues", queuesAPI, false, "PodGroup ns/g not found", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTestState()
			fw := &fake.Framework{}
			listed := map[string]bool{podGroupsAPI: tc.missing != podGroupsAPI, queuesAPI: tc.missing != queuesAPI}
			s.wiring.sources = []source{
				{api: podGroupsAPI, synced: func() bool { return listed[podGroupsAPI] }},
				{api: queuesAPI, synced: func() bool { return listed[queuesAPI] }},
				{synced: func() bool { return true }},
			}
			if tc.missing != "" {
				if s.Synced() {
					t.Fatal("synced before the API was known to be missing")
				}
				s.wiring.missing[tc.missing], s.wiring.noCRD[tc.missing] = "no CRD", tc.noCRD // as watchMissing records it
			}
			if !s.Synced() {
				t.Fatal("the state waits for an API that is missing")
			}
			st := s.AdmitGang(member("g", 0))
			if st.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(st.Message(), tc.wantGang) {
				t.Errorf("gang pod: %v, want refused with %q", st, tc.wantGang)
			}
			s.Flush(fw)
			evented := strings.Contains(strings.Join(fw.Events(), "\n"), "PodGroupsUnreadable")
			if evented != (tc.missing == podGroupsAPI) {
				t.Errorf("PodGroupsUnreadable event %v, want %v: %v", evented, tc.missing == podGroupsAPI, fw.Events())
			}
			if u := s.QuotaUsage(s.settings.DefaultQueue); u.Exists != tc.defaultQueue {
				t.Errorf("default queue exists %v, want %v", u.Exists, tc.defaultQueue)
			}
			if got := s.QueuesUnreadable() != ""; got != (tc.missing == queuesAPI) {
				t.Errorf("QueuesUnreadable %v", got)
			}
			// The API comes: it is missing no more.
			listed[podGroupsAPI], listed[queuesAPI] = true, true
			s.mu.Lock()
			s.foundAPIsLocked()
			s.mu.Unlock()
			if len(s.wiring.missing) != 0 {
				t.Errorf("still missing %v after the APIs listed", s.wiring.missing)
			}
		})
	}
}
