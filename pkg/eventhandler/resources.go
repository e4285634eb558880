package eventhandler

import (
	"fmt"

	fwk "k8s.io/kube-scheduler/framework"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"cardinal.dev/cardinal/apis/scheduling/v1alpha1"
)

// How kube-scheduler names events of the custom resources Cardinal's
// plugins requeue on: <plural>.<version>.<group>.
var (
	QueueResource = fwk.EventResource(fmt.Sprintf("queues.%s.%s",
		v1alpha1.SchemeGroupVersion.Version, v1alpha1.SchemeGroupVersion.Group))
	PodGroupResource = fwk.EventResource(fmt.Sprintf("podgroups.%s.%s",
		schedv1alpha1.SchemeGroupVersion.Version, schedv1alpha1.SchemeGroupVersion.Group))
)
