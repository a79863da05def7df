package printers

import (
	"bytes"
	"encoding/json"
	"flag"
	certificatesv1 "k8s.io/api/certificates/v1"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// now is the fixed instant every AGE in these tests is measured from.
var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

func microAgo(d time.Duration) metav1.MicroTime { return metav1.NewMicroTime(now.Add(-d)) }

func ptr[T any](v T) *T { return &v }

func objectMeta(namespace, name string, age time.Duration) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Namespace:         namespace,
		Name:              name,
		UID:               "00000000-0000-0000-0000-000000000001",
		ResourceVersion:   "42",
		CreationTimestamp: ago(age),
		Labels:            map[string]string{"app": "web"},
	}
}

func listMeta() metav1.ListMeta {
	return metav1.ListMeta{ResourceVersion: "1000", Continue: "next-page", RemainingItemCount: ptr(int64(7))}
}

// TestTableGolden renders, for each kind, a list of a fully set object and
// a nearly empty one, and compares the JSON with testdata/<name>.json.
func TestTableGolden(t *testing.T) {
	tests := []struct {
		name string
		obj  runtime.Object
	}{
		{"namespaces", &corev1.NamespaceList{ListMeta: listMeta(), Items: []corev1.Namespace{
			{ObjectMeta: objectMeta("", "kube-system", 400*24*time.Hour), Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
			{ObjectMeta: metav1.ObjectMeta{Name: "bare"}},
		}}},
		{"pods", &corev1.PodList{ListMeta: listMeta(), Items: []corev1.Pod{richPod(), {ObjectMeta: metav1.ObjectMeta{Name: "bare"}}}}},
		{"nodes", &corev1.NodeList{ListMeta: listMeta(), Items: []corev1.Node{richNode(), {ObjectMeta: metav1.ObjectMeta{Name: "bare"}}}}},
		{"secrets", &corev1.SecretList{ListMeta: listMeta(), Items: []corev1.Secret{
			{
				ObjectMeta: objectMeta("default", "tls", 3*time.Hour),
				Type:       corev1.SecretTypeTLS,
				Data:       map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")},
				StringData: map[string]string{"tls.key": "k", "ca.crt": "ca"},
			},
			{ObjectMeta: metav1.ObjectMeta{Name: "bare"}},
		}}},
		{"configmaps", &corev1.ConfigMapList{ListMeta: listMeta(), Items: []corev1.ConfigMap{
			{
				ObjectMeta: objectMeta("default", "settings", 90*time.Second),
				Data:       map[string]string{"a": "1", "b": "2"},
				BinaryData: map[string][]byte{"c": {3}},
			},
			{ObjectMeta: metav1.ObjectMeta{Name: "bare"}},
		}}},
		{"serviceaccounts", &corev1.ServiceAccountList{ListMeta: listMeta(), Items: []corev1.ServiceAccount{
			{
				ObjectMeta: objectMeta("default", "builder", 26*time.Hour),
				Secrets:    []corev1.ObjectReference{{Name: "builder-token"}, {Name: "builder-dockercfg"}},
			},
			{ObjectMeta: metav1.ObjectMeta{Name: "bare"}},
		}}},
		{"events", &corev1.EventList{ListMeta: listMeta(), Items: []corev1.Event{richCoreEvent(), {ObjectMeta: metav1.ObjectMeta{Name: "bare"}}}}},
		{"events.k8s.io", &eventsv1.EventList{ListMeta: listMeta(), Items: []eventsv1.Event{richEventsEvent(), {ObjectMeta: metav1.ObjectMeta{Name: "bare"}}}}},
		{"replicasets", &appsv1.ReplicaSetList{ListMeta: listMeta(), Items: []appsv1.ReplicaSet{
			{
				ObjectMeta: objectMeta("default", "web-5d4f8", 10*time.Minute),
				Spec: appsv1.ReplicaSetSpec{
					Replicas: ptr(int32(3)),
					Selector: &metav1.LabelSelector{
						MatchLabels:      map[string]string{"app": "web", "pod-template-hash": "5d4f8"},
						MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"front", "edge"}}},
					},
					Template: podTemplate(),
				},
				Status: appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 2},
			},
			{ObjectMeta: metav1.ObjectMeta{Name: "bare"}},
		}}},
		{"deployments", &appsv1.DeploymentList{ListMeta: listMeta(), Items: []appsv1.Deployment{
			{
				ObjectMeta: objectMeta("default", "web", 50*24*time.Hour),
				Spec: appsv1.DeploymentSpec{
					Replicas: ptr(int32(3)),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
					Template: podTemplate(),
				},
				Status: appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 2},
			},
			{ObjectMeta: metav1.ObjectMeta{Name: "bare"}},
		}}},
		{"statefulsets", &appsv1.StatefulSetList{ListMeta: listMeta(), Items: []appsv1.StatefulSet{
			{
				ObjectMeta: objectMeta("default", "db", 3*time.Hour),
				Spec: appsv1.StatefulSetSpec{
					Replicas: ptr(int32(3)),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
					Template: podTemplate(),
				},
				Status: appsv1.StatefulSetStatus{Replicas: 3, ReadyReplicas: 2},
			},
			{ObjectMeta: metav1.ObjectMeta{Name: "bare"}},
		}}},
		{"daemonsets", &appsv1.DaemonSetList{ListMeta: listMeta(), Items: []appsv1.DaemonSet{
			{
				ObjectMeta: objectMeta("kube-system", "agent", 7*24*time.Hour),
				Spec: appsv1.DaemonSetSpec{
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
					Template: func() corev1.PodTemplateSpec {
						t := podTemplate()
						t.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
						return t
					}(),
				},
				Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, NumberReady: 2, UpdatedNumberScheduled: 1, NumberAvailable: 2},
			},
			{ObjectMeta: metav1.ObjectMeta{Name: "bare"}},
		}}},
		{"controllerrevisions", &appsv1.ControllerRevisionList{ListMeta: listMeta(), Items: []appsv1.ControllerRevision{
			{
				ObjectMeta: func() metav1.ObjectMeta {
					m := objectMeta("default", "db-7c9f6d", 3*time.Hour)
					m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "u1", Controller: ptr(true)}}
					return m
				}(),
				Revision: 2,
			},
			{ObjectMeta: metav1.ObjectMeta{Name: "bare"}},
		}}},
		{"leases", &coordinationv1.LeaseList{ListMeta: listMeta(), Items: []coordinationv1.Lease{
			{
				ObjectMeta: objectMeta("kube-system", "kube-scheduler", 5*time.Hour+3*time.Minute),
				Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr("cp-1_8c1d1f2e"), LeaseDurationSeconds: ptr(int32(15))},
			},
			{ObjectMeta: metav1.ObjectMeta{Name: "bare"}},
		}}},
		{"certificatesigningrequests", &certificatesv1.CertificateSigningRequestList{ListMeta: listMeta(), Items: []certificatesv1.CertificateSigningRequest{
			{
				ObjectMeta: objectMeta("", "node-csr-n1", 3*time.Minute),
				Spec:       certificatesv1.CertificateSigningRequestSpec{SignerName: "kubernetes.io/kube-apiserver-client-kubelet", Username: "system:bootstrap:abcdef", ExpirationSeconds: ptr(int32(86400))},
				Status: certificatesv1.CertificateSigningRequestStatus{
					Conditions:  []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}},
					Certificate: []byte("issued"),
				},
			},
			{
				// Bare but for its conditions.
				ObjectMeta: metav1.ObjectMeta{Name: "bare"},
				Status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{
					{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue},
					{Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue},
				}},
			},
		}}},
		{"roles", &rbacv1.RoleList{ListMeta: listMeta(), Items: []rbacv1.Role{
			{
				ObjectMeta: objectMeta("default", "reader", 2*time.Hour),
				Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}},
			},
			{ObjectMeta: metav1.ObjectMeta{Name: "bare"}},
		}}},
		{"clusterroles", &rbacv1.ClusterRoleList{ListMeta: listMeta(), Items: []rbacv1.ClusterRole{
			{ObjectMeta: objectMeta("", "cluster-admin", 2*time.Hour)},
			{ObjectMeta: metav1.ObjectMeta{Name: "bare"}},
		}}},
		{"rolebindings", &rbacv1.RoleBindingList{ListMeta: listMeta(), Items: []rbacv1.RoleBinding{
			{
				ObjectMeta: objectMeta("default", "read-pods", 3*time.Minute),
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
				Subjects:   richSubjects(),
			},
			{ObjectMeta: metav1.ObjectMeta{Name: "bare"}},
		}}},
		{"clusterrolebindings", &rbacv1.ClusterRoleBindingList{ListMeta: listMeta(), Items: []rbacv1.ClusterRoleBinding{
			{
				ObjectMeta: objectMeta("", "admins", 3*time.Minute),
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects:   richSubjects(),
			},
			{ObjectMeta: metav1.ObjectMeta{Name: "bare"}},
		}}},
		{"services", &corev1.ServiceList{ListMeta: listMeta(), Items: []corev1.Service{
			{ObjectMeta: objectMeta("default", "web", time.Hour), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.7", Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}, {Port: 53, NodePort: 30053, Protocol: corev1.ProtocolUDP}}}},
			{ObjectMeta: objectMeta("default", "lb", time.Hour), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.8", Ports: []corev1.ServicePort{{Port: 80, NodePort: 30081, Protocol: corev1.ProtocolTCP}}}},
		}}},
		{"endpointslices", &discoveryv1.EndpointSliceList{ListMeta: listMeta(), Items: []discoveryv1.EndpointSlice{
			{ObjectMeta: objectMeta("default", "web-abcde", time.Hour), AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Port: func() *int32 { p := int32(8080); return &p }()}},
				Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.1.0.1"}}, {Addresses: []string{"10.1.0.2"}}, {Addresses: []string{"10.1.0.3"}}, {Addresses: []string{"10.1.0.4"}}}},
			{ObjectMeta: objectMeta("default", "empty-fghij", time.Hour), AddressType: discoveryv1.AddressTypeIPv4},
		}}},
		{"unknown-typed", &corev1.LimitRangeList{ListMeta: listMeta(), Items: []corev1.LimitRange{
			{ObjectMeta: objectMeta("default", "kubernetes", time.Hour)},
			{ObjectMeta: metav1.ObjectMeta{Name: "bare"}},
		}}},
		{"unknown-unstructured", &unstructured.UnstructuredList{
			Object: map[string]any{"apiVersion": "example.com/v1", "kind": "WidgetList", "metadata": map[string]any{"resourceVersion": "1000"}},
			Items: []unstructured.Unstructured{
				{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{
					"name": "w1", "namespace": "default", "creationTimestamp": "2025-05-31T12:00:00Z",
				}}},
				{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget"}},
			},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := Table(tt.obj, false, now)
			if err != nil {
				t.Fatalf("Table: %v", err)
			}
			if got, want := len(table.Rows), 2; got != want {
				t.Fatalf("got %d rows, want %d", got, want)
			}
			for i, row := range table.Rows {
				if got, want := len(row.Cells), len(table.ColumnDefinitions); got != want {
					t.Errorf("row %d: got %d cells, want one per column (%d)", i, got, want)
				}
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false) // keep "<none>" readable in the golden files
			enc.SetIndent("", "  ")
			if err := enc.Encode(table); err != nil {
				t.Fatalf("encode: %v", err)
			}
			got := buf.Bytes()
			golden := filepath.Join("testdata", tt.name+".json")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read golden file (run with -update to create it): %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("table differs from %s (run with -update if the change is intended)\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

// TestColumns pins each kind's columns, in order, as kubectl shows them
// (its headers are the names upper-cased); "*" marks -o wide columns.
func TestColumns(t *testing.T) {
	rbac := func(kind string) schema.GroupKind { return schema.GroupKind{Group: rbacv1.GroupName, Kind: kind} }
	tests := []struct {
		gk   schema.GroupKind
		want []string
	}{
		{schema.GroupKind{Kind: "Namespace"}, []string{"Name", "Status", "Age"}},
		{schema.GroupKind{Kind: "Pod"}, []string{"Name", "Ready", "Status", "Restarts", "Age", "IP*", "Node*", "Nominated Node*", "Readiness Gates*"}},
		{schema.GroupKind{Kind: "Node"}, []string{"Name", "Status", "Roles", "Age", "Version", "Internal-IP*", "External-IP*", "OS-Image*", "Kernel-Version*", "Container-Runtime*"}},
		{schema.GroupKind{Kind: "Secret"}, []string{"Name", "Type", "Data", "Age"}},
		{schema.GroupKind{Kind: "ConfigMap"}, []string{"Name", "Data", "Age"}},
		{schema.GroupKind{Kind: "ServiceAccount"}, []string{"Name", "Secrets", "Age"}},
		{schema.GroupKind{Kind: "Event"}, []string{"Last Seen", "Type", "Reason", "Object", "Subobject*", "Source*", "Message", "First Seen*", "Count*", "Name*"}},
		{schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}, []string{"Last Seen", "Type", "Reason", "Object", "Subobject*", "Source*", "Message", "First Seen*", "Count*", "Name*"}},
		{schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}, []string{"Name", "Desired", "Current", "Ready", "Age", "Containers*", "Images*", "Selector*"}},
		{schema.GroupKind{Group: "apps", Kind: "Deployment"}, []string{"Name", "Ready", "Up-to-date", "Available", "Age", "Containers*", "Images*", "Selector*"}},
		{schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, []string{"Name", "Ready", "Age", "Containers*", "Images*"}},
		{schema.GroupKind{Group: "apps", Kind: "DaemonSet"}, []string{"Name", "Desired", "Current", "Ready", "Up-to-date", "Available", "Node Selector", "Age", "Containers*", "Images*", "Selector*"}},
		{schema.GroupKind{Group: "apps", Kind: "ControllerRevision"}, []string{"Name", "Controller", "Revision", "Age"}},
		{schema.GroupKind{Group: "coordination.k8s.io", Kind: "Lease"}, []string{"Name", "Holder", "Age"}},
		{schema.GroupKind{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}, []string{"Name", "Age", "SignerName", "Requestor", "RequestedDuration", "Condition"}},
		{rbac("Role"), []string{"Name", "Created At"}},
		{rbac("ClusterRole"), []string{"Name", "Created At"}},
		{rbac("RoleBinding"), []string{"Name", "Role", "Age", "Users*", "Groups*", "ServiceAccounts*"}},
		{rbac("ClusterRoleBinding"), []string{"Name", "Role", "Age", "Users*", "Groups*", "ServiceAccounts*"}},
	}
	for _, tt := range tests {
		t.Run(tt.gk.String(), func(t *testing.T) {
			cols, known := Columns(tt.gk)
			if !known {
				t.Fatalf("Columns(%v): not known", tt.gk)
			}
			var got []string
			for _, c := range cols {
				name := c.Name
				if c.Priority > 0 {
					name += "*"
				}
				got = append(got, name)
				if c.Type == "" || c.Description == "" {
					t.Errorf("column %q: type %q, description %q: want both set", c.Name, c.Type, c.Description)
				}
				if (c.Name == "Name") != (c.Format == "name") {
					t.Errorf("column %q: format %q: want \"name\" exactly on the Name column", c.Name, c.Format)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("columns:\ngot  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestColumnsReturnsFreshSlice(t *testing.T) {
	a, _ := Columns(schema.GroupKind{Kind: "Pod"})
	a[0].Name = "changed"
	b, _ := Columns(schema.GroupKind{Kind: "Pod"})
	if b[0].Name != "Name" {
		t.Errorf("changing one result changed the next: got %q, want %q", b[0].Name, "Name")
	}
}

func TestPodStatus(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ago(time.Hour)}}
	waiting := func(reason string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
	}
	terminated := func(reason string, exitCode, signal int32) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: exitCode, Signal: signal}}
	}
	lastTerminated := func(d time.Duration) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1, FinishedAt: ago(d)}}
	}
	podReady := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}
	podInitialized := corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}

	// pod builds a pod with one app container per status (or one without
	// status); withInit gives it two init containers, the second a sidecar
	// when sidecar is set.
	pod := func(phase corev1.PodPhase, statuses ...corev1.ContainerStatus) corev1.Pod {
		p := corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", CreationTimestamp: ago(time.Hour)},
			Status:     corev1.PodStatus{Phase: phase, ContainerStatuses: statuses},
		}
		for i := range statuses {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: statuses[i].Name})
		}
		if len(statuses) == 0 {
			p.Spec.Containers = []corev1.Container{{Name: "app"}}
		}
		return p
	}
	withInit := func(p corev1.Pod, sidecar bool, statuses ...corev1.ContainerStatus) corev1.Pod {
		p.Spec.InitContainers = []corev1.Container{{Name: "init-0"}, {Name: "init-1"}}
		if sidecar {
			p.Spec.InitContainers[1].RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways)
		}
		p.Status.InitContainerStatuses = statuses
		return p
	}
	with := func(p corev1.Pod, f func(*corev1.Pod)) corev1.Pod { f(&p); return p }

	tests := []struct {
		name                                string
		pod                                 corev1.Pod
		wantReady, wantStatus, wantRestarts string
		wantCompleted                       bool
	}{
		{
			name:      "pending, nothing reported",
			pod:       pod(corev1.PodPending),
			wantReady: "0/1", wantStatus: "Pending", wantRestarts: "0",
		},
		{
			name:      "no phase at all",
			pod:       pod(""),
			wantReady: "0/1", wantStatus: "", wantRestarts: "0",
		},
		{
			name:      "running and ready",
			pod:       pod(corev1.PodRunning, corev1.ContainerStatus{Name: "app", Ready: true, State: running}),
			wantReady: "1/1", wantStatus: "Running", wantRestarts: "0",
		},
		{
			name: "running, one of two ready",
			pod: pod(corev1.PodRunning,
				corev1.ContainerStatus{Name: "a", Ready: true, State: running},
				corev1.ContainerStatus{Name: "b", State: running}),
			wantReady: "1/2", wantStatus: "Running", wantRestarts: "0",
		},
		{
			name: "crash loop, with time since last restart",
			pod: pod(corev1.PodRunning, corev1.ContainerStatus{
				Name: "app", RestartCount: 5, State: waiting("CrashLoopBackOff"), LastTerminationState: lastTerminated(5 * time.Minute),
			}),
			wantReady: "0/1", wantStatus: "CrashLoopBackOff", wantRestarts: "5 (5m ago)",
		},
		{
			name:      "image pull back-off",
			pod:       pod(corev1.PodPending, corev1.ContainerStatus{Name: "app", State: waiting("ImagePullBackOff")}),
			wantReady: "0/1", wantStatus: "ImagePullBackOff", wantRestarts: "0",
		},
		{
			name:      "restarts without a last termination have no suffix",
			pod:       pod(corev1.PodRunning, corev1.ContainerStatus{Name: "app", Ready: true, RestartCount: 2, State: running}),
			wantReady: "1/1", wantStatus: "Running", wantRestarts: "2",
		},
		{
			name: "no restarts, last termination ignored",
			pod: pod(corev1.PodRunning, corev1.ContainerStatus{
				Name: "app", Ready: true, State: running, LastTerminationState: lastTerminated(time.Minute),
			}),
			wantReady: "1/1", wantStatus: "Running", wantRestarts: "0",
		},
		{
			name:      "completed",
			pod:       pod(corev1.PodSucceeded, corev1.ContainerStatus{Name: "app", State: terminated("Completed", 0, 0)}),
			wantReady: "0/1", wantStatus: "Completed", wantRestarts: "0", wantCompleted: true,
		},
		{
			name:      "failed with reason",
			pod:       pod(corev1.PodFailed, corev1.ContainerStatus{Name: "app", State: terminated("Error", 1, 0)}),
			wantReady: "0/1", wantStatus: "Error", wantRestarts: "0", wantCompleted: true,
		},
		{
			name:      "killed by a signal",
			pod:       pod(corev1.PodFailed, corev1.ContainerStatus{Name: "app", State: terminated("", 137, 9)}),
			wantReady: "0/1", wantStatus: "Signal:9", wantRestarts: "0", wantCompleted: true,
		},
		{
			name:      "exit code without reason",
			pod:       pod(corev1.PodFailed, corev1.ContainerStatus{Name: "app", State: terminated("", 3, 0)}),
			wantReady: "0/1", wantStatus: "ExitCode:3", wantRestarts: "0", wantCompleted: true,
		},
		{
			name: "one container completed, another running, pod ready",
			pod: with(pod(corev1.PodRunning,
				corev1.ContainerStatus{Name: "a", Ready: true, State: running},
				corev1.ContainerStatus{Name: "b", State: terminated("Completed", 0, 0)}),
				func(p *corev1.Pod) { p.Status.Conditions = []corev1.PodCondition{podReady} }),
			wantReady: "1/2", wantStatus: "Running", wantRestarts: "0",
		},
		{
			name: "one container completed, another running, pod not ready",
			pod: pod(corev1.PodRunning,
				corev1.ContainerStatus{Name: "a", Ready: true, State: running},
				corev1.ContainerStatus{Name: "b", State: terminated("Completed", 0, 0)}),
			wantReady: "1/2", wantStatus: "NotReady", wantRestarts: "0",
		},
		{
			name: "one container completed after another failed",
			pod: pod(corev1.PodFailed,
				corev1.ContainerStatus{Name: "a", State: terminated("Completed", 0, 0)},
				corev1.ContainerStatus{Name: "b", State: terminated("OOMKilled", 137, 0)}),
			wantReady: "0/2", wantStatus: "OOMKilled", wantRestarts: "0", wantCompleted: true,
		},
		{
			name: "terminating",
			pod: with(pod(corev1.PodRunning, corev1.ContainerStatus{Name: "app", Ready: true, State: running}),
				func(p *corev1.Pod) { p.DeletionTimestamp = ptr(ago(time.Second)) }),
			wantReady: "1/1", wantStatus: "Terminating", wantRestarts: "0",
		},
		{
			name: "deleted after it completed is still Completed",
			pod: with(pod(corev1.PodSucceeded, corev1.ContainerStatus{Name: "app", State: terminated("Completed", 0, 0)}),
				func(p *corev1.Pod) { p.DeletionTimestamp = ptr(ago(time.Second)) }),
			wantReady: "0/1", wantStatus: "Completed", wantRestarts: "0", wantCompleted: true,
		},
		{
			name: "deleted on a lost node",
			pod: with(pod(corev1.PodRunning, corev1.ContainerStatus{Name: "app", Ready: true, State: running}),
				func(p *corev1.Pod) { p.DeletionTimestamp = ptr(ago(time.Second)); p.Status.Reason = "NodeLost" }),
			wantReady: "1/1", wantStatus: "Unknown", wantRestarts: "0",
		},
		{
			name: "status reason overrides phase",
			pod: with(pod(corev1.PodFailed),
				func(p *corev1.Pod) { p.Status.Reason = "Evicted" }),
			wantReady: "0/1", wantStatus: "Evicted", wantRestarts: "0", wantCompleted: true,
		},
		{
			name: "scheduling gated",
			pod: with(pod(corev1.PodPending), func(p *corev1.Pod) {
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated}}
			}),
			wantReady: "0/1", wantStatus: "SchedulingGated", wantRestarts: "0",
		},
		{
			name: "first of two init containers done, second running",
			pod: withInit(pod(corev1.PodPending, corev1.ContainerStatus{Name: "app", State: waiting("PodInitializing")}), false,
				corev1.ContainerStatus{Name: "init-0", State: terminated("Completed", 0, 0)},
				corev1.ContainerStatus{Name: "init-1", State: running}),
			wantReady: "0/1", wantStatus: "Init:1/2", wantRestarts: "0",
		},
		{
			name: "init containers not started",
			pod: withInit(pod(corev1.PodPending), false,
				corev1.ContainerStatus{Name: "init-0", State: waiting("PodInitializing")},
				corev1.ContainerStatus{Name: "init-1", State: waiting("PodInitializing")}),
			wantReady: "0/1", wantStatus: "Init:0/2", wantRestarts: "0",
		},
		{
			name: "init container crash looping",
			pod: withInit(pod(corev1.PodPending), false,
				corev1.ContainerStatus{Name: "init-0", RestartCount: 3, State: waiting("CrashLoopBackOff"), LastTerminationState: lastTerminated(2 * time.Minute)}),
			wantReady: "0/1", wantStatus: "Init:CrashLoopBackOff", wantRestarts: "3 (2m ago)",
		},
		{
			name: "init container failed",
			pod: withInit(pod(corev1.PodPending), false,
				corev1.ContainerStatus{Name: "init-0", State: terminated("Error", 1, 0)}),
			wantReady: "0/1", wantStatus: "Init:Error", wantRestarts: "0",
		},
		{
			name: "init container failed without reason",
			pod: withInit(pod(corev1.PodPending), false,
				corev1.ContainerStatus{Name: "init-0", State: terminated("", 2, 0)}),
			wantReady: "0/1", wantStatus: "Init:ExitCode:2", wantRestarts: "0",
		},
		{
			name: "init container killed by a signal",
			pod: withInit(pod(corev1.PodPending), false,
				corev1.ContainerStatus{Name: "init-0", State: terminated("", 0, 15)}),
			// Exit code 0 means done, whatever the signal: kube checks the exit code first.
			wantReady: "0/1", wantStatus: "Pending", wantRestarts: "0",
		},
		{
			name: "sidecar started and ready counts towards READY and RESTARTS",
			pod: with(withInit(pod(corev1.PodRunning, corev1.ContainerStatus{Name: "app", Ready: true, State: running}), true,
				corev1.ContainerStatus{Name: "init-0", RestartCount: 1, State: terminated("Completed", 0, 0), LastTerminationState: lastTerminated(time.Hour)},
				corev1.ContainerStatus{Name: "init-1", Ready: true, Started: ptr(true), RestartCount: 2, State: running, LastTerminationState: lastTerminated(10 * time.Minute)}),
				func(p *corev1.Pod) { p.Status.Conditions = []corev1.PodCondition{podInitialized, podReady} }),
			wantReady: "2/2", wantStatus: "Running", wantRestarts: "2 (10m ago)",
		},
		{
			name: "sidecar not started yet blocks initialization",
			pod: withInit(pod(corev1.PodPending, corev1.ContainerStatus{Name: "app", State: waiting("PodInitializing")}), true,
				corev1.ContainerStatus{Name: "init-0", State: terminated("Completed", 0, 0)},
				corev1.ContainerStatus{Name: "init-1", Started: ptr(false), State: running}),
			wantReady: "0/2", wantStatus: "Init:1/2", wantRestarts: "0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := Table(&tt.pod, false, now)
			if err != nil {
				t.Fatalf("Table: %v", err)
			}
			row := table.Rows[0]
			got := []any{row.Cells[1], row.Cells[2], row.Cells[3]}
			want := []any{tt.wantReady, tt.wantStatus, tt.wantRestarts}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("READY, STATUS, RESTARTS: got %q, want %q", got, want)
			}
			if gotCompleted := len(row.Conditions) == 1 && row.Conditions[0].Type == metav1.RowCompleted; gotCompleted != tt.wantCompleted {
				t.Errorf("row marked completed: got %v, want %v (conditions %+v)", gotCompleted, tt.wantCompleted, row.Conditions)
			}
		})
	}
}

