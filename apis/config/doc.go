// Package config holds the internal types of the arguments of Cardinal's
// scheduler plugins. They are registered into kube-scheduler's own
// KubeSchedulerConfiguration scheme (group kubescheduler.config.k8s.io), so a
// profile's pluginConfig decodes them like any in-tree plugin's args.
//
// +k8s:deepcopy-gen=package
// +groupName=kubescheduler.config.k8s.io
package config
