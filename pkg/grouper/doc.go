// Package grouper makes the PodGroups of the workloads users already run
// (SPEC §7), so that nobody writes one by hand: a batch/v1 Job, a JobSet, a
// LeaderWorkerSet group, a Kubeflow training job or TrainJob, a Ray
// cluster, or an annotated Deployment or StatefulSet becomes one gang.
//
// It runs in the scheduler's process under its leader election
// (pkg/controllers). For each pod of the cardinal-scheduler profile that
// it may group (workload.Kinds.Groupable), it walks the pod's owners up
// through controller references (chain.go), decides the gang by SPEC §7's
// rules, first match wins (plan.go), makes or mends the scheduler-plugins
// PodGroup (podgroup.go) and puts the pod, and the other pods of its
// controller that wait, in that gang in the scheduling state; or it rules
// that they are gangs of one. The scheduling state holds a pod until it
// has done either (pkg/state, grouping.go), so a grouped workload's pods
// are never scheduled one by one first. Nothing is written on a pod until
// it binds: its Binding then carries its gang (the pod-group label, and
// the cardinal.dev/pod-group annotation for API servers that take no label
// from a Binding, where the grouper labels the bound pod itself).
//
// Workloads are read as unstructured objects: Kubernetes' own kinds from
// the scheduler's informers, other projects' kinds from informers started
// for the kinds the cluster serves (reader.go), so no operator's Go module
// is needed.
package grouper