func TestNodeStatusAndRoles(t *testing.T) {
	ready := func(s corev1.ConditionStatus) []corev1.NodeCondition {
		return []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeReady, Status: s},
		}
	}
	tests := []struct {
		name                  string
		node                  corev1.Node
		wantStatus, wantRoles string
	}{
		{
			name:       "ready, no roles",
			node:       corev1.Node{Status: corev1.NodeStatus{Conditions: ready(corev1.ConditionTrue)}},
			wantStatus: "Ready", wantRoles: "<none>",
		},
		{
			name:       "not ready",
			node:       corev1.Node{Status: corev1.NodeStatus{Conditions: ready(corev1.ConditionFalse)}},
			wantStatus: "NotReady", wantRoles: "<none>",
		},
		{
			name:       "kubelet stopped posting status",
			node:       corev1.Node{Status: corev1.NodeStatus{Conditions: ready(corev1.ConditionUnknown)}},
			wantStatus: "NotReady", wantRoles: "<none>",
		},
		{
			name:       "no Ready condition",
			node:       corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue}}}},
			wantStatus: "Unknown", wantRoles: "<none>",
		},
		{
			name:       "cordoned",
			node:       corev1.Node{Spec: corev1.NodeSpec{Unschedulable: true}, Status: corev1.NodeStatus{Conditions: ready(corev1.ConditionTrue)}},
			wantStatus: "Ready,SchedulingDisabled", wantRoles: "<none>",
		},
		{
			name:       "cordoned without conditions",
			node:       corev1.Node{Spec: corev1.NodeSpec{Unschedulable: true}},
			wantStatus: "Unknown,SchedulingDisabled", wantRoles: "<none>",
		},
		{
			name: "roles from both label forms, sorted, without duplicates",
			node: corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
				"node-role.kubernetes.io/worker":        "",
				"node-role.kubernetes.io/control-plane": "",
				"node-role.kubernetes.io/":              "", // no role in the key: ignored
				"kubernetes.io/role":                    "worker",
				"kubernetes.io/hostname":                "n1",
			}}, Status: corev1.NodeStatus{Conditions: ready(corev1.ConditionTrue)}},
			wantStatus: "Ready", wantRoles: "control-plane,worker",
		},
		{
			name: "empty kubernetes.io/role is no role",
			node: corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"kubernetes.io/role": ""}},
				Status: corev1.NodeStatus{Conditions: ready(corev1.ConditionTrue)}},
			wantStatus: "Ready", wantRoles: "<none>",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := Table(&tt.node, false, now)
			if err != nil {
				t.Fatalf("Table: %v", err)
			}
			cells := table.Rows[0].Cells
			if got, want := []any{cells[1], cells[2]}, []any{tt.wantStatus, tt.wantRoles}; !reflect.DeepEqual(got, want) {
				t.Errorf("STATUS, ROLES: got %q, want %q", got, want)
			}
		})
	}
}

