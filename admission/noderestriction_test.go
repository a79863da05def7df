package admission

import (
	"context"
	"errors"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// pods is a test-only in-memory PodGetter, keyed by namespace/name; the
// namespace "broken" fails as storage would.
type pods map[string]*corev1.Pod

var _ PodGetter = pods(nil)

func (p pods) Pod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	if namespace == "broken" {
		return nil, errors.New("etcd unreachable")
	}
	if pod, ok := p[namespace+"/"+name]; ok {
		return pod, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
}

func node(name string, mutate func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		corev1.LabelHostname: name,
		"team":               "a",
	}}}
	if mutate != nil {
		mutate(n)
	}
	return n
}

func withLabel(key, value string) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Labels[key] = value }
}

func corePod(ns, name, nodeName string, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

// mirror makes a mirror pod of n1 out of p, then applies mutate.
func mirror(mutate func(*corev1.Pod)) *corev1.Pod {
	return corePod("ns1", "static-web-n1", "n1", func(p *corev1.Pod) {
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
		if mutate != nil {
			mutate(p)
		}
	})
}

func lease(ns, name string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func tokenRequest(ref *authenticationv1.BoundObjectReference) *authenticationv1.TokenRequest {
	return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"api"}, BoundObjectRef: ref}}
}

func boundPod(name string, uid types.UID) *authenticationv1.BoundObjectReference {
	return &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: name, UID: uid}
}

