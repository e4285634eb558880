package grouper

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestGrouping(t *testing.T) {
	req := func(name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
	}
	type step struct {
		start, done string
		req         string
		want        bool                // start's answer
		asked       []reconcile.Request // done's answer
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"one pod rules alone", []step{
			{start: "job", req: "p0", want: true},
			{done: "job"},
		}},
		{"siblings meanwhile are asked for again once it is done", []step{
			{start: "job", req: "p0", want: true},
			{start: "job", req: "p1"},
			{start: "job", req: "p2"},
			{done: "job", asked: []reconcile.Request{req("p1"), req("p2")}},
			{start: "job", req: "p1", want: true},
			{done: "job"},
		}},
		{"another controller's pods are not held", []step{
			{start: "job-a", req: "a0", want: true},
			{start: "job-b", req: "b0", want: true},
			{done: "job-b"},
			{done: "job-a"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var g grouping
			for i, s := range tt.steps {
				if s.start != "" {
					assert.Equal(t, s.want, g.start(s.start, req(s.req)), "step %d", i)
					continue
				}
				assert.Equal(t, s.asked, g.done(s.done), "step %d", i)
			}
			assert.Empty(t, g.under, "nothing left held")
		})
	}
}