// TestRowObjects checks what kubectl reads from each row's object: the
// namespace (for the NAMESPACE column of -A) and the name.
func TestRowObjects(t *testing.T) {
	list := &corev1.ConfigMapList{Items: []corev1.ConfigMap{
		{ObjectMeta: objectMeta("team-a", "one", time.Hour)},
		{ObjectMeta: objectMeta("team-b", "two", time.Hour)},
	}}
	table, err := Table(list, false, now)
	if err != nil {
		t.Fatalf("Table: %v", err)
	}
	for i, row := range table.Rows {
		p, ok := row.Object.Object.(*metav1.PartialObjectMetadata)
		if !ok {
			t.Fatalf("row %d: object is %T, want *metav1.PartialObjectMetadata", i, row.Object.Object)
		}
		if got, want := p.APIVersion+" "+p.Kind, "meta.k8s.io/v1 PartialObjectMetadata"; got != want {
			t.Errorf("row %d: type: got %q, want %q", i, got, want)
		}
		item := list.Items[i]
		if p.Namespace != item.Namespace || p.Name != item.Name || p.UID != item.UID || p.ResourceVersion != item.ResourceVersion {
			t.Errorf("row %d: metadata: got %s/%s uid %s rv %s, want %s/%s uid %s rv %s", i,
				p.Namespace, p.Name, p.UID, p.ResourceVersion, item.Namespace, item.Name, item.UID, item.ResourceVersion)
		}
		if !reflect.DeepEqual(p.Labels, item.Labels) {
			t.Errorf("row %d: labels: got %v, want %v", i, p.Labels, item.Labels)
		}
	}

	// Encoded, the row object must say what it is: kubectl decodes it by kind.
	raw, err := json.Marshal(table.Rows[0].Object)
	if err != nil {
		t.Fatalf("marshal row object: %v", err)
	}
	var decoded struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &decoded); err != nil {
		t.Fatalf("unmarshal row object: %v", err)
	}
	if decoded.APIVersion != "meta.k8s.io/v1" || decoded.Kind != "PartialObjectMetadata" || decoded.Metadata.Namespace != "team-a" {
		t.Errorf("encoded row object: got %s", raw)
	}
}

