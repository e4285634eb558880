// Package coscheduling is Cardinal's gang plugin, CardinalGang: all-or-nothing
// gangs with elastic [min, max] jobs (SPEC §1.2, §2). It reads
// kubernetes-sigs/scheduler-plugins PodGroups unchanged.
//
// The plugin is a thin adapter over pkg/state, which keeps every gang's
// members, placed pods and attempts, and decides with one lock:
//
//  1. PreEnqueue keeps a gang's pods out of the queue until its PodGroup
//     exists and minMember pods do, so a gang never starts what it cannot
//     possibly finish; a gang split across queues or schedulers is held
//     with an event that says what to fix.
//  2. Less keeps a gang's pods together in the queue (priority, then the
//     PodGroup's age, then the gang, then rank), so a gang is placed in one
//     run of scheduling cycles rather than interleaved with others.
//  3. At most one gang is assembled at a time: while one has members waiting
//     at Permit below its min, min members of other gangs are parked at
//     PreFilter and the first of them in queue order is woken when it
//     completes or gives up. Only one gang can hold a partial reservation,
//     so no wait cycle can form (SPEC §2.3).
//  4. A gang that cannot complete gives back every reservation at once and
//     backs off for podGroupBackoffSeconds: a min member that fits nowhere
//     (PostFilter), a Permit timeout or failed bind (Unreserve), a gang
//     whose missing min does not fit the free resources (PreFilter). A gang
//     that loses members or its PodGroup gives back at once too, without a
//     backoff; one whose lowered minMember is met binds at once.
//
// Elastic pods (placed beyond min, by the rank rule of pkg/gang) pass
// Permit at once, never preempt (PostFilter ends the chain with
// UnschedulableAndUnresolvable), and wait while another gang that is
// neither backing off nor held still needs its min (SPEC §2.4).
//
// Nothing here calls into the scheduling queue from code the queue runs
// under its own lock (PreEnqueue, Less, queueing hints): wake-ups go
// through the state's outbox.
package coscheduling
