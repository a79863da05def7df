package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// podsByNode indexes the pod informer by spec.nodeName, once for every
// controller that asks, and returns the pods of a node by that index.
// It must be called before the informer starts.
func podsByNode(inf cache.SharedIndexInformer) (func(node string) ([]*corev1.Pod, error), error) {
	const index = "spec.nodeName"
	if _, ok := inf.GetIndexer().GetIndexers()[index]; !ok {
		if err := inf.AddIndexers(cache.Indexers{index: func(obj any) ([]string, error) {
			if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
				return []string{p.Spec.NodeName}, nil
			}
			return nil, nil
		}}); err != nil {
			return nil, err
		}
	}
	return func(node string) ([]*corev1.Pod, error) {
		objs, err := inf.GetIndexer().ByIndex(index, node)
		if err != nil {
			return nil, err
		}
		pods := make([]*corev1.Pod, 0, len(objs))
		for _, o := range objs {
			if p, ok := o.(*corev1.Pod); ok {
				pods = append(pods, p)
			}
		}
		return pods, nil
	}, nil
}