func TestUnknownKindFallsBackToDefaultColumns(t *testing.T) {
	gk := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	cols, known := Columns(gk)
	if known {
		t.Errorf("Columns(%v): got known, want unknown", gk)
	}
	if got, want := columnNames(cols), []string{"Name", "Created At"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Columns(%v): got %q, want %q", gk, got, want)
	}

	svc := &corev1.LimitRange{ObjectMeta: objectMeta("default", "kubernetes", 36*time.Hour)}
	table, err := Table(svc, false, now)
	if err != nil {
		t.Fatalf("Table: %v", err)
	}
	want := metav1.TableColumnDefinition{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
	if got := table.ColumnDefinitions[1]; got != want {
		t.Errorf("second column: got %+v, want %+v", got, want)
	}
	if got, want := table.Rows[0].Cells, []any{"kubernetes", "2025-05-31T00:00:00Z"}; !reflect.DeepEqual(got, want) {
		t.Errorf("cells: got %q, want %q", got, want)
	}
	if got, want := table.ResourceVersion, "42"; got != want {
		t.Errorf("resourceVersion: got %q, want %q", got, want)
	}
}

func TestEmptyLists(t *testing.T) {
	podColumns, _ := Columns(schema.GroupKind{Kind: "Pod"})
	tests := []struct {
		name string
		obj  runtime.Object
		want []metav1.TableColumnDefinition
	}{
		{"nil typed list", (*corev1.PodList)(nil), podColumns},
		{"list without items", &corev1.PodList{}, podColumns},
		{"list with empty items", &corev1.PodList{Items: []corev1.Pod{}}, podColumns},
		{"nil unknown list", (*corev1.LimitRangeList)(nil), defaultColumns()},
		{"empty unstructured list", &unstructured.UnstructuredList{}, defaultColumns()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := Table(tt.obj, false, now)
			if err != nil {
				t.Fatalf("Table: %v", err)
			}
			if len(table.Rows) != 0 {
				t.Errorf("got %d rows, want none", len(table.Rows))
			}
			if !reflect.DeepEqual(table.ColumnDefinitions, tt.want) {
				t.Errorf("columns: got %q, want %q", columnNames(table.ColumnDefinitions), columnNames(tt.want))
			}
			// kubectl expects "rows": [] rather than null.
			raw, err := json.Marshal(table)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			if !bytes.Contains(raw, []byte(`"rows":[]`)) {
				t.Errorf("encoded: got %s, want \"rows\":[]", raw)
			}
		})
	}
}

