// Package refusal holds why Cardinal does not place a pod or a gang, as
// values: each kind of refusal is a type with its numbers as fields, a
// String for people, and a Fix that says what would let the pod run.
// Events, the PodGroup's waiting reason and `kubectl cardinal why` are all
// built from the value, so rewording a refusal changes them together and
// nothing parses a sentence back.
//
// A refusal travels through kube-scheduler inside the plugin's status
// (Status builds it), whose message is the refusal's String; a tool that
// runs the same checks reads the value back with As. Across processes (the
// running scheduler to `kubectl cardinal`) it travels as JSON in the
// PodGroup annotation cardinal.dev/waiting-refusal (Encode, Decode).
package refusal

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	fwk "k8s.io/kube-scheduler/framework"
)

// Refusal is one reason a pod or gang is not placed now.
type Refusal interface {
	error
	fmt.Stringer
	// Fix says what would let the pod or gang run, or "nothing: …" when
	// it only has to wait; "" when Cardinal cannot tell.
	Fix() string
}

// Room is a refusal for want of free room on nodes (not of quota). What
// would free room differs for elastic pods, which never preempt, so the
// sentence is left to the caller, who knows the pod's role (RoomFix).
type Room interface {
	Refusal
	// Lacking is what is short: "free nvidia.com/gpu", or "free room".
	Lacking() string
}

// Status is the framework status that carries r: its message is r's
// String, and As reads r back from it.
func Status(code fwk.Code, r Refusal) *fwk.Status {
	return fwk.NewStatus(code).WithError(r)
}

// As returns the refusal a status carries, if it carries one.
func As(st *fwk.Status) (Refusal, bool) {
	if st.IsSuccess() {
		return nil, false
	}
	var r Refusal
	if errors.As(st.AsError(), &r) {
		return r, true
	}
	return nil, false
}

// Identity is the part of r's sentence that stays the same while r holds:
// the sentence less the counts that change as another gang is placed. A
// message is told to carry r by it.
func Identity(r Refusal) string {
	if i, ok := r.(interface{ identity() string }); ok {
		return i.identity()
	}
	return r.String()
}

// RoomFix says what would let a pod run that waits for room: more room
// for any pod, and, for an elastic pod (beyond its gang's min), that it
// never preempts to get it.
func RoomFix(r Room, elastic bool) string {
	if elastic {
		return fmt.Sprintf("%s on nodes: elastic pods never preempt, they wait for running pods to end or nodes to be added", r.Lacking())
	}
	return fmt.Sprintf("%s on nodes: running pods ending, nodes added, or preemption when its queue is below its deserved share (pods that are non-preemptible are never evicted)", r.Lacking())
}

// kinds are the refusals Decode knows, by type name.
var kinds = map[string]func(json.RawMessage) (Refusal, error){}

func register[T Refusal]() {
	var zero T
	kinds[reflect.TypeOf(zero).Name()] = func(raw json.RawMessage) (Refusal, error) {
		var v T
		err := json.Unmarshal(raw, &v)
		return v, err
	}
}

type envelope struct {
	Kind  string          `json:"kind"`
	Value json.RawMessage `json:"value"`
}

// Encode writes a refusal as JSON with its kind, for an annotation.
func Encode(r Refusal) (string, error) {
	kind := reflect.TypeOf(r).Name()
	if _, ok := kinds[kind]; !ok {
		return "", fmt.Errorf("refusal kind %q is not registered", kind)
	}
	v, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	out, err := json.Marshal(envelope{Kind: kind, Value: v})
	return string(out), err
}

// Decode reads what Encode wrote.
func Decode(s string) (Refusal, error) {
	var e envelope
	if err := json.Unmarshal([]byte(s), &e); err != nil {
		return nil, fmt.Errorf("refusal: %w", err)
	}
	decode, ok := kinds[e.Kind]
	if !ok {
		return nil, fmt.Errorf("refusal: unknown kind %q", e.Kind)
	}
	return decode(e.Value)
}
