package cardmodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
)

// Request is one entry of a gang's card-request: Count cards of any of
// Models, in order of preference.
type Request struct {
	Models []string
	Count  int64
}

// ParseRequest reads a PodGroup's card-request annotation (SPEC §1.2): a
// JSON object of model, or "A|B" alternatives, to whole cards, e.g.
// {"NVIDIA-H200":2}. Entries come back sorted by key; entries of 0 are dropped.
func ParseRequest(s string) ([]Request, error) {
	counts, err := parseCounts(s)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]Request, 0, len(keys))
	for _, k := range keys {
		models, err := ParseNames(k)
		if err != nil {
			return nil, err
		}
		if err := SameResource(models); err != nil {
			return nil, err
		}
		if counts[k] > 0 {
			out = append(out, Request{Models: models, Count: counts[k]})
		}
	}
	return out, nil
}

// parseCounts reads a JSON object of name to a whole, non-negative count.
func parseCounts(s string) (map[string]int64, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("want a JSON object of card model to whole cards, e.g. {\"NVIDIA-H200\":2}: %v", err)
	}
	if raw == nil {
		return nil, fmt.Errorf("want a JSON object of card model to whole cards, e.g. {\"NVIDIA-H200\":2}, got null")
	}
	if dec.More() {
		return nil, fmt.Errorf("want one JSON object of card model to whole cards, got more after it")
	}
	out := make(map[string]int64, len(raw))
	for k, v := range raw {
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || n < 0 || n > math.MaxInt32 {
			return nil, fmt.Errorf("%q: %s is not a whole number of cards between 0 and %d", k, v, math.MaxInt32)
		}
		out[k] = n
	}
	return out, nil
}

// Quota is a queue's quota for one card model, in cards.
type Quota struct {
	Guarantee, Capability int64
}

// QueueCards is a queue's card quota by model: spec.cards, and for models it
// does not list, the volcano.sh/card.quota annotation, whose counts mean
// guarantee = capability (SPEC §1.3). An invalid annotation is an error
// that says how to fix it; spec.cards still comes back.
func QueueCards(q *v1alpha1.Queue) (map[string]Quota, error) {
	out := make(map[string]Quota, len(q.Spec.Cards))
	for _, c := range q.Spec.Cards {
		out[c.Name] = Quota{Guarantee: int64(c.Guarantee), Capability: int64(c.EffectiveCapability())}
	}
	s, ok := q.Annotations[v1alpha1.VolcanoCardQuotaAnnotation]
	if !ok {
		return out, nil
	}
	counts, err := parseCounts(s)
	if err != nil {
		return out, fmt.Errorf("queue %s: annotation %s is ignored: %v", q.Name, v1alpha1.VolcanoCardQuotaAnnotation, err)
	}
	for model := range counts {
		names, err := ParseNames(model)
		if err == nil && (len(names) != 1 || names[0] != model) {
			err = fmt.Errorf("%q is not one card model: quota is kept per model, without alternatives or spaces", model)
		}
		if err != nil {
			return out, fmt.Errorf("queue %s: annotation %s is ignored: %v", q.Name, v1alpha1.VolcanoCardQuotaAnnotation, err)
		}
	}
	for model, n := range counts {
		if _, listed := out[model]; !listed {
			out[model] = Quota{Guarantee: n, Capability: n}
		}
	}
	return out, nil
}