func TestTableRejects(t *testing.T) {
	tests := []struct {
		name string
		obj  runtime.Object
	}{
		{"nil", nil},
		{"nil single object", (*corev1.Pod)(nil)},
		{"object without metadata", &metav1.Status{}},
		{"list item without metadata", &metav1.List{Items: []runtime.RawExtension{{Raw: []byte(`{}`)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if table, err := Table(tt.obj, false, now); err == nil {
				t.Errorf("Table: got %+v, want an error", table)
			}
		})
	}
}

func TestNoHeaders(t *testing.T) {
	for _, noHeaders := range []bool{false, true} {
		table, err := Table(&corev1.PodList{Items: []corev1.Pod{richPod()}}, noHeaders, now)
		if err != nil {
			t.Fatalf("Table: %v", err)
		}
		if got := table.ColumnDefinitions != nil; got == noHeaders {
			t.Errorf("noHeaders=%v: got column definitions %v", noHeaders, got)
		}
		if got, want := len(table.Rows[0].Cells), 9; got != want {
			t.Errorf("noHeaders=%v: got %d cells, want %d", noHeaders, got, want)
		}
	}
}

func TestTableMeta(t *testing.T) {
	list, err := Table(&corev1.PodList{ListMeta: listMeta()}, false, now)
	if err != nil {
		t.Fatalf("Table(list): %v", err)
	}
	if list.ResourceVersion != "1000" || list.Continue != "next-page" || list.RemainingItemCount == nil || *list.RemainingItemCount != 7 {
		t.Errorf("list table metadata: got %+v, want resourceVersion 1000, continue next-page, remainingItemCount 7", list.ListMeta)
	}
	if got, want := list.APIVersion+" "+list.Kind, "meta.k8s.io/v1 Table"; got != want {
		t.Errorf("type: got %q, want %q", got, want)
	}

	pod := richPod()
	single, err := Table(&pod, false, now)
	if err != nil {
		t.Fatalf("Table(object): %v", err)
	}
	if single.ResourceVersion != "42" || single.Continue != "" {
		t.Errorf("object table metadata: got %+v, want resourceVersion 42 only", single.ListMeta)
	}
	if got := len(single.Rows); got != 1 {
		t.Errorf("got %d rows, want 1", got)
	}
}

// TestEventAPIsPrintAlike checks that an events.k8s.io/v1 Event prints as
// the core Event it converts to.
func TestEventAPIsPrintAlike(t *testing.T) {
	core, err := Table(&corev1.EventList{Items: []corev1.Event{richCoreEvent()}}, false, now)
	if err != nil {
		t.Fatalf("Table(core): %v", err)
	}
	events, err := Table(&eventsv1.EventList{Items: []eventsv1.Event{richEventsEvent()}}, false, now)
	if err != nil {
		t.Fatalf("Table(events.k8s.io): %v", err)
	}
	if !reflect.DeepEqual(core.ColumnDefinitions, events.ColumnDefinitions) {
		t.Errorf("columns differ:\ncore   %q\nevents %q", columnNames(core.ColumnDefinitions), columnNames(events.ColumnDefinitions))
	}
	if !reflect.DeepEqual(core.Rows[0].Cells, events.Rows[0].Cells) {
		t.Errorf("cells differ:\ncore   %q\nevents %q", core.Rows[0].Cells, events.Rows[0].Cells)
	}
}

func TestEventTimes(t *testing.T) {
	tests := []struct {
		name                string
		event               corev1.Event
		wantLast, wantFirst string
		wantCount           int64
	}{
		{
			name:     "legacy timestamps and count",
			event:    corev1.Event{FirstTimestamp: ago(time.Hour), LastTimestamp: ago(time.Minute), Count: 4},
			wantLast: "60s", wantFirst: "60m", wantCount: 4,
		},
		{
			name:     "new API singleton: eventTime, no count",
			event:    corev1.Event{EventTime: microAgo(30 * time.Second)},
			wantLast: "30s", wantFirst: "30s", wantCount: 1,
		},
		{
			name: "new API series",
			event: corev1.Event{EventTime: microAgo(2 * time.Hour),
				Series: &corev1.EventSeries{Count: 9, LastObservedTime: microAgo(3 * time.Minute)}},
			wantLast: "3m", wantFirst: "120m", wantCount: 9,
		},
		{
			name:     "no times at all",
			event:    corev1.Event{},
			wantLast: "<unknown>", wantFirst: "<unknown>", wantCount: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := Table(&tt.event, false, now)
			if err != nil {
				t.Fatalf("Table: %v", err)
			}
			c := table.Rows[0].Cells
			got := []any{c[0], c[7], c[8]}
			want := []any{tt.wantLast, tt.wantFirst, tt.wantCount}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("LAST SEEN, FIRST SEEN, COUNT: got %v, want %v", got, want)
			}
		})
	}
}

