// Package record holds what a cardinal-sim run leaves behind (SPEC §8): the
// timeline of each scheduler's cluster, each job's fate, the capacity that
// moved between queues, and the summary of numbers with its verdicts. A run
// writes them to a directory (timeline.csv, jobs.csv, moves.csv,
// summary.json) and the report is drawn from those files alone, so
// `cardinal-sim report DIR` can draw it again.
package record

import (
	"time"
)

// Files in a run's directory.
const (
	TimelineFile = "timeline.csv"
	JobsFile     = "jobs.csv"
	MovesFile    = "moves.csv"
	SummaryFile  = "summary.json"
)

// Sample is one scheduler's cluster at one moment for one queue and card
// model, in the model's own units (a MIG slice or an MPS share is a card of
// its own model, as Cardinal counts it). Queue "" is the cluster as a whole:
// Capacity is then the model's cards on nodes, and Allocated and Request
// the sums over queues.
type Sample struct {
	Scheduler string
	// T is trace seconds since the trace's start.
	T     float64
	Queue string
	Model string
	// PerCard is how many of this model make one whole card (1 for whole
	// cards, 7 for a MIG 1g slice of a 7-slice card, the replicas of an
	// MPS share), for adding models up in whole cards.
	PerCard int
	// Allocated is the cards bound pods use; Request is Allocated plus
	// what pending pods ask for, counted as Cardinal counts a queue's
	// request (a pod naming alternatives asks for each).
	Allocated, Request int64
	// Deserved is the queue's fair share (SPEC §3.2) of the model,
	// computed from the trace's queues and Request, the same for every
	// scheduler; Guarantee and Capability are the queue's own numbers
	// (-1: not capped).
	Deserved, Guarantee, Capability int64
	// Capacity is the model's cards in the cluster (queue "" only).
	Capacity int64
	// Demand is, for queue "" and model "", the whole cards asked for by
	// pods of jobs submitted and not finished. That row's Allocated,
	// Capacity and Request are all models added up in thousandths of a
	// whole card (PerCard 1000), so that shares add up exactly.
	Demand float64
}

// Job is one job's fate under one scheduler. Times are trace seconds since
// the trace's start; a time never reached is negative.
type Job struct {
	Scheduler string
	Name      string
	Queue     string
	Pods, Min int
	// Cards is whole cards per pod (a share of one for MIG and MPS), of
	// Resource (gpu, mig-<profile> or mps-<N>, as the trace says).
	Cards    float64
	Resource string
	// Units is each pod's request in Resource's own units (cards, MIG
	// slices or MPS shares).
	Units    int
	CardName string
	// Duration is how long each pod runs, trace seconds.
	Duration float64
	Priority int32
	// Preemptibility as the trace gives it.
	Preemptibility string
	Submit         float64
	// MinBound is when min pods of the job first ran together.
	MinBound float64
	// Done is when its last pod completed.
	Done float64
	// Evicted is how many of its pods were evicted by the scheduler, and
	// Killed how many were stopped by the cluster changing (a node removed
	// or re-sliced); GPUHoursLost is the work both threw away, with the
	// work of members left waiting when a gang fell below min.
	Evicted, Killed int
	GPUHoursLost    float64
	// FirstChoice and Alternatives count its pods that named card-model
	// alternatives and were placed, and of those, the ones placed on
	// their first choice.
	Alternatives, FirstChoice int
	// PartialSeconds is how long (wall seconds) it had some but fewer than
	// min pods running at once for longer than a bind takes.
	PartialSeconds float64
	// Partial tells whether it ever did.
	Partial bool
}

// Move is capacity that went from one queue to another: a pod of From
// evicted from a node and a pod of To bound on that node after it.
type Move struct {
	Scheduler string
	T         float64
	From, To  string
	Model     string
	Node      string
}

// Range bounds a number; a nil end is open.
type Range struct {
	Min *float64 `json:"min,omitempty" yaml:"min,omitempty"`
	Max *float64 `json:"max,omitempty" yaml:"max,omitempty"`
}

// Check is one expected range checked against a run.
type Check struct {
	Scheduler string  `json:"scheduler"`
	Metric    string  `json:"metric"`
	Value     float64 `json:"value"`
	Range     Range   `json:"range"`
	OK        bool    `json:"ok"`
}

// Summary is a run: the trace, how it was run, each scheduler's numbers,
// whether the run is valid and how it fared against its expected ranges.
type Summary struct {
	Trace string `json:"trace"`
	About string `json:"about,omitempty"`
	// Compression is K: trace seconds per wall second.
	Compression float64   `json:"compression"`
	Started     time.Time `json:"started"`
	Schedulers  []Numbers `json:"schedulers"`
	Validity    Validity  `json:"validity"`
	Checks      []Check   `json:"checks,omitempty"`
}

