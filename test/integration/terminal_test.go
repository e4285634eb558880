package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"cardinal.dev/cardinal/pkg/inspect"
	"cardinal.dev/cardinal/test/builder"
)

const termWidth = 80

// inTerminal runs bin/kubectl-cardinal with args in a real terminal of
// termWidth columns and returns what the terminal shows: in tmux when the
// machine has it, else in a pseudo-terminal of the test's own.
func inTerminal(t *testing.T, args ...string) []string {
	t.Helper()
	plugin := filepath.Join(env.root, "bin", "kubectl-cardinal")
	if tmux, err := exec.LookPath("tmux"); err == nil {
		return inTmux(t, tmux, plugin, args)
	}
	return inPty(t, plugin, args)
}

func inTmux(t *testing.T, tmux, plugin string, args []string) []string {
	t.Helper()
	socket := fmt.Sprintf("cardinal-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	const end = "__END_OF_OUTPUT__"
	script := fmt.Sprintf("%s %s; echo %s; sleep 60", plugin, strings.Join(args, " "), end)
	if out, err := exec.Command(tmux, "-L", socket, "-f", "/dev/null", "new-session", "-d", "-x", fmt.Sprint(termWidth), "-y", "50", "-s", "why", script).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	defer exec.Command(tmux, "-L", socket, "kill-server").Run() //nolint:errcheck
	// What the pane shows once the command's last line has reached it.
	var shown string
	err := wait.PollUntilContextTimeout(context.Background(), poll, waitTimeout, true, func(context.Context) (bool, error) {
		out, err := exec.Command(tmux, "-L", socket, "capture-pane", "-p", "-J", "-t", "why").Output()
		if err != nil {
			return false, err
		}
		var done bool
		shown, _, done = strings.Cut(string(out), end+"\n")
		return done, nil
	})
	if err != nil {
		t.Fatalf("kubectl cardinal did not finish in tmux: %v; the pane shows:\n%s", err, shown)
	}
	return strings.Split(strings.TrimRight(shown, "\n"), "\n")
}

func inPty(t *testing.T, plugin string, args []string) []string {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 50, Col: termWidth}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(plugin, args...)
	cmd.Stdout, cmd.Stderr = slave, slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(&out, master); close(copied) }()
	err = cmd.Wait()
	slave.Close()
	select {
	case <-copied:
	case <-time.After(5 * time.Second):
	}
	if err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	return strings.Split(strings.TrimRight(strings.ReplaceAll(out.String(), "\r\n", "\n"), "\n"), "\n")
}