func columnNames(cols []metav1.TableColumnDefinition) []string {
	var names []string
	for _, c := range cols {
		names = append(names, c.Name)
	}
	return names
}

func podTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "web", Image: "nginx:1.27"},
			{Name: "metrics", Image: "prom/exporter:v2"},
		}},
	}
}

func richPod() corev1.Pod {
	return corev1.Pod{
		ObjectMeta: objectMeta("default", "web-5d4f8-abcde", 2*time.Hour+30*time.Minute),
		Spec: corev1.PodSpec{
			NodeName:       "node-1",
			Containers:     []corev1.Container{{Name: "web", Image: "nginx:1.27"}, {Name: "metrics", Image: "prom/exporter:v2"}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "example.com/lb-ready"}, {ConditionType: "example.com/dns-ready"}},
		},
		Status: corev1.PodStatus{
			Phase:             corev1.PodRunning,
			PodIP:             "10.244.1.7",
			PodIPs:            []corev1.PodIP{{IP: "10.244.1.7"}, {IP: "fd00::7"}},
			NominatedNodeName: "node-2",
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionFalse},
				{Type: "example.com/lb-ready", Status: corev1.ConditionTrue},
				{Type: "example.com/dns-ready", Status: corev1.ConditionFalse},
			},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "web", Ready: true, RestartCount: 1, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ago(time.Hour)}},
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", FinishedAt: ago(time.Hour)}}},
				{Name: "metrics", RestartCount: 2, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, FinishedAt: ago(90 * time.Second)}}},
			},
		},
	}
}

