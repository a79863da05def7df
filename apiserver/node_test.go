package apiserver

import (
	"fmt"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A node reads only what its own pods use and writes only its own Node.
func TestNodeAuthorizerAndRestriction(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	for _, n := range []string{"n1", "n2"} {
		if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{"s1", "s2"} {
		if _, err := cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s}, Data: map[string][]byte{"k": []byte("v")}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(name, node, secret string) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Volumes:    []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}},
		}}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod("p1", "n1", "s1")
	pod("p2", "n2", "s2")
	n1 := ts.clientset(t, &identity{user: "system:node:n1", groups: []string{"system:nodes"}})
	eventually(t, "n1 reads the secret of its pod", func() error {
		_, err := n1.CoreV1().Secrets("default").Get(ctx, "s1", metav1.GetOptions{})
		return err
	})
	if _, err := n1.CoreV1().Secrets("default").Get(ctx, "s2", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("n1 reading the secret of n2's pod: %v, want Forbidden", err)
	}
	if _, err := n1.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("n1 listing secrets: %v, want Forbidden", err)
	}
	other, err := n1.CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("n1 reading node n2: %v", err)
	}
	other.Labels = map[string]string{"x": "y"}
	if _, err := n1.CoreV1().Nodes().Update(ctx, other, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("n1 updating node n2: %v, want Forbidden", err)
	}
	own, err := n1.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	own.Labels = map[string]string{"node-restriction.kubernetes.io/trusted": "true"}
	if _, err := n1.CoreV1().Nodes().Update(ctx, own, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("n1 setting a node-restriction label: %v, want Forbidden", err)
	}
	own.Labels = map[string]string{"team": "a"}
	if _, err := n1.CoreV1().Nodes().Update(ctx, own, metav1.UpdateOptions{}); err != nil {
		t.Errorf("n1 labelling itself: %v", err)
	}
	p2, err := cs.CoreV1().Pods("default").Get(ctx, "p2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p2.Status.Phase = corev1.PodRunning
	if _, err := n1.CoreV1().Pods("default").UpdateStatus(ctx, p2, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("n1 updating the status of n2's pod: %v, want Forbidden", err)
	}
	// A client certificate naming a node but without the nodes group is
	// not a node.
	impostor := ts.clientset(t, &identity{user: "system:node:n1"})
	if _, err := impostor.CoreV1().Secrets("default").Get(ctx, "s1", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("system:node:n1 without system:nodes: %v, want Forbidden", err)
	}
}

// A node gets tokens only bound to its own pods.
func TestNodeTokenRequestsAreRestricted(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1"}, Spec: corev1.PodSpec{ServiceAccountName: "app", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p1"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n1 := ts.clientset(t, &identity{user: "system:node:n1", groups: []string{"system:nodes"}})
	unbound := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"anything"}}}
	eventually(t, "the node authorizer sees the pod", func() error {
		_, err := n1.CoreV1().ServiceAccounts("default").CreateToken(ctx, "app", unbound, metav1.CreateOptions{})
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "not bound to a pod") {
			return nil
		}
		return fmt.Errorf("unbound token for a node: %v, want Forbidden by NodeRestriction", err)
	})
	bound := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p1", UID: p.UID}}}
	if _, err := n1.CoreV1().ServiceAccounts("default").CreateToken(ctx, "app", bound, metav1.CreateOptions{}); err != nil {
		t.Errorf("token bound to the node's own pod: %v", err)
	}
}
