package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"cardinal.dev/cardinal/pkg/controlplane"
)

const (
	settleTimeout = 2 * time.Minute
	settlePoll    = 250 * time.Millisecond
)

// settlePods plays the kubelet, marking bound pods Running, until every
// Cardinal pod runs or nothing has changed for settle.
func settlePods(ctx context.Context, kube kubernetes.Interface, sched *controlplane.Scheduler, settle time.Duration) error {
	deadline := time.Now().Add(settleTimeout)
	lastChange, last := time.Now(), ""
	for time.Now().Before(deadline) {
		if err := sched.Exited(); err != nil {
			return err
		}
		pods, err := kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		running, pending := 0, 0
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.SchedulerName != "cardinal-scheduler" {
				continue
			}
			switch {
			case p.Spec.NodeName == "":
				pending++
			case p.Status.Phase == corev1.PodPending:
				if err := markRunning(ctx, kube, p); err != nil {
					return err
				}
				running++
			default:
				running++
			}
		}
		state := fmt.Sprintf("%d/%d", running, pending)
		if state != last {
			last, lastChange = state, time.Now()
		}
		if running+pending > 0 && (pending == 0 || time.Since(lastChange) >= settle) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(settlePoll):
		}
	}
	return errors.New("placements did not settle within " + settleTimeout.String())
}

// markRunning does what a kubelet reports for a started pod.
func markRunning(ctx context.Context, kube kubernetes.Interface, p *corev1.Pod) error {
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &now
	p.Status.Conditions = append(p.Status.Conditions,
		corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
	)
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true, Started: new(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	_, err := kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}
