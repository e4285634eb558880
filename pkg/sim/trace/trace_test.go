package trace

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const head = "apiVersion: sim.cardinal.dev/v1alpha1\nkind: Trace\n"

const twoNodes = head + `nodes:
- {name: h100, count: 2, model: NVIDIA-H100-80GB-HBM3, cards: 8}
queues:
- name: team-a
`

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		// wantErr are substrings of the error; none: it decodes.
		wantErr []string
	}{
		{name: "minimal", in: twoNodes + "jobs:\n- {name: j, queue: team-a, submit: 0s, duration: 1m}\n"},
		{name: "every field", in: twoNodes + `jobs:
- {name: j, queue: team-a, submit: 1m, duration: 1h30m, pods: 4, min: 2, cards: 2, resource: gpu,
   cardName: A|B, cpu: 500m, memory: 16Gi, priority: -5, preemptibility: semi-preemptible, count: 3, every: 10s}
events:
- {at: 5m, removeNode: h100-1}
- {at: 6m, addNodes: {name: extra, model: X, cards: 4}}
- {at: 7m, reslice: {node: extra-0, mig: {profile: 1g.10gb, slices: 7}}}
`},
		{name: "empty", in: "", wantErr: []string{"empty"}},
		{name: "wrong kind", in: "apiVersion: v1\nkind: Pod\n", wantErr: []string{`apiVersion "v1"`}},
		{name: "unknown field names its line", in: twoNodes + "jobs:\n- {name: j, submit: 0s, duration: 1m, gpus: 2}\n",
			wantErr: []string{"line 8", "gpus"}},
		{name: "wrong type", in: twoNodes + "jobs:\n- {name: j, submit: 0s, duration: 1m, pods: many}\n",
			wantErr: []string{"line 8", "many"}},
		{name: "bad duration", in: twoNodes + "jobs:\n- {name: j, submit: 0s, duration: 1 minute}\n",
			wantErr: []string{"line 8", "not a duration"}},
		{name: "no nodes", in: head + "jobs:\n- {name: j, submit: 0s, duration: 1m}\n", wantErr: []string{"at least one node"}},
		{name: "job line and field", in: twoNodes + "jobs:\n- {name: ok, submit: 0s, duration: 1m}\n- {name: j, submit: 0s, duration: 0s}\n",
			wantErr: []string{"line 9: jobs[1].duration"}},
		{name: "unknown queue", in: twoNodes + "jobs:\n- {name: j, queue: team-z, submit: 0s, duration: 1m}\n",
			wantErr: []string{"jobs[0].queue", "team-z"}},
		{name: "min above pods", in: twoNodes + "jobs:\n- {name: j, submit: 0s, duration: 1m, pods: 2, min: 3}\n",
			wantErr: []string{"jobs[0].min"}},
		{name: "bad name", in: twoNodes + "jobs:\n- {name: Big_Job, submit: 0s, duration: 1m}\n",
			wantErr: []string{"jobs[0].name", "DNS label"}},
		{name: "name twice", in: twoNodes + "jobs:\n- {name: j, submit: 0s, duration: 1m}\n- {name: j, submit: 0s, duration: 1m}\n",
			wantErr: []string{"jobs[1].name", "twice"}},
		{name: "bad resource", in: twoNodes + "jobs:\n- {name: j, submit: 0s, duration: 1m, resource: mps-0}\n",
			wantErr: []string{"jobs[0].resource"}},
		{name: "bad preemptibility", in: twoNodes + "jobs:\n- {name: j, submit: 0s, duration: 1m, preemptibility: sometimes}\n",
			wantErr: []string{"jobs[0].preemptibility"}},
		{name: "bad quantity", in: twoNodes + "jobs:\n- {name: j, submit: 0s, duration: 1m, cpu: lots}\n",
			wantErr: []string{"jobs[0].cpu"}},
		{name: "too many pods", in: twoNodes + "jobs:\n- {name: j, submit: 0s, duration: 1m, pods: 1000000}\n",
			wantErr: []string{"at most"}},
		{name: "cards without a model", in: head + "nodes:\n- {name: n, cards: 8}\n", wantErr: []string{"line 4: nodes[0].model"}},
		{name: "mig and mps", in: head + "nodes:\n- {name: n, model: X, cards: 8, memoryMiB: 100, mig: {profile: 1g.10gb, slices: 7}, mps: {replicas: 2}}\n",
			wantErr: []string{"nodes[0]", "sliced one way"}},
		{name: "mps without memory", in: head + "nodes:\n- {name: n, model: X, cards: 8, mps: {replicas: 2}}\n",
			wantErr: []string{"nodes[0].memoryMiB"}},
		{name: "group twice", in: head + "nodes:\n- {name: n}\n- {name: n}\n", wantErr: []string{"nodes[1].name"}},
		{name: "event of two kinds", in: twoNodes + "events:\n- {at: 1m, removeNode: h100-0, reslice: {node: h100-1}}\n",
			wantErr: []string{"line 8: events[0]", "exactly one"}},
		{name: "removing a node that is not there", in: twoNodes + "events:\n- {at: 1m, removeNode: h100-2}\n",
			wantErr: []string{"events[0].removeNode", "h100-2"}},
		{name: "removing a node twice", in: twoNodes + "events:\n- {at: 2m, removeNode: h100-0}\n- {at: 1m, removeNode: h100-0}\n",
			wantErr: []string{"events[0].removeNode"}},
		{name: "reslicing a node before it is added", in: twoNodes + "events:\n- {at: 1m, reslice: {node: late-0}}\n- {at: 2m, addNodes: {name: late}}\n",
			wantErr: []string{"events[0].reslice.node"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := Decode([]byte(tc.in))
			if len(tc.wantErr) == 0 {
				require.NoError(t, err)
				require.NotNil(t, tr)
				return
			}
			require.Error(t, err)
			for _, w := range tc.wantErr {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestExpanded(t *testing.T) {
	tr, err := Decode([]byte(twoNodes + `jobs:
- {name: late, submit: 1m, duration: 1m}
- {name: r, submit: 0s, duration: 2m, pods: 4, count: 3, every: 45s}
`))
	require.NoError(t, err)
	var got []string
	for _, j := range tr.Expanded() {
		got = append(got, j.Name+"@"+j.Submit.String())
		assert.Equal(t, j.Pods, j.Min, "min defaults to pods")
		assert.Equal(t, "gpu", j.Resource)
		assert.Equal(t, 1, j.Cards)
	}
	assert.Equal(t, []string{"r-0@0s", "r-1@45s", "late@1m0s", "r-2@1m30s"}, got)
}

func TestReadJobsCSV(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []Job
		wantErr  string
	}{
		{name: "columns in any order", in: "duration,name,submit,pods,min,priority\n2m,a,0s,4,2,-3\n1m, b ,30s,,,\n",
			want: []Job{
				{Name: "a", Submit: Duration{0}, Duration: Duration{2 * time.Minute}, Pods: 4, Min: 2, Priority: -3},
				{Name: "b", Submit: Duration{30 * time.Second}, Duration: Duration{time.Minute}},
			}},
		{name: "no header", in: "", wantErr: "line 1: no header"},
		{name: "unknown column", in: "name,submit,duration,gpus\n", wantErr: `line 1, column 4: unknown column "gpus"`},
		{name: "column twice", in: "name,submit,duration,name\n", wantErr: `column "name" twice`},
		{name: "required column", in: "name,submit\n", wantErr: `column "duration" is required`},
		{name: "bad duration", in: "name,submit,duration\na,0s,1m\nb,soon,1m\n", wantErr: "line 3, column submit"},
		{name: "bad number", in: "name,submit,duration,pods\na,0s,1m,four\n", wantErr: "line 2, column pods"},
		{name: "bad priority", in: "name,submit,duration,priority\na,0s,1m,99999999999\n", wantErr: "line 2, column priority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobs, err := ReadJobsCSV(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, jobs)
		})
	}
}

func TestLoadNamesTheCSVLine(t *testing.T) {
	dir := t.TempDir()
	write(t, dir+"/t.yaml", twoNodes+"jobsCSV: jobs.csv\n")
	write(t, dir+"/jobs.csv", "name,queue,submit,duration\nok,team-a,0s,1m\nbad,team-z,0s,1m\n")
	_, err := Load(dir + "/t.yaml")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "jobs.csv line 3: job.queue")
}

func TestResourceHelpers(t *testing.T) {
	for _, tc := range []struct {
		r       string
		valid   bool
		mps     int
		profile string
	}{
		{"", true, 0, ""}, {"gpu", true, 0, ""}, {"mig-1g.10gb", true, 0, "1g.10gb"}, {"mps-4", true, 4, ""},
		{"mig-", false, 0, ""}, {"mps-0", false, 0, ""}, {"mps-x", false, 0, ""}, {"tpu", false, 0, ""},
	} {
		assert.Equal(t, tc.valid, validResource(tc.r), tc.r)
		if tc.valid {
			assert.Equal(t, tc.mps, MPSReplicas(tc.r), tc.r)
			assert.Equal(t, tc.profile, MIGProfile(tc.r), tc.r)
		}
	}
}

// FuzzDecode: no input makes the decoder panic or hang, and what it
// accepts expands into jobs that each pass the checks.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(twoNodes + "jobs:\n- {name: j, queue: team-a, submit: 0s, duration: 1m, count: 3, every: 1s}\n"))
	f.Add([]byte(twoNodes + "events:\n- {at: 1m, removeNode: h100-1}\n"))
	f.Add([]byte(head + "nodes:\n- {name: n, model: X, cards: 8, memoryMiB: 100, mps: {replicas: 2}}\n"))
	f.Add([]byte("apiVersion: sim.cardinal.dev/v1alpha1\nkind: Trace\nnodes: [{name: a, count: -1}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Decode(data)
		if err != nil {
			return
		}
		if len(tr.Nodes) == 0 {
			t.Fatal("a trace without nodes decoded")
		}
		total := 0
		for _, j := range tr.Jobs {
			total += max(j.Count, 1)
		}
		if total > 10_000 {
			return
		}
		for _, j := range tr.Expanded() {
			if j.Pods < 1 || j.Min < 1 || j.Min > j.Pods || j.Cards < 1 || j.Duration.Duration <= 0 {
				t.Fatalf("expanded job %+v breaks the rules", j)
			}
		}
	})
}

func write(t *testing.T, path, s string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(s), 0o644))
}