// TestKubectlCardinalInATerminal: in an 80-column terminal, why wraps its
// sentences under their labels without losing a word, and the queues
// table's columns line up (a table wider than the terminal is not wrapped
// by the plugin, as kubectl get's are not).
func TestKubectlCardinalInATerminal(t *testing.T) {
	createNodes(t, gpuNodes("term", 1, 4)...)
	startScheduler(t)
	ns := createNamespaceInQueue(t, "term", "term")
	createQueue(t, builder.MakeQueue(ns).Card("NVIDIA-H200", 0, 1).Obj())
	createPodGroup(t, ns, "g", 2)
	createPods(t, gangPods(ns, "g", 2, 1)...)
	waitWaitingReason(t, ns, "g", "is held")
	kubeconfig, err := env.cp.WriteKubeconfig("terminal.kubeconfig", false)
	if err != nil {
		t.Fatal(err)
	}
	a := why(t, "podgroup", ns, "g")
	before := versions(t, ns)

	lines := inTerminal(t, "--kubeconfig", kubeconfig, "why", "podgroup/g", "-n", ns)
	t.Logf("kubectl cardinal why podgroup/g in %d columns:\n%s", termWidth, strings.Join(lines, "\n"))
	if want := "podgroup term/g: Waiting"; lines[0] != want {
		t.Errorf("first line %q, want %q", lines[0], want)
	}
	sections := map[string][]string{}
	label := ""
	for _, l := range lines[1:] {
		if len(l) > termWidth {
			t.Errorf("line of %d columns in a terminal of %d: %q", len(l), termWidth, l)
		}
		switch {
		case strings.HasPrefix(l, "Why:    "), strings.HasPrefix(l, "To run: "), strings.HasPrefix(l, "Since:  "):
			label = l[:8]
			sections[label] = append(sections[label], l[8:])
		case strings.HasPrefix(l, strings.Repeat(" ", 8)) && label != "":
			sections[label] = append(sections[label], l[8:])
		default:
			t.Errorf("line %q is neither a labelled line nor indented under one", l)
		}
	}
	if got := strings.Join(sections["Why:    "], " "); got != a.Why {
		t.Errorf("wrapped why reads %q, want %q", got, a.Why)
	}
	if got := strings.Join(sections["To run: "], " "); got != a.Fix {
		t.Errorf("wrapped fix reads %q, want %q", got, a.Fix)
	}
	if len(sections["Why:    "]) < 2 {
		t.Errorf("a why of %d characters was not wrapped at %d columns", len(a.Why), termWidth)
	}

	table := inTerminal(t, "--kubeconfig", kubeconfig, "queues")
	t.Logf("kubectl cardinal queues:\n%s", strings.Join(table, "\n"))
	header := table[0]
	for _, col := range []string{"QUEUE", "RESOURCE", "GUARANTEE", "DESERVED", "ALLOCATED", "CAPABILITY", "PENDING", "BORROWED"} {
		at := strings.Index(header, col)
		if at < 0 {
			t.Fatalf("header %q has no %s", header, col)
		}
		for _, row := range table[1:] {
			if at > 0 && (len(row) <= at || row[at-1] != ' ' || row[at] == ' ') {
				t.Errorf("column %s (at %d) does not line up in row %q", col, at, row)
			}
		}
	}

	// gangs and queues for scripts, and shell completion.
	plugin := filepath.Join(env.root, "bin", "kubectl-cardinal")
	out, err := exec.Command(plugin, "--kubeconfig", kubeconfig, "gangs", "-n", ns, "-o", "json").Output()
	if err != nil {
		t.Fatalf("gangs -o json: %v", err)
	}
	var gangs []inspect.GangRow
	if err := json.Unmarshal(out, &gangs); err != nil {
		t.Fatalf("gangs -o json: %v: %s", err, out)
	}
	wantGang := inspect.GangRow{Namespace: ns, Name: "g", Queue: ns, Min: 2, Pods: 2, Phase: "Pending", Waiting: a.Why}
	if len(gangs) != 1 || gangs[0] != wantGang {
		t.Errorf("gangs -o json: %+v, want [%+v]", gangs, wantGang)
	}
	out, err = exec.Command(plugin, "--kubeconfig", kubeconfig, "queues", "-o", "json").Output()
	if err != nil {
		t.Fatalf("queues -o json: %v", err)
	}
	var queues []inspect.QueueRow
	if err := json.Unmarshal(out, &queues); err != nil {
		t.Fatalf("queues -o json: %v: %s", err, out)
	}
	found := false
	for _, q := range queues {
		if q.Queue == ns && q.Card && q.Resource == "NVIDIA-H200" {
			found = true
			if q.Capability != "1" || q.Allocated != "0" {
				t.Errorf("queues -o json for %s's NVIDIA-H200: %+v, want capability 1, allocated 0", ns, q)
			}
		}
	}
	if !found {
		t.Errorf("queues -o json has no row for %s's NVIDIA-H200: %s", ns, out)
	}
	if out, err := exec.Command(plugin, "completion", "bash").Output(); err != nil || !strings.Contains(string(out), "__start_kubectl") {
		t.Errorf("completion bash: %v, %.200s", err, out)
	}
	// The plugin only reads: the gang it explained, its pods and its
	// queue are as they were, and no event names it as their reporter.
	if after := versions(t, ns); !maps.Equal(before, after) {
		t.Errorf("objects changed while kubectl cardinal ran: before %v, after %v", before, after)
	}
	evs, err := env.kube.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.ReportingController != "" && !strings.Contains(e.ReportingController, "scheduler") {
			t.Errorf("event by %s: %s %s", e.ReportingController, e.Reason, e.Note)
		}
	}
}

// versions are the resource versions of the PodGroups, pods and queue of ns.
func versions(t *testing.T, ns string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	pgs, err := podGroups().SchedulingV1alpha1().PodGroups(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pg := range pgs.Items {
		out["podgroup/"+pg.Name] = pg.ResourceVersion
	}
	pods, err := env.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		out["pod/"+p.Name] = p.ResourceVersion
	}
	q, err := env.cardinal.SchedulingV1alpha1().Queues().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out["queue/"+ns] = q.ResourceVersion
	return out
}
