// Package v1 is the versioned form of Cardinal's scheduler plugin arguments,
// as they are written in a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1).
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=cardinal.dev/cardinal/apis/config
// +k8s:defaulter-gen=TypeMeta
// +k8s:defaulter-gen-input=cardinal.dev/cardinal/apis/config/v1
// +groupName=kubescheduler.config.k8s.io
package v1
