package node

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

const noRelationship = "no relationship found between node 'n1' and this object"

func nodeUser(name string) user.Info {
	return &user.DefaultInfo{Name: "system:node:" + name, Groups: []string{user.NodesGroup, user.AllAuthenticated}}
}

func pod(ns, name, node string, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func secretVolume(name string) corev1.Volume {
	return corev1.Volume{Name: "v-" + name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}}
}

func secretEnv(name string) corev1.EnvVar {
	return corev1.EnvVar{Name: "E", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k"}}}
}

func secretEnvFrom(name string) corev1.EnvFromSource {
	return corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
}

// testPods are the pods of the cluster the tests run against.
func testPods() []*corev1.Pod {
	return []*corev1.Pod{
		pod("ns1", "vol", "n1", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "sa1"
			p.Spec.Volumes = []corev1.Volume{secretVolume("s-vol")}
		}),
		pod("ns1", "env", "n1", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "sa1"
			p.Spec.Containers[0].Env = []corev1.EnvVar{
				{Name: "PLAIN", Value: "x"},
				secretEnv("s-env"),
				{Name: "C", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-env"}, Key: "k"}}},
			}
		}),
		pod("ns1", "envfrom", "n1", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "sa1"
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{
				secretEnvFrom("s-envfrom"),
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-envfrom"}}},
			}
		}),
		pod("ns1", "pull", "n1", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "sa1"
			p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "s-pull"}}
		}),
		pod("ns1", "projected", "n1", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "sa1"
			p.Spec.Volumes = []corev1.Volume{{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "s-proj"}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-proj"}}},
			}}}}}
		}),
		pod("ns1", "init", "n1", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "sa1"
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "busybox", Env: []corev1.EnvVar{secretEnv("s-init")}}}
		}),
		pod("ns1", "ephemeral", "n1", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "sa1"
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "e", Image: "busybox", EnvFrom: []corev1.EnvFromSource{secretEnvFrom("s-eph")}}}}
		}),
		pod("ns1", "csi", "n1", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "sa1"
			p.Spec.Volumes = []corev1.Volume{{Name: "c", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "s-csi"}}}}}
		}),
		pod("ns1", "cmvol", "n1", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "sa1"
			p.Spec.Volumes = []corev1.Volume{{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-vol"}}}}}
		}),
		// Runs as "default": the pods above name sa1.
		pod("ns3", "default-sa", "n1", nil),
		pod("ns1", "other", "n2", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "sa-n2"
			p.Spec.Volumes = []corev1.Volume{secretVolume("s-n2")}
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-n2"}}}}
		}),
		// A mirror pod is made by the node itself: it proves nothing.
		pod("ns1", "mirror", "n1", func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
			p.Spec.ServiceAccountName = "sa-mirror"
			p.Spec.Volumes = []corev1.Volume{secretVolume("s-mirror")}
		}),
		// Not scheduled yet: relates to no node, not even one named "".
		pod("ns1", "pending", "", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "sa-pending"
			p.Spec.Volumes = []corev1.Volume{secretVolume("s-pending")}
		}),
	}
}

// req is a resource request of u.
func req(u user.Info, verb, group, resource, subresource, ns, name string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{
		User: u, Verb: verb, APIGroup: group, APIVersion: "v1", Resource: resource, Subresource: subresource,
		Namespace: ns, Name: name, ResourceRequest: true,
	}
}