var (
	nodesGVR  = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	podsGVR   = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	leasesGVR = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	saGVR     = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	eventsGVR = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	cmGVR     = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

func kindOf(gvr schema.GroupVersionResource, sub string) schema.GroupVersionKind {
	kinds := map[string]string{"nodes": "Node", "pods": "Pod", "leases": "Lease", "events": "Event", "configmaps": "ConfigMap"}
	if gvr.Resource == "serviceaccounts" && sub == "token" {
		return authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")
	}
	return gvr.GroupVersion().WithKind(kinds[gvr.Resource])
}

func TestNodeRestriction(t *testing.T) {
	stored := pods{}
	for _, p := range []*corev1.Pod{
		corePod("ns1", "p1", "n1", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "sa1" }),
		corePod("ns1", "p2", "n2", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "sa1" }),
		corePod("ns1", "default-sa", "n1", nil),
		mirror(nil),
	} {
		stored[p.Namespace+"/"+p.Name] = p
	}
	plugin, err := NewNodeRestriction(stored)
	if err != nil {
		t.Fatal(err)
	}
	n1 := &user.DefaultInfo{Name: "system:node:n1", Groups: []string{user.NodesGroup, user.AllAuthenticated}}
	notNode := &user.DefaultInfo{Name: "system:node:n1", Groups: []string{user.AllAuthenticated}}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	noName := &user.DefaultInfo{Name: "system:node:", Groups: []string{user.NodesGroup}}

	type request struct {
		u        user.Info
		op       admission.Operation
		gvr      schema.GroupVersionResource
		sub      string
		ns, name string
		obj, old runtime.Object
	}
	create := func(u user.Info, gvr schema.GroupVersionResource, sub, ns, name string, obj runtime.Object) request {
		return request{u, admission.Create, gvr, sub, ns, name, obj, nil}
	}
	update := func(u user.Info, gvr schema.GroupVersionResource, sub, ns, name string, obj, old runtime.Object) request {
		return request{u, admission.Update, gvr, sub, ns, name, obj, old}
	}
	del := func(u user.Info, gvr schema.GroupVersionResource, ns, name string, old runtime.Object) request {
		return request{u, admission.Delete, gvr, "", ns, name, nil, old}
	}
	taint := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	withTaint := func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{taint} }
	secretVol := corev1.Volume{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db"}}}
	p1 := stored["ns1/p1"]
	p2 := stored["ns1/p2"]
	yes := true

	allowed := func(err error) bool { return err == nil }
	forbidden := apierrors.IsForbidden
	tests := []struct {
		name  string
		req   request
		check func(error) bool
		msg   string // a part of the error message, when not empty
	}{
		// Nodes: only its own.
		{"register itself", create(n1, nodesGVR, "", "", "n1", node("n1", withTaint)), allowed, ""},
		{"register itself, name only in the object", create(n1, nodesGVR, "", "", "", node("n1", nil)), allowed, ""},
		{"register itself with kubelet labels", create(n1, nodesGVR, "", "", "n1", node("n1", func(n *corev1.Node) {
			n.Labels[corev1.LabelTopologyZone] = "z1"
			n.Labels["kubelet.kubernetes.io/x"] = "y"
			n.Labels["foo.node.kubernetes.io/x"] = "y"
			n.Labels["example.com/rack"] = "r1"
		})), allowed, ""},
		{"register another node", create(n1, nodesGVR, "", "", "n2", node("n2", nil)), forbidden, `node "n1" is not allowed to modify node "n2"`},
		{"register another node, name only in the object", create(n1, nodesGVR, "", "", "", node("n2", nil)), forbidden, `not allowed to modify node "n2"`},
		{"request name and object name differ", create(n1, nodesGVR, "", "", "n1", node("n2", nil)), forbidden, ""},
		{"update another node", update(n1, nodesGVR, "", "", "n2", node("n2", nil), node("n2", nil)), forbidden, `node "n1" is not allowed to modify node "n2"`},
		{"update another node's status", update(n1, nodesGVR, "status", "", "n2", node("n2", nil), node("n2", nil)), forbidden, ""},
		{"rename itself to another node", update(n1, nodesGVR, "", "", "n1", node("n2", nil), node("n1", nil)), forbidden, ""},
		{"delete another node", del(n1, nodesGVR, "", "n2", nil), forbidden, ""},
		{"delete itself", del(n1, nodesGVR, "", "n1", nil), forbidden, ""},
		{"update itself", update(n1, nodesGVR, "", "", "n1", node("n1", withLabel("team", "b")), node("n1", nil)), allowed, ""},
		{"update own status", update(n1, nodesGVR, "status", "", "n1", node("n1", func(n *corev1.Node) {
			withTaint(n)
			n.Status.Phase = corev1.NodeRunning
		}), node("n1", withTaint)), allowed, ""},
		{"update without an old object", update(n1, nodesGVR, "", "", "n1", node("n1", nil), nil), forbidden, ""},

		// Nodes: labels that steer workloads.
		{"register with node-restriction label", create(n1, nodesGVR, "", "", "n1", node("n1", withLabel("node-restriction.kubernetes.io/x", "y"))), forbidden, "node-restriction.kubernetes.io/x"},
		{"register with node-restriction subdomain label", create(n1, nodesGVR, "", "", "n1", node("n1", withLabel("a.node-restriction.kubernetes.io/x", "y"))), forbidden, ""},
		{"register with the bare node-restriction key", create(n1, nodesGVR, "", "", "n1", node("n1", withLabel("node-restriction.kubernetes.io", "y"))), forbidden, ""},
		{"register as control plane", create(n1, nodesGVR, "", "", "n1", node("n1", withLabel("node-role.kubernetes.io/control-plane", ""))), forbidden, ""},
		{"register with k8s.io label", create(n1, nodesGVR, "", "", "n1", node("n1", withLabel("x.k8s.io/y", "z"))), forbidden, ""},
		{"add node-restriction label", update(n1, nodesGVR, "", "", "n1", node("n1", withLabel("node-restriction.kubernetes.io/x", "y")), node("n1", nil)), forbidden, "not allowed to modify labels: node-restriction.kubernetes.io/x"},
		{"add it through status", update(n1, nodesGVR, "status", "", "n1", node("n1", withLabel("node-restriction.kubernetes.io/x", "y")), node("n1", nil)), forbidden, ""},
		{"add it in upper case", update(n1, nodesGVR, "", "", "n1", node("n1", withLabel("Node-Restriction.Kubernetes.IO/x", "y")), node("n1", nil)), forbidden, ""},
		{"change node-restriction label", update(n1, nodesGVR, "", "", "n1", node("n1", withLabel("node-restriction.kubernetes.io/x", "b")), node("n1", withLabel("node-restriction.kubernetes.io/x", "a"))), forbidden, ""},
		{"remove node-restriction label", update(n1, nodesGVR, "", "", "n1", node("n1", nil), node("n1", withLabel("node-restriction.kubernetes.io/x", "a"))), forbidden, ""},
		{"keep node-restriction label set by the admin", update(n1, nodesGVR, "", "", "n1",
			node("n1", func(n *corev1.Node) { n.Labels["node-restriction.kubernetes.io/x"] = "a"; n.Labels["team"] = "b" }),
			node("n1", withLabel("node-restriction.kubernetes.io/x", "a"))), allowed, ""},
		{"change hostname label", update(n1, nodesGVR, "", "", "n1", node("n1", withLabel(corev1.LabelHostname, "other")), node("n1", nil)), allowed, ""},

		// Nodes: taints and config source.
		{"remove own taints", update(n1, nodesGVR, "", "", "n1", node("n1", nil), node("n1", withTaint)), forbidden, `node "n1" is not allowed to modify taints`},
		{"add a taint", update(n1, nodesGVR, "", "", "n1", node("n1", withTaint), node("n1", nil)), forbidden, ""},
		{"change a taint's effect", update(n1, nodesGVR, "", "", "n1", node("n1", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectPreferNoSchedule}}
		}), node("n1", withTaint)), forbidden, ""},
		{"remove taints through status", update(n1, nodesGVR, "status", "", "n1", node("n1", nil), node("n1", withTaint)), forbidden, ""},
		{"empty taints for none", update(n1, nodesGVR, "", "", "n1", node("n1", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{} }), node("n1", nil)), allowed, ""},
		{"register with a config source", create(n1, nodesGVR, "", "", "n1", node("n1", func(n *corev1.Node) {
			n.Spec.ConfigSource = &corev1.NodeConfigSource{ConfigMap: &corev1.ConfigMapNodeConfigSource{Namespace: "kube-system", Name: "c", KubeletConfigKey: "k"}}
		})), forbidden, ""},
		{"set a config source", update(n1, nodesGVR, "", "", "n1", node("n1", func(n *corev1.Node) {
			n.Spec.ConfigSource = &corev1.NodeConfigSource{ConfigMap: &corev1.ConfigMapNodeConfigSource{Namespace: "kube-system", Name: "c", KubeletConfigKey: "k"}}
		}), node("n1", nil)), forbidden, ""},

		// Pods: mirror pods only.
		{"create own mirror pod", create(n1, podsGVR, "", "ns1", "static-web-n1", mirror(nil)), allowed, ""},
		{"create mirror pod owned by itself", create(n1, podsGVR, "", "ns1", "", mirror(func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "node-uid", Controller: &yes}}
		})), allowed, ""},
		{"create an ordinary pod", create(n1, podsGVR, "", "ns1", "", corePod("ns1", "x", "n1", nil)), forbidden, "can only create mirror pods"},
		{"create mirror pod on another node", create(n1, podsGVR, "", "ns1", "", mirror(func(p *corev1.Pod) { p.Spec.NodeName = "n2" })), forbidden, "spec.nodeName set to itself"},
		{"create unscheduled mirror pod", create(n1, podsGVR, "", "ns1", "", mirror(func(p *corev1.Pod) { p.Spec.NodeName = "" })), forbidden, ""},
		{"mirror pod with secret volume", create(n1, podsGVR, "", "ns1", "", mirror(func(p *corev1.Pod) { p.Spec.Volumes = []corev1.Volume{secretVol} })), forbidden, "reference secrets"},
		{"mirror pod with imagePullSecret", create(n1, podsGVR, "", "ns1", "", mirror(func(p *corev1.Pod) { p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "reg"}} })), forbidden, "reference secrets"},
		{"mirror pod with secret in ephemeral container", create(n1, podsGVR, "", "ns1", "", mirror(func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "e", EnvFrom: []corev1.EnvFromSource{
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}},
			}}}}
		})), forbidden, "reference secrets"},
		{"mirror pod with configmap env", create(n1, podsGVR, "", "ns1", "", mirror(func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Env: []corev1.EnvVar{{Name: "E", ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "k"},
			}}}}}
		})), forbidden, "reference configmaps"},
		{"mirror pod with service account", create(n1, podsGVR, "", "ns1", "", mirror(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "default" })), forbidden, "service account"},
		{"mirror pod with service account token volume", create(n1, podsGVR, "", "ns1", "", mirror(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "t", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
			}}}}}
		})), forbidden, ""},
		{"mirror pod with claim", create(n1, podsGVR, "", "ns1", "", mirror(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		})), forbidden, "persistentvolumeclaims"},
		{"mirror pod owned by another node", create(n1, podsGVR, "", "ns1", "", mirror(func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n2", UID: "u", Controller: &yes}}
		})), forbidden, ""},
		{"mirror pod owned by a ReplicaSet", create(n1, podsGVR, "", "ns1", "", mirror(func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "n1", UID: "u", Controller: &yes}}
		})), forbidden, ""},
		{"delete own pod", del(n1, podsGVR, "ns1", "p1", p1), allowed, ""},
		{"delete own pod, looked up", del(n1, podsGVR, "ns1", "p1", nil), allowed, ""},
		{"delete pod on another node", del(n1, podsGVR, "ns1", "p2", p2), forbidden, "can only delete pods with spec.nodeName set to itself"},
		{"delete pod on another node, looked up", del(n1, podsGVR, "ns1", "p2", nil), forbidden, ""},
		{"delete missing pod", del(n1, podsGVR, "ns1", "gone", nil), apierrors.IsNotFound, ""},
		{"delete when storage fails", del(n1, podsGVR, "broken", "p1", nil), isCauseForLog, ""},
		{"update own pod's spec", update(n1, podsGVR, "", "ns1", "p1", corePod("ns1", "p1", "n1", func(p *corev1.Pod) { p.Spec.Volumes = []corev1.Volume{secretVol} }), p1), forbidden, "can only create and delete mirror pods"},
		{"evict a pod", create(n1, podsGVR, "eviction", "ns1", "p2", nil), forbidden, "unexpected pod subresource"},
		{"add ephemeral container", update(n1, podsGVR, "ephemeralcontainers", "ns1", "p1", p1, p1), forbidden, ""},

		// Pod status: pods bound to the node, status only.
		{"own pod status", update(n1, podsGVR, "status", "ns1", "p1", corePod("ns1", "p1", "n1", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "sa1"
			p.Status.Phase = corev1.PodRunning
		}), p1), allowed, ""},
		{"own pod status, looked up", update(n1, podsGVR, "status", "ns1", "p1", p1, nil), allowed, ""},
		{"status of a pod on another node", update(n1, podsGVR, "status", "ns1", "p2", corePod("ns1", "p2", "n1", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "sa1"
		}), p2), forbidden, "can only update pod status for pods with spec.nodeName set to itself"},
		{"status of a pod on another node, looked up", update(n1, podsGVR, "status", "ns1", "p2", p2, nil), forbidden, ""},
		{"status that relabels", update(n1, podsGVR, "status", "ns1", "p1", corePod("ns1", "p1", "n1", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "sa1"
			p.Labels = map[string]string{"app": "db"}
		}), p1), forbidden, "labels"},
		{"status that adds a secret to the spec", update(n1, podsGVR, "status", "ns1", "p1", corePod("ns1", "p1", "n1", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "sa1"
			p.Spec.Volumes = []corev1.Volume{secretVol}
		}), p1), forbidden, "spec"},
		{"status that adds an owner", update(n1, podsGVR, "status", "ns1", "p1", corePod("ns1", "p1", "n1", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "sa1"
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "u"}}
		}), p1), forbidden, "owner"},

		// Leases: kube-node-lease/<node> only.
		{"create own lease", create(n1, leasesGVR, "", "kube-node-lease", "", lease("kube-node-lease", "n1")), allowed, ""},
		{"renew own lease", update(n1, leasesGVR, "", "kube-node-lease", "n1", lease("kube-node-lease", "n1"), lease("kube-node-lease", "n1")), allowed, ""},
		{"delete own lease", del(n1, leasesGVR, "kube-node-lease", "n1", nil), allowed, ""},
		{"create another node's lease", create(n1, leasesGVR, "", "kube-node-lease", "", lease("kube-node-lease", "n2")), forbidden, "same name as the requesting node"},
		{"renew another node's lease", update(n1, leasesGVR, "", "kube-node-lease", "n2", lease("kube-node-lease", "n2"), lease("kube-node-lease", "n2")), forbidden, ""},
		{"delete another node's lease", del(n1, leasesGVR, "kube-node-lease", "n2", nil), forbidden, ""},
		{"own lease name elsewhere", create(n1, leasesGVR, "", "kube-system", "", lease("kube-system", "n1")), forbidden, `"kube-node-lease" system namespace`},
		{"leader election lease", update(n1, leasesGVR, "", "kube-system", "kube-scheduler", lease("kube-system", "kube-scheduler"), lease("kube-system", "kube-scheduler")), forbidden, ""},

		// ServiceAccount tokens: bound to a pod on the node.
		{"token bound to own pod", create(n1, saGVR, "token", "ns1", "sa1", tokenRequest(boundPod("p1", "uid-p1"))), allowed, ""},
		{"default token bound to own pod", create(n1, saGVR, "token", "ns1", "default", tokenRequest(boundPod("default-sa", "uid-default-sa"))), allowed, ""},
		{"unbound token", create(n1, saGVR, "token", "ns1", "sa1", tokenRequest(nil)), forbidden, "not bound to a pod"},
		{"token bound to a secret", create(n1, saGVR, "token", "ns1", "sa1", tokenRequest(&authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Secret", Name: "s", UID: "u"})), forbidden, "not bound to a pod"},
		{"token bound without uid", create(n1, saGVR, "token", "ns1", "sa1", tokenRequest(boundPod("p1", ""))), forbidden, "without a uid"},
		{"token bound to a recreated pod", create(n1, saGVR, "token", "ns1", "sa1", tokenRequest(boundPod("p1", "old-uid"))), forbidden, "does not match"},
		{"token bound to a pod on another node", create(n1, saGVR, "token", "ns1", "sa1", tokenRequest(boundPod("p2", "uid-p2"))), forbidden, "different node"},
		{"token for another SA bound to own pod", create(n1, saGVR, "token", "ns1", "admin", tokenRequest(boundPod("p1", "uid-p1"))), forbidden, "does not run as it"},
		{"token bound to own mirror pod", create(n1, saGVR, "token", "ns1", "default", tokenRequest(boundPod("static-web-n1", "uid-static-web-n1"))), forbidden, ""},
		{"token bound to a missing pod", create(n1, saGVR, "token", "ns1", "sa1", tokenRequest(boundPod("gone", "u"))), apierrors.IsNotFound, ""},
		{"token when storage fails", create(n1, saGVR, "token", "broken", "sa1", tokenRequest(boundPod("p1", "uid-p1"))), isCauseForLog, ""},

		// Everything else, and everyone else, untouched.
		{"create event", create(n1, eventsGVR, "", "ns1", "", &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "e"}}), allowed, ""},
		{"create configmap (left to the authorizers)", create(n1, cmGVR, "", "ns1", "", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "c"}}), allowed, ""},
		{"admin updates a node's labels and taints", update(alice, nodesGVR, "", "", "n2", node("n2", withLabel("node-restriction.kubernetes.io/x", "y")), node("n2", withTaint)), allowed, ""},
		{"admin creates an ordinary pod", create(alice, podsGVR, "", "ns1", "", corePod("ns1", "x", "n1", nil)), allowed, ""},
		{"node name without the group is no node", update(notNode, nodesGVR, "", "", "n2", node("n2", withLabel("node-restriction.kubernetes.io/x", "y")), node("n2", nil)), allowed, ""},
		{"node with an empty name", create(noName, eventsGVR, "", "ns1", "", &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "e"}}), forbidden, "could not determine node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.req
			a := admission.NewAttributesRecord(r.obj, r.old, kindOf(r.gvr, r.sub), r.ns, r.name, r.gvr, r.sub, r.op, nil, false, r.u)
			err := plugin.Validate(t.Context(), a, nil)
			if !tt.check(err) {
				t.Fatalf("Validate: unexpected result %v", err)
			}
			if tt.msg != "" && (err == nil || !strings.Contains(err.Error(), tt.msg)) {
				t.Errorf("Validate: error %v, want one containing %q", err, tt.msg)
			}
		})
	}
}

func TestNewNodeRestriction(t *testing.T) {
	if _, err := NewNodeRestriction(nil); err == nil {
		t.Error("nil pod getter accepted")
	}
	plugin, err := NewNodeRestriction(pods{})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []admission.Operation{admission.Create, admission.Update, admission.Delete} {
		if !plugin.Handles(op) {
			t.Errorf("Handles(%s) = false, want true", op)
		}
	}
}

// isCauseForLog reports a refusal whose cause is for the server log: an
// error that is not an API error, which the server answers as a generic
// 500.
func isCauseForLog(err error) bool {
	_, isAPI := err.(apierrors.APIStatus)
	return err != nil && !isAPI
}
