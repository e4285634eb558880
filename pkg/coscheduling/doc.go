// Package coscheduling is Cardinal's gang plugin, CardinalGang: all-or-nothing
// gangs with elastic [min, max] jobs (SPEC §1.2, §2). It reads
// kubernetes-sigs/scheduler-plugins PodGroups unchanged.
//
// # Why gangs cannot deadlock
//
// Two gangs deadlock when each holds part of the cluster at Permit and waits
// for the rest. Cardinal never lets that state arise:
//
//  1. PreEnqueue keeps a gang's pods out of the queue until its PodGroup
//     exists and minMember pods do, so a gang never starts what it cannot
//     possibly finish.
//  2. Less keeps a gang's pods together in the queue (priority, then the
//     PodGroup's age, then the gang), so a gang is placed in one run of
//     scheduling cycles rather than interleaved with others.
//  3. At most one gang is being assembled at a time: while gang A has
//     members waiting at Permit below its min, PreFilter turns away min
//     members of any other gang and parks them. They are woken (through the
//     scheduler's Activate) the moment A reaches min or gives up. Only one
//     gang can ever hold a partial reservation, so there is nobody to wait
//     for in a cycle.
//  4. When a min member fits nowhere, PostFilter rejects the gang's waiting
//     members at once, so they give back their nodes, and the gang backs off
//     for podGroupBackoffSeconds. A Permit timeout (permitWaitingTimeSeconds)
//     or failed bind does the same through Unreserve. Then the next gang is
//     assembled. Every gang either completes or releases everything within
//     one run of its pods plus the Permit timeout: the ones that fit are
//     placed and the rest wait whole.
//
// # Elastic pods
//
// A pod of a gang that already has min placed is elastic. It passes Permit
// at once, never preempts (its PostFilter ends the chain with
// UnschedulableAndUnresolvable), and waits, parked, while any other gang
// that is not backing off still needs its min: the min members of every gang
// come before the elastic pods of any (SPEC §2.4). pkg/gang says which of a
// gang's running pods are elastic, for everyone else.
//
// # State
//
// All gang state is in one manager fed by the pod and PodGroup informers and
// by Reserve/Unreserve, keyed by pod UID; no scheduling cycle lists pods. A
// PodGroup's status is written by pkg/podgroupstatus, which this plugin
// starts through pkg/controllers, under a lease of its own.
package coscheduling
