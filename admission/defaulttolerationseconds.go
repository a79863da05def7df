package admission

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"
)

// DefaultTolerationSeconds is kube's DefaultTolerationSeconds plugin: a
// pod created without a toleration of the node.kubernetes.io/not-ready or
// node.kubernetes.io/unreachable NoExecute taint is given one, for a
// limited time (kube-apiserver's --default-not-ready-toleration-seconds
// and --default-unreachable-toleration-seconds, 300 by default). Its pods
// then stay that long on a node that stops answering before the taint
// eviction controller deletes them, instead of at once, so that a short
// partition does not move every pod.
type DefaultTolerationSeconds struct {
	*admission.Handler
	notReady, unreachable corev1.Toleration
}

var _ admission.MutationInterface = (*DefaultTolerationSeconds)(nil)

// KubeDefaultTolerationSeconds is kube-apiserver's default of both.
const KubeDefaultTolerationSeconds int64 = 300

// NewDefaultTolerationSeconds returns the plugin with the tolerations'
// seconds; neither may be negative.
func NewDefaultTolerationSeconds(notReadySeconds, unreachableSeconds int64) (*DefaultTolerationSeconds, error) {
	var errs []error
	if notReadySeconds < 0 {
		errs = append(errs, fmt.Errorf("default not-ready toleration seconds %d is negative", notReadySeconds))
	}
	if unreachableSeconds < 0 {
		errs = append(errs, fmt.Errorf("default unreachable toleration seconds %d is negative", unreachableSeconds))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("default toleration seconds admission: %w", err)
	}
	toleration := func(key string, secs int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs}
	}
	return &DefaultTolerationSeconds{
		Handler:     admission.NewHandler(admission.Create),
		notReady:    toleration(corev1.TaintNodeNotReady, notReadySeconds),
		unreachable: toleration(corev1.TaintNodeUnreachable, unreachableSeconds),
	}, nil
}

// Admit adds the tolerations a created pod lacks. A toleration counts as
// one of the taint, as kube's plugin counts it, when its key is the
// taint's or empty and its effect NoExecute or empty, whatever its
// operator and seconds.
func (p *DefaultTolerationSeconds) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod := podCreated(a)
	if pod == nil {
		return nil
	}
	covers := func(t corev1.Toleration, key string) bool {
		return (t.Key == key || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "")
	}
	var notReady, unreachable bool
	for _, t := range pod.Spec.Tolerations {
		notReady = notReady || covers(t, corev1.TaintNodeNotReady)
		unreachable = unreachable || covers(t, corev1.TaintNodeUnreachable)
	}
	// Each toleration is a copy, its seconds too, so that no two pods
	// share a pointer.
	add := func(t corev1.Toleration) {
		secs := *t.TolerationSeconds
		t.TolerationSeconds = &secs
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, t)
	}
	if !notReady {
		add(p.notReady)
	}
	if !unreachable {
		add(p.unreachable)
	}
	return nil
}
