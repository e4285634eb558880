// Package scheme installs Cardinal's plugin arguments into kube-scheduler's
// configuration scheme. Importing it is enough for a KubeSchedulerConfiguration
// that configures Cardinal's plugins to decode, strictly, with defaults.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"

	"cardinal.dev/cardinal/apis/config"
	configv1 "cardinal.dev/cardinal/apis/config/v1"
)

// Scheme is kube-scheduler's own configuration scheme, with Cardinal's args added.
var Scheme = kubeschedulerscheme.Scheme

func init() {
	AddToScheme(Scheme)
}

// AddToScheme adds the internal and v1 args types to a scheme.
func AddToScheme(scheme *runtime.Scheme) {
	utilruntime.Must(config.AddToScheme(scheme))
	utilruntime.Must(configv1.AddToScheme(scheme))
}