func TestAuthorize(t *testing.T) {
	az, err := New(&podStore{pods: testPods()})
	if err != nil {
		t.Fatal(err)
	}
	n1, n2 := nodeUser("n1"), nodeUser("n2")
	get := func(u user.Info, resource, ns, name string) authorizer.AttributesRecord {
		return req(u, "get", "", resource, "", ns, name)
	}
	token := func(u user.Info, ns, sa string) authorizer.AttributesRecord {
		return req(u, "create", "", "serviceaccounts", "token", ns, sa)
	}
	lease := func(u user.Info, verb, ns, name string) authorizer.AttributesRecord {
		return req(u, verb, "coordination.k8s.io", "leases", "", ns, name)
	}
	const (
		allow = authorizer.DecisionAllow
		none  = authorizer.DecisionNoOpinion
	)
	tests := []struct {
		name       string
		attrs      authorizer.AttributesRecord
		want       authorizer.Decision
		wantReason string // checked when not empty
	}{
		// Secrets and ConfigMaps, by every kind of reference.
		{"secret in volume", get(n1, "secrets", "ns1", "s-vol"), allow, ""},
		{"secret in env", get(n1, "secrets", "ns1", "s-env"), allow, ""},
		{"secret in envFrom", get(n1, "secrets", "ns1", "s-envfrom"), allow, ""},
		{"imagePullSecret", get(n1, "secrets", "ns1", "s-pull"), allow, ""},
		{"secret in projected volume", get(n1, "secrets", "ns1", "s-proj"), allow, ""},
		{"secret in init container", get(n1, "secrets", "ns1", "s-init"), allow, ""},
		{"secret in ephemeral container", get(n1, "secrets", "ns1", "s-eph"), allow, ""},
		{"secret in CSI volume", get(n1, "secrets", "ns1", "s-csi"), allow, ""},
		{"configmap in env", get(n1, "configmaps", "ns1", "cm-env"), allow, ""},
		{"configmap in envFrom", get(n1, "configmaps", "ns1", "cm-envfrom"), allow, ""},
		{"configmap in projected volume", get(n1, "configmaps", "ns1", "cm-proj"), allow, ""},
		{"configmap in volume", get(n1, "configmaps", "ns1", "cm-vol"), allow, ""},
		{"allow reason names the pod", get(n1, "secrets", "ns1", "s-vol"), allow, "node 'n1' runs pod ns1/vol, which refers to this object"},

		// Secrets and ConfigMaps a node must not read.
		{"secret of a pod on another node", get(n1, "secrets", "ns1", "s-n2"), none, noRelationship},
		{"configmap of a pod on another node", get(n1, "configmaps", "ns1", "cm-n2"), none, noRelationship},
		{"same name in another namespace", get(n1, "secrets", "ns2", "s-vol"), none, noRelationship},
		{"secret name asked as a configmap", get(n1, "configmaps", "ns1", "s-vol"), none, noRelationship},
		{"configmap name asked as a secret", get(n1, "secrets", "ns1", "cm-vol"), none, noRelationship},
		{"unreferenced secret", get(n1, "secrets", "ns1", "db-password"), none, noRelationship},
		{"secret of its own mirror pod", get(n1, "secrets", "ns1", "s-mirror"), none, noRelationship},
		{"secret of an unscheduled pod", get(n1, "secrets", "ns1", "s-pending"), none, noRelationship},
		{"list secrets", req(n1, "list", "", "secrets", "", "ns1", ""), none, "can only get individual resources of this type"},
		{"list secrets by name", req(n1, "list", "", "secrets", "", "ns1", "s-vol"), none, ""},
		{"watch a referenced secret", req(n1, "watch", "", "secrets", "", "ns1", "s-vol"), none, ""},
		{"list secrets cluster-wide", req(n1, "list", "", "secrets", "", "", ""), none, ""},
		{"list configmaps", req(n1, "list", "", "configmaps", "", "ns1", ""), none, ""},
		{"update a referenced secret", req(n1, "update", "", "secrets", "", "ns1", "s-vol"), none, ""},
		{"delete a referenced secret", req(n1, "delete", "", "secrets", "", "ns1", "s-vol"), none, ""},
		{"create a secret", req(n1, "create", "", "secrets", "", "ns1", ""), none, ""},
		{"get without a name", get(n1, "secrets", "ns1", ""), none, ""},
		{"get without a namespace", get(n1, "secrets", "", "s-vol"), none, ""},
		{"secret subresource", req(n1, "get", "", "secrets", "x", "ns1", "s-vol"), none, ""},
		{"wildcard verb", req(n1, "*", "", "secrets", "", "ns1", "s-vol"), none, ""},
		{"secrets of another group", req(n1, "get", "example.com", "secrets", "", "ns1", "s-vol"), none, ""},
		{"other node reads its own", get(n2, "secrets", "ns1", "s-n2"), allow, ""},
		{"other node reads n1's", get(n2, "secrets", "ns1", "s-vol"), none, "no relationship found between node 'n2' and this object"},

		// ServiceAccount tokens.
		{"token for SA of a pod on the node", token(n1, "ns1", "sa1"), allow, ""},
		{"token for default SA of a pod without one", token(n1, "ns3", "default"), allow, ""},
		{"token for default SA not used there", token(n1, "ns1", "default"), none, noRelationship},
		{"token for SA of a pod on another node", token(n1, "ns1", "sa-n2"), none, noRelationship},
		{"token for SA of its mirror pod", token(n1, "ns1", "sa-mirror"), none, noRelationship},
		{"token for SA of an unscheduled pod", token(n1, "ns1", "sa-pending"), none, noRelationship},
		{"token for SA in another namespace", token(n1, "ns2", "sa1"), none, noRelationship},
		{"get the service account", req(n1, "get", "", "serviceaccounts", "", "ns1", "sa1"), none, ""},
		{"list service accounts", req(n1, "list", "", "serviceaccounts", "", "ns1", ""), none, ""},
		{"token without a name", token(n1, "ns1", ""), none, ""},
		{"other subresource of SA", req(n1, "create", "", "serviceaccounts", "other", "ns1", "sa1"), none, ""},

		// Leases.
		{"get own lease", lease(n1, "get", "kube-node-lease", "n1"), allow, ""},
		{"update own lease", lease(n1, "update", "kube-node-lease", "n1"), allow, ""},
		{"patch own lease", lease(n1, "patch", "kube-node-lease", "n1"), allow, ""},
		{"delete own lease", lease(n1, "delete", "kube-node-lease", "n1"), allow, ""},
		{"create a lease (name checked by admission)", lease(n1, "create", "kube-node-lease", ""), allow, ""},
		{"create own lease by name", lease(n1, "create", "kube-node-lease", "n1"), allow, ""},
		{"create another node's lease by name", lease(n1, "create", "kube-node-lease", "n2"), none, ""},
		{"update another node's lease", lease(n1, "update", "kube-node-lease", "n2"), none, "can only access node lease with the same name as the requesting node"},
		{"get another node's lease", lease(n1, "get", "kube-node-lease", "n2"), none, ""},
		{"own lease name in another namespace", lease(n1, "update", "kube-system", "n1"), none, ""},
		{"list leases", lease(n1, "list", "kube-node-lease", ""), none, ""},
		{"watch own lease", lease(n1, "watch", "kube-node-lease", "n1"), none, ""},
		{"lease subresource", req(n1, "update", "coordination.k8s.io", "leases", "status", "kube-node-lease", "n1"), none, ""},

		// The node rules; writes narrowed by NodeRestriction.
		{"get another node", req(n1, "get", "", "nodes", "", "", "n2"), allow, ""},
		{"list nodes", req(n1, "list", "", "nodes", "", "", ""), allow, ""},
		{"create node", req(n1, "create", "", "nodes", "", "", ""), allow, ""},
		{"patch node", req(n1, "patch", "", "nodes", "", "", "n1"), allow, ""},
		{"delete own node", req(n1, "delete", "", "nodes", "", "", "n1"), none, ""},
		{"update node status", req(n1, "update", "", "nodes", "status", "", "n1"), allow, ""},
		{"node proxy", req(n1, "get", "", "nodes", "proxy", "", "n1"), none, ""},
		{"list pods", req(n1, "list", "", "pods", "", "", ""), allow, ""},
		{"create mirror pod", req(n1, "create", "", "pods", "", "ns1", ""), allow, ""},
		{"delete pod", req(n1, "delete", "", "pods", "", "ns1", "vol"), allow, ""},
		{"update pod", req(n1, "update", "", "pods", "", "ns1", "vol"), none, ""},
		{"patch pod status", req(n1, "patch", "", "pods", "status", "ns1", "vol"), allow, ""},
		{"exec into pod", req(n1, "create", "", "pods", "exec", "ns1", "vol"), none, ""},
		{"evict pod", req(n1, "create", "", "pods", "eviction", "ns1", "vol"), none, ""},
		{"delete pods collection", req(n1, "deletecollection", "", "pods", "", "ns1", ""), none, ""},
		{"create event", req(n1, "create", "", "events", "", "ns1", ""), allow, ""},
		{"patch events.k8s.io event", req(n1, "patch", "events.k8s.io", "events", "", "ns1", "e"), allow, ""},
		{"delete event", req(n1, "delete", "", "events", "", "ns1", "e"), none, ""},
		{"token review", req(n1, "create", "authentication.k8s.io", "tokenreviews", "", "", ""), allow, ""},
		{"subject access review", req(n1, "create", "authorization.k8s.io", "subjectaccessreviews", "", "", ""), allow, ""},
		{"local subject access review", req(n1, "create", "authorization.k8s.io", "localsubjectaccessreviews", "", "ns1", ""), allow, ""},
		{"self subject access review", req(n1, "create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", ""), none, ""},
		{"nodes in another group", req(n1, "update", "example.com", "nodes", "", "", "n1"), none, ""},
		{"deployments", req(n1, "list", "apps", "deployments", "", "ns1", ""), none, ""},
		{"clusterroles", req(n1, "create", "rbac.authorization.k8s.io", "clusterrolebindings", "", "", ""), none, ""},
		{"non-resource URL", authorizer.AttributesRecord{User: n1, Verb: "get", Path: "/api"}, none, ""},

		// Who is a node.
		{"ordinary user", get(&user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}, "secrets", "ns1", "s-vol"), none, ""},
		{"node name without the group", get(&user.DefaultInfo{Name: "system:node:n1", Groups: []string{user.AllAuthenticated}}, "secrets", "ns1", "s-vol"), none, ""},
		{"node name without the group, node rules", req(&user.DefaultInfo{Name: "system:node:n1"}, "list", "", "nodes", "", "", ""), none, ""},
		{"group without the node name", req(&user.DefaultInfo{Name: "n1", Groups: []string{user.NodesGroup}}, "list", "", "nodes", "", "", ""), none, ""},
		{"node with an empty name", req(&user.DefaultInfo{Name: "system:node:", Groups: []string{user.NodesGroup}}, "list", "", "nodes", "", "", ""), none, `unknown node for user "system:node:"`},
		{"no user", req(nil, "list", "", "nodes", "", "", ""), none, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason, err := az.Authorize(t.Context(), tt.attrs)
			if err != nil {
				t.Fatalf("Authorize: unexpected error %v", err)
			}
			if got != tt.want {
				t.Errorf("decision = %v (reason %q), want %v", got, reason, tt.want)
			}
			if tt.wantReason != "" && reason != tt.wantReason {
				t.Errorf("reason = %q, want %q", reason, tt.wantReason)
			}
			if tt.attrs.User != nil {
				if _, isNode := NodeName(tt.attrs.User); !isNode && reason != "" {
					t.Errorf("reason %q for a user who is no node, want none", reason)
				}
			}
			cd := az.ConditionsAwareAuthorize(t.Context(), tt.attrs)
			if cd.IsAllow() != (got == authorizer.DecisionAllow) || cd.IsNoOpinion() != (got == authorizer.DecisionNoOpinion) {
				t.Errorf("ConditionsAwareAuthorize = %v, want the decision %v", cd, got)
			}
		})
	}
}

