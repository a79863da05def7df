package node

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// podStore is a test-only PodLister holding pods in memory: a real
// implementation that selects the pods by spec.nodeName, or fails with err
// when set.
type podStore struct {
	pods []*corev1.Pod
	err  error
}

var _ PodLister = (*podStore)(nil)

func (s *podStore) PodsOnNode(_ context.Context, nodeName string) ([]*corev1.Pod, error) {
	if s.err != nil {
		return nil, s.err
	}
	var out []*corev1.Pod
	for _, p := range s.pods {
		if p.Spec.NodeName == nodeName {
			out = append(out, p)
		}
	}
	return out, nil
}

// sloppyLister is a test-only PodLister that returns every pod whatever the
// node, as a buggy index would: the authorizer must not trust it.
type sloppyLister []*corev1.Pod

var _ PodLister = sloppyLister(nil)

func (s sloppyLister) PodsOnNode(context.Context, string) ([]*corev1.Pod, error) {
	return s, nil
}