func richNode() corev1.Node {
	n := corev1.Node{
		ObjectMeta: objectMeta("", "node-1", 9*24*time.Hour),
		Spec:       corev1.NodeSpec{Unschedulable: true},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeHostName, Address: "node-1"},
				{Type: corev1.NodeInternalIP, Address: "192.168.1.10"},
				{Type: corev1.NodeInternalIP, Address: "fd00::10"},
				{Type: corev1.NodeExternalIP, Address: "203.0.113.10"},
			},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:          "v1.33.1",
				OSImage:                 "Debian GNU/Linux 12 (bookworm)",
				KernelVersion:           "6.1.0-18-amd64",
				ContainerRuntimeVersion: "containerd://1.7.13",
			},
		},
	}
	n.Labels = map[string]string{"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "etcd"}
	return n
}

func richCoreEvent() corev1.Event {
	return corev1.Event{
		ObjectMeta: objectMeta("default", "web-5d4f8-abcde.17d2a", time.Hour),
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", Namespace: "default", Name: "web-5d4f8-abcde", APIVersion: "v1", FieldPath: "spec.containers{metrics}",
		},
		Reason:         "BackOff",
		Message:        "  Back-off restarting failed container metrics\n",
		Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: ago(50 * time.Minute),
		LastTimestamp:  ago(2 * time.Minute),
		Count:          12,
		Type:           corev1.EventTypeWarning,
	}
}

// richEventsEvent is richCoreEvent as events.k8s.io/v1 spells it.
func richEventsEvent() eventsv1.Event {
	e := richCoreEvent()
	return eventsv1.Event{
		ObjectMeta:               e.ObjectMeta,
		Regarding:                e.InvolvedObject,
		Reason:                   e.Reason,
		Note:                     e.Message,
		DeprecatedSource:         e.Source,
		DeprecatedFirstTimestamp: e.FirstTimestamp,
		DeprecatedLastTimestamp:  e.LastTimestamp,
		DeprecatedCount:          e.Count,
		Type:                     e.Type,
	}
}

func richSubjects() []rbacv1.Subject {
	return []rbacv1.Subject{
		{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"},
		{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"},
		{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:masters"},
		{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: "deployer"},
		{Kind: "Robot", Name: "r2"},
	}
}