// Numbers are what one scheduler did with the trace. Times are trace
// seconds; shares are fractions (0.95 is 95 %).
type Numbers struct {
	Scheduler string `json:"scheduler"`
	// Jobs submitted, Completed and Stuck (a gang never at min when the run
	// ended) and Partial (ever below min with some pods running).
	Jobs          int `json:"jobs"`
	Completed     int `json:"completed"`
	StuckGangs    int `json:"stuckGangs"`
	PartialGangs  int `json:"partialGangs"`
	UnfinishedJob int `json:"unfinishedJobs"`
	// Allocation is whole cards allocated over capacity, time-averaged;
	// AllocationContended is, over the time each card model was asked for
	// more than it has, the share of that model allocated, added up over
	// models in whole cards; ContendedSeconds is how long some model was.
	Allocation          float64 `json:"allocation"`
	AllocationContended float64 `json:"allocationContended"`
	ContendedSeconds    float64 `json:"contendedSeconds"`
	// CapabilityViolations counts (queue, model) pairs seen above the
	// queue's capability.
	CapabilityViolations int `json:"capabilityViolations"`
	// OffShare counts times a queue stayed further than its tolerance
	// (max(10 % of deserved, one gang)) from its deserved share of a model
	// for more than 60 trace seconds; MaxOffShareSeconds is the longest.
	OffShare           int     `json:"offShare"`
	MaxOffShareSeconds float64 `json:"maxOffShareSeconds"`
	// WithinShare is the share of (queue, model) samples within tolerance.
	WithinShare float64 `json:"withinShare"`
	// BackAndForth counts capacity moved from a queue to another and back
	// within 10 trace minutes.
	BackAndForth int `json:"backAndForth"`
	Moves        int `json:"moves"`
	// Evictions are pods evicted by the scheduler; Killed pods stopped by
	// the cluster changing; GPUHoursLost the work thrown away.
	Evictions    int     `json:"evictions"`
	Killed       int     `json:"killed"`
	GPUHoursLost float64 `json:"gpuHoursLost"`
	// FirstChoice is the share of placed pods naming alternatives that
	// landed on their first choice; -1 when none named any.
	FirstChoice float64 `json:"firstChoice"`
	// WaitP50/P90/P99 are submit-to-min-bound; JCTP50/P90/P99 job
	// completion time (submit to last pod done), over jobs that got there.
	WaitP50 float64 `json:"waitP50"`
	WaitP90 float64 `json:"waitP90"`
	WaitP99 float64 `json:"waitP99"`
	JCTP50  float64 `json:"jctP50"`
	JCTP90  float64 `json:"jctP90"`
	JCTP99  float64 `json:"jctP99"`
	// Makespan is when the last job finished (or the run ended).
	Makespan float64 `json:"makespan"`
	// CreationLagP99 is wall seconds from a job's submit to its pods being
	// seen; AttemptP99 the scheduler's scheduling_attempt_duration p99,
	// wall seconds; ShortestJob the shortest job's run in wall seconds.
	CreationLagP99 float64 `json:"creationLagP99"`
	AttemptP99     float64 `json:"attemptP99"`
	ShortestJob    float64 `json:"shortestJob"`
	// WallSeconds is how long the replay took.
	WallSeconds float64 `json:"wallSeconds"`
}

// Validity says whether the run measured what it claims: pods created on
// time, jobs far longer than a scheduling attempt, and a sample replayed at
// half the compression agreeing.
type Validity struct {
	Valid   bool     `json:"valid"`
	Reasons []string `json:"reasons,omitempty"`
	// Sample is the K/2 agreement check; nil when it was not run.
	Sample *SampleCheck `json:"sample,omitempty"`
}

// SampleCheck is a sample of the trace replayed with one scheduler at K
// and at K/2: the numbers must agree within Tolerance.
type SampleCheck struct {
	Scheduler string  `json:"scheduler"`
	Jobs      int     `json:"jobs"`
	Tolerance float64 `json:"tolerance"`
	// AtK and AtHalfK are allocation and mean job completion time.
	AllocationAtK     float64 `json:"allocationAtK"`
	AllocationAtHalfK float64 `json:"allocationAtHalfK"`
	MeanJCTAtK        float64 `json:"meanJCTAtK"`
	MeanJCTAtHalfK    float64 `json:"meanJCTAtHalfK"`
	Agree             bool    `json:"agree"`
}
