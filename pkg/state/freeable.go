package state

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"cardinal.dev/cardinal/pkg/gang"
	"cardinal.dev/cardinal/pkg/quota"
	"cardinal.dev/cardinal/pkg/workload"
)

// Freeable is what preemption inside a queue may take for a starving gang's
// min (SPEC §5.4): admission counts it as free (SPEC §3.4), so a gang in a
// queue at its capability is tried, and preempts, rather than being held
// before preemption can run.
type Freeable struct {
	// Request is what the pods preemption may take are charged, by resource.
	Request quota.Resources
	// Cards is what they are charged in cards, by model.
	Cards map[string]int64
	// Note says, for a held reason, what was counted as free and why the
	// rest was not.
	Note string
}

// FreeableInQueue is what in-queue preemption may take from queue for pod's
// gang, by the rules pkg/preemption's policy applies to the preemptor's own
// queue: elastic pods that are not non-preemptible, whatever their priority;
// pods without a gang, and whole gangs' min members, that are all
// preemptible and of lower priority than the gang; and the pods already
// being evicted for the gang. A gang that may not preempt (a member's
// preemptionPolicy is Never, or CardinalPreemption is not in the profile)
// has only the elastic pods counted, which SPEC §3.4 counts as free in any
// case.
//
// The gang's priority is its lowest member's, and any member's
// preemptionPolicy Never counts for all, so every member of a gang gets the
// same answer and admission does not hold and release it by turns; it is
// never more than preemption, which judges by the member that preempts,
// would take. It costs O(the queue's placed pods), so admission asks it
// only when the queue is short without it and could be long enough with
// all its preemptible work taken.
func (s *State) FreeableInQueue(pod *corev1.Pod, queue string) Freeable {
	out := Freeable{Request: quota.Resources{}, Cards: map[string]int64{}}
	own, _ := s.GangOf(pod)
	key := s.PreemptorKeyOf(pod)

	s.mu.RLock()
	defer s.mu.RUnlock()
	priority, never := podPriority(pod), neverPreempts(pod)
	if g := s.books.gangs[own]; own != "" && g != nil {
		for _, m := range g.members {
			priority = min(priority, m.Priority)
			never = never || neverPreempts(m.pod)
		}
	}
	mayPreempt := s.PreemptionEnabled() && !never
	switch {
	case !s.PreemptionEnabled():
		out.Note = "counting its queue's elastic pods as free; it may not preempt other work: CardinalPreemption is not enabled in the profile"
	case never:
		out.Note = "counting its queue's elastic pods as free; it may not preempt other work: a pod of it has preemptionPolicy Never"
	default:
		out.Note = fmt.Sprintf("counting as free what it may preempt in its queue: elastic pods, and preemptible pods and whole gangs of priority below %d; the rest is non-preemptible or of priority %d or more",
			priority, priority)
	}
	q := s.books.queues[queue]
	if q == nil {
		return out
	}
	take := func(e *podEntry) {
		out.Request.Add(e.Request)
		for m, n := range e.cards {
			out.Cards[m] += n
		}
	}
	// mins are the min members of other gangs, and whether all of them
	// may go: a gang goes whole or not at all (SPEC §5.3).
	type mins struct {
		pods  []*podEntry
		mayGo bool
	}
	gangs := map[gang.Key]*mins{}
	for _, e := range q.placed {
		if by, victim := s.preemptions.victimOf[e.pod.UID]; victim {
			if by == key {
				take(e) // already going, for this gang
			}
			continue // else its room is kept for another preemptor
		}
		if e.terminating {
			continue // it frees its room when it is gone, not before
		}
		if own != "" && e.Gang == own {
			continue
		}
		if e.elastic {
			if e.bookedPreemptibility() != workload.NonPreemptible {
				take(e)
			}
			continue
		}
		if !mayPreempt {
			continue
		}
		mayGo := e.bookedPreemptibility() == workload.Preemptible && e.Priority < priority
		if e.Gang == "" {
			if mayGo {
				take(e)
			}
			continue
		}
		g := gangs[e.Gang]
		if g == nil {
			g = &mins{mayGo: true}
			gangs[e.Gang] = g
		}
		g.pods = append(g.pods, e)
		g.mayGo = g.mayGo && mayGo
	}
	for _, g := range gangs {
		if g.mayGo {
			for _, e := range g.pods {
				take(e)
			}
		}
	}
	return out
}

// MinAlone is the note of an admission check that found a gang's min
// larger than its queue's capability with nothing else in the queue.
const MinAlone = "its min alone asks for more than the capability"

// AllButNonPreemptible is the note of an admission check that found a
// gang's min short even with everything but its queue's non-preemptible
// work counted as free: nothing preemption may take can make room, so
// FreeableInQueue need not be asked.
const AllButNonPreemptible = "even counting all but its queue's non-preemptible work as free"

func neverPreempts(pod *corev1.Pod) bool {
	return pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == corev1.PreemptNever
}
