package cardquota

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"cardinal.dev/cardinal/pkg/cardmodel"
)

// PreScore skips scoring for pods without alternatives to prefer among,
// and for cycles PreFilter narrowed to the nodes of one model.
// When the pod asks only for whole cards, it notes the node labels that
// name their models, so Score reads the model off the node itself rather
// than looking the node up in the state for every node scored.
func (p *Plugin) PreScore(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	s, err := getState(cs)
	if err != nil || len(s.names) < 2 || s.narrowedTo != "" {
		// Nothing to prefer: one alternative, or nodes of one model only.
		return fwk.NewStatus(fwk.Skip)
	}
	labels := make([]string, 0, len(s.requests))
	for _, rq := range s.requests {
		key, ok := cardmodel.ProductLabel(rq.resource)
		if !ok {
			return nil
		}
		labels = append(labels, key)
	}
	s.productLabels = labels
	return nil
}

// Score prefers earlier card-name alternatives: the first gets
// MaxNodeScore, the last MaxNodeScore/len (SPEC §4.3). Filter has already
// kept only nodes whose model is listed and has quota, so a pod falls back
// to B exactly when A has no quota or no room.
func (p *Plugin) Score(_ context.Context, cs fwk.CycleState, _ *corev1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s, err := getState(cs)
	if err != nil {
		return 0, fwk.AsStatus(err)
	}
	if s.productLabels != nil {
		labels := nodeInfo.Node().Labels
		var best int64
		for _, key := range s.productLabels {
			best = max(best, s.score(labels[key]))
		}
		return best, nil
	}
	node, _ := p.nodeOf(s, nodeInfo.Node().Name)
	var best int64
	for _, c := range node.Cards {
		if s.requests.of(c.Resource) == 0 {
			continue
		}
		best = max(best, s.score(c.Model))
	}
	return best, nil
}

// score is a model's score: the first alternative MaxNodeScore, the last
// MaxNodeScore/len, a model not listed 0.
func (s *stateData) score(model string) int64 {
	r := s.rank(model)
	if r < 0 {
		return 0
	}
	return fwk.MaxNodeScore * int64(len(s.names)-r) / int64(len(s.names))
}

// ScoreExtensions returns nil: scores are already in range.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return nil }
