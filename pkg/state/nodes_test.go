package state

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"cardinal.dev/cardinal/pkg/cardmodel"
	"cardinal.dev/cardinal/test/builder"
	"cardinal.dev/cardinal/test/fake"
)

// TestNodesOf: the nodes of each card model follow nodes as they come,
// change models and go; a list is made again only after its model's nodes
// changed.
func TestNodesOf(t *testing.T) {
	const rtx = "NVIDIA-GeForce-RTX-4090"
	gpu := corev1.ResourceName(builder.GPUResource)
	s := New(DefaultSettings())
	for _, n := range []*corev1.Node{
		builder.MakeNode("b").GPU(h200, 8).Obj(),
		builder.MakeNode("a").GPU(h200, 8).Obj(),
		builder.MakeNode("c").GPU(rtx, 8).Obj(),
		builder.MakeNode("cpu").Obj(),
	} {
		s.OnNode(n)
	}
	steps := []struct {
		name      string
		change    func()
		h200, rtx []string
	}{
		{name: "as added, sorted", change: func() {}, h200: []string{"a", "b"}, rtx: []string{"c"}},
		{name: "a heartbeat changes nothing", change: func() { s.OnNode(builder.MakeNode("a").GPU(h200, 8).Label("beat", "1").Obj()) },
			h200: []string{"a", "b"}, rtx: []string{"c"}},
		{name: "relabelled", change: func() { s.OnNode(builder.MakeNode("b").GPU(rtx, 8).Obj()) },
			h200: []string{"a"}, rtx: []string{"b", "c"}},
		{name: "no cards left allocatable", change: func() { s.OnNode(builder.MakeNode("c").GPU(rtx, 0).Obj()) },
			h200: []string{"a"}, rtx: []string{"b"}},
		{name: "gone", change: func() { s.OnNodeGone(builder.MakeNode("a").Obj()) },
			rtx: []string{"b"}},
	}
	for _, st := range steps {
		st.change()
		if diff := cmp.Diff(st.h200, s.NodesOf(gpu, h200)); diff != "" {
			t.Errorf("%s: H200 nodes (-want +got):\n%s", st.name, diff)
		}
		if diff := cmp.Diff(st.rtx, s.NodesOf(gpu, rtx)); diff != "" {
			t.Errorf("%s: 4090 nodes (-want +got):\n%s", st.name, diff)
		}
	}
	if got := s.NodesOf(gpu, "NVIDIA-A100"); got != nil {
		t.Errorf("nodes of a model no node has: %v", got)
	}
	if first, again := s.NodesOf(gpu, rtx), s.NodesOf(gpu, rtx); &first[0] != &again[0] {
		t.Errorf("the list was made again without a change")
	}
}

// TestNodeViews: the views of every node's models stay the same map while
// no node changes, and are made anew, with the change, after one does.
func TestNodeViews(t *testing.T) {
	s := New(DefaultSettings())
	s.OnNode(builder.MakeNode("a").GPU(h200, 8).Obj())
	first, gen := s.NodeViews()
	if again, g := s.NodeViews(); g != gen || reflect.ValueOf(again).Pointer() != reflect.ValueOf(first).Pointer() {
		t.Fatalf("views made anew without a node change")
	}
	s.OnNode(builder.MakeNode("a").GPU(h200, 8).Label("beat", "1").Obj()) // a heartbeat
	if _, g := s.NodeViews(); g != gen {
		t.Errorf("a heartbeat moved the generation")
	}
	s.OnNode(builder.MakeNode("b").GPU("NVIDIA-H800", 8).Obj())
	views, g := s.NodeViews()
	if g == gen {
		t.Fatalf("a new node kept the generation")
	}
	if got := views["b"].ModelOf(builder.GPUResource); got != "NVIDIA-H800" {
		t.Errorf("the new node's model in the views: %q", got)
	}
	if _, ok := first["b"]; ok {
		t.Errorf("the earlier views were changed")
	}
	s.OnNodeGone(builder.MakeNode("a").Obj())
	if views, _ := s.NodeViews(); len(views) != 1 {
		t.Errorf("views after a node went: %v", views)
	}

	// Node reads the latest after a change without making the views anew.
	current, _ := s.NodeViews()
	s.OnNode(builder.MakeNode("b").GPU(h200, 8).Obj())
	if n, ok := s.Node("b"); !ok || n.ModelOf(builder.GPUResource) != h200 {
		t.Errorf("Node after a relabel: %v %v", n.ModelOf(builder.GPUResource), ok)
	}
	if reflect.ValueOf(s.books.views.Load().nodes).Pointer() != reflect.ValueOf(current).Pointer() {
		t.Errorf("Node made the views anew")
	}
}

// TestRenamedMPSModel: a Queue that lists an MPS share under the name
// Cardinal gave it before SPEC §1.4 (the card's memory split across its
// replicas, rounded down) is told the new name once, whichever of the node
// and the Queue arrives first; once the Queue is edited, nothing more.
func TestRenamedMPSModel(t *testing.T) {
	const former, now = "NVIDIA-H800/mps-39g*1/2", "NVIDIA-H800/mps-80g*1/2"
	node := builder.MakeNode("n").GPU("NVIDIA-H800", 8).Res(cardmodel.MPSResource, "4").
		Label(cardmodel.MPSReplicasLabel, "2").Label(cardmodel.NVIDIAMemoryLabel, "81559").Obj()
	for _, nodeFirst := range []bool{true, false} {
		s, _ := newTestState()
		queue := builder.MakeQueue("q").Card(former, 2, 2).Obj()
		if nodeFirst {
			s.OnNode(node)
			s.OnQueue(queue)
		} else {
			s.OnQueue(queue)
			s.OnNode(node)
		}
		s.OnQueue(queue) // a status write: no second event
		fw := &fake.Framework{}
		s.Flush(fw)
		want := "Warning Queue/q RenamedCardModel: queue q lists card models under former names, so their quota is not used: " + former + " is now named " + now
		if len(fw.Events()) != 1 || !strings.HasPrefix(fw.Events()[0], want) {
			t.Errorf("node first %v: events %q, want one starting %q", nodeFirst, fw.Events(), want)
		}
		edited := builder.MakeQueue("q").Card(now, 2, 2).Obj()
		edited.Generation = 2
		s.OnQueue(edited)
		fw = &fake.Framework{}
		s.Flush(fw)
		if len(fw.Events()) != 0 {
			t.Errorf("node first %v: after the Queue was edited, events %q, want none", nodeFirst, fw.Events())
		}
	}
}