func TestAuthorizeListerError(t *testing.T) {
	cause := errors.New("watch cache not ready")
	az, err := New(&podStore{pods: testPods(), err: cause})
	if err != nil {
		t.Fatal(err)
	}
	n1 := nodeUser("n1")
	for _, attrs := range []authorizer.AttributesRecord{
		req(n1, "get", "", "secrets", "", "ns1", "s-vol"),
		req(n1, "get", "", "configmaps", "", "ns1", "cm-vol"),
		req(n1, "create", "", "serviceaccounts", "token", "ns1", "sa1"),
	} {
		got, reason, err := az.Authorize(t.Context(), attrs)
		if got != authorizer.DecisionNoOpinion || !errors.Is(err, cause) {
			t.Errorf("%s %s/%s: got (%v, %q, %v), want NoOpinion with the lister's error", attrs.Verb, attrs.Resource, attrs.Name, got, reason, err)
		}
	}
	// Rules that need no pods still apply.
	if got, _, err := az.Authorize(t.Context(), req(n1, "list", "", "nodes", "", "", "")); got != authorizer.DecisionAllow || err != nil {
		t.Errorf("list nodes with a failing lister: got (%v, %v), want Allow", got, err)
	}
}

// TestAuthorizeRechecksNode: a lister that returns pods of other nodes must
// not make their Secrets readable.
func TestAuthorizeRechecksNode(t *testing.T) {
	az, err := New(sloppyLister(testPods()))
	if err != nil {
		t.Fatal(err)
	}
	for _, attrs := range []authorizer.AttributesRecord{
		req(nodeUser("n1"), "get", "", "secrets", "", "ns1", "s-n2"),
		req(nodeUser("n1"), "get", "", "secrets", "", "ns1", "s-pending"),
		req(nodeUser("n1"), "create", "", "serviceaccounts", "token", "ns1", "sa-n2"),
	} {
		if got, reason, _ := az.Authorize(t.Context(), attrs); got != authorizer.DecisionNoOpinion {
			t.Errorf("%s %s/%s: got %v (%q), want NoOpinion", attrs.Verb, attrs.Resource, attrs.Name, got, reason)
		}
	}
	if got, _, _ := az.Authorize(t.Context(), req(nodeUser("n1"), "get", "", "secrets", "", "ns1", "s-vol")); got != authorizer.DecisionAllow {
		t.Errorf("own secret through a sloppy lister: got %v, want Allow", got)
	}
}

func TestNew(t *testing.T) {
	if _, err := New(nil); err == nil {
		t.Error("New(nil) succeeded, want an error")
	}
	az, err := New(&podStore{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := az.Authorize(t.Context(), nil); err == nil {
		t.Error("Authorize(nil attributes) returned no error")
	}
	if d, _, err := az.EvaluateConditions(t.Context(), authorizer.ConditionsAwareDecision{}, nil); d != authorizer.DecisionDeny || err == nil {
		t.Errorf("EvaluateConditions = (%v, %v), want Deny with an error", d, err)
	}
}

func TestNodeName(t *testing.T) {
	tests := []struct {
		name     string
		u        user.Info
		wantName string
		wantOK   bool
	}{
		{"node", nodeUser("n1"), "n1", true},
		{"node with dots", nodeUser("n1.example.com"), "n1.example.com", true},
		{"no group", &user.DefaultInfo{Name: "system:node:n1"}, "", false},
		{"other groups only", &user.DefaultInfo{Name: "system:node:n1", Groups: []string{"system:masters", "system:node"}}, "", false},
		{"group without the prefix", &user.DefaultInfo{Name: "n1", Groups: []string{user.NodesGroup}}, "", false},
		{"similar prefix", &user.DefaultInfo{Name: "system:nodes:n1", Groups: []string{user.NodesGroup}}, "", false},
		{"service account", &user.DefaultInfo{Name: "system:serviceaccount:kube-system:node", Groups: []string{user.NodesGroup}}, "", false},
		{"empty node name", &user.DefaultInfo{Name: "system:node:", Groups: []string{user.NodesGroup}}, "", true},
		{"nil", nil, "", false},
	}
	for _, tt := range tests {
		name, ok := NodeName(tt.u)
		if name != tt.wantName || ok != tt.wantOK {
			t.Errorf("%s: NodeName = (%q, %v), want (%q, %v)", tt.name, name, ok, tt.wantName, tt.wantOK)
		}
	}
}
