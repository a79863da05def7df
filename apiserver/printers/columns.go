package printers

import (
	appsv1beta1 "k8s.io/api/apps/v1beta1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	extensionsv1beta1 "k8s.io/api/extensions/v1beta1"
	rbacv1beta1 "k8s.io/api/rbac/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The GroupKinds this package prints with their own columns.
var (
	gkNamespace          = schema.GroupKind{Kind: "Namespace"}
	gkPod                = schema.GroupKind{Kind: "Pod"}
	gkNode               = schema.GroupKind{Kind: "Node"}
	gkSecret             = schema.GroupKind{Kind: "Secret"}
	gkConfigMap          = schema.GroupKind{Kind: "ConfigMap"}
	gkServiceAccount     = schema.GroupKind{Kind: "ServiceAccount"}
	gkEvent              = schema.GroupKind{Kind: "Event"}
	gkEventsEvent        = schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}
	gkReplicaSet         = schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}
	gkDeployment         = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	gkStatefulSet        = schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	gkDaemonSet          = schema.GroupKind{Group: "apps", Kind: "DaemonSet"}
	gkControllerRevision = schema.GroupKind{Group: "apps", Kind: "ControllerRevision"}
	gkLease              = schema.GroupKind{Group: "coordination.k8s.io", Kind: "Lease"}
	gkCSR                = schema.GroupKind{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}
	gkService            = schema.GroupKind{Kind: "Service"}
	gkEndpointSlice      = schema.GroupKind{Group: "discovery.k8s.io", Kind: "EndpointSlice"}
	gkRole               = schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "Role"}
	gkClusterRole        = schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}
	gkRoleBinding        = schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}
	gkClusterRoleBinding = schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}
)

// Columns returns the column definitions for a kind (by GroupKind), and
// whether the kind is known. For a kind it does not know it returns the
// default columns kube-apiserver gives any resource (Name, Created At) and
// false. The slice is new on every call; the caller may keep or change it.
func Columns(gk schema.GroupKind) ([]metav1.TableColumnDefinition, bool) {
	// Descriptions are the API field docs kube-apiserver uses, taken from the
	// same API versions it takes them from (extensions/v1beta1 for
	// ReplicaSet and Deployment, rbac/v1beta1 for bindings), so that the
	// text matches byte for byte.
	switch gk {
	case gkNamespace:
		return []metav1.TableColumnDefinition{
			nameColumn(),
			{Name: "Status", Type: "string", Description: "The status of the namespace"},
			ageColumn(),
		}, true
	case gkPod:
		return []metav1.TableColumnDefinition{
			nameColumn(),
			{Name: "Ready", Type: "string", Description: "The aggregate readiness state of this pod for accepting traffic."},
			{Name: "Status", Type: "string", Description: "The aggregate status of the containers in this pod."},
			{Name: "Restarts", Type: "string", Description: "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."},
			ageColumn(),
			{Name: "IP", Type: "string", Priority: 1, Description: corev1.PodStatus{}.SwaggerDoc()["podIP"]},
			{Name: "Node", Type: "string", Priority: 1, Description: corev1.PodSpec{}.SwaggerDoc()["nodeName"]},
			{Name: "Nominated Node", Type: "string", Priority: 1, Description: corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"]},
			{Name: "Readiness Gates", Type: "string", Priority: 1, Description: corev1.PodSpec{}.SwaggerDoc()["readinessGates"]},
		}, true
	case gkNode:
		return []metav1.TableColumnDefinition{
			nameColumn(),
			{Name: "Status", Type: "string", Description: "The status of the node"},
			{Name: "Roles", Type: "string", Description: "The roles of the node"},
			ageColumn(),
			{Name: "Version", Type: "string", Description: corev1.NodeSystemInfo{}.SwaggerDoc()["kubeletVersion"]},
			{Name: "Internal-IP", Type: "string", Priority: 1, Description: corev1.NodeStatus{}.SwaggerDoc()["addresses"]},
			{Name: "External-IP", Type: "string", Priority: 1, Description: corev1.NodeStatus{}.SwaggerDoc()["addresses"]},
			{Name: "OS-Image", Type: "string", Priority: 1, Description: corev1.NodeSystemInfo{}.SwaggerDoc()["osImage"]},
			{Name: "Kernel-Version", Type: "string", Priority: 1, Description: corev1.NodeSystemInfo{}.SwaggerDoc()["kernelVersion"]},
			{Name: "Container-Runtime", Type: "string", Priority: 1, Description: corev1.NodeSystemInfo{}.SwaggerDoc()["containerRuntimeVersion"]},
		}, true
	case gkSecret:
		return []metav1.TableColumnDefinition{
			nameColumn(),
			{Name: "Type", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["type"]},
			{Name: "Data", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["data"]},
			ageColumn(),
		}, true
	case gkConfigMap:
		return []metav1.TableColumnDefinition{
			nameColumn(),
			{Name: "Data", Type: "string", Description: corev1.ConfigMap{}.SwaggerDoc()["data"]},
			ageColumn(),
		}, true
	case gkServiceAccount:
		return []metav1.TableColumnDefinition{
			nameColumn(),
			{Name: "Secrets", Type: "string", Description: corev1.ServiceAccount{}.SwaggerDoc()["secrets"]},
			ageColumn(),
		}, true
	case gkEvent, gkEventsEvent:
		// kube-apiserver serves events.k8s.io/v1 Events from the core Event
		// storage, so both print with the core columns.
		return []metav1.TableColumnDefinition{
			{Name: "Last Seen", Type: "string", Description: corev1.Event{}.SwaggerDoc()["lastTimestamp"]},
			{Name: "Type", Type: "string", Description: corev1.Event{}.SwaggerDoc()["type"]},
			{Name: "Reason", Type: "string", Description: corev1.Event{}.SwaggerDoc()["reason"]},
			{Name: "Object", Type: "string", Description: corev1.Event{}.SwaggerDoc()["involvedObject"]},
			{Name: "Subobject", Type: "string", Priority: 1, Description: corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]},
			{Name: "Source", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["source"]},
			{Name: "Message", Type: "string", Description: corev1.Event{}.SwaggerDoc()["message"]},
			{Name: "First Seen", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["firstTimestamp"]},
			{Name: "Count", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["count"]},
			{Name: "Name", Type: "string", Priority: 1, Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		}, true
	case gkReplicaSet:
		return []metav1.TableColumnDefinition{
			nameColumn(),
			{Name: "Desired", Type: "integer", Description: extensionsv1beta1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]},
			{Name: "Current", Type: "integer", Description: extensionsv1beta1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]},
			{Name: "Ready", Type: "integer", Description: extensionsv1beta1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]},
			ageColumn(),
			containersColumn(),
			imagesColumn(),
			{Name: "Selector", Type: "string", Priority: 1, Description: extensionsv1beta1.ReplicaSetSpec{}.SwaggerDoc()["selector"]},
		}, true
	case gkDeployment:
		return []metav1.TableColumnDefinition{
			nameColumn(),
			{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"},
			{Name: "Up-to-date", Type: "string", Description: extensionsv1beta1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]},
			{Name: "Available", Type: "string", Description: extensionsv1beta1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]},
			ageColumn(),
			containersColumn(),
			imagesColumn(),
			{Name: "Selector", Type: "string", Priority: 1, Description: extensionsv1beta1.DeploymentSpec{}.SwaggerDoc()["selector"]},
		}, true
	case gkStatefulSet:
		return []metav1.TableColumnDefinition{
			nameColumn(),
			{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"},
			ageColumn(),
			containersColumn(),
			imagesColumn(),
		}, true
	case gkDaemonSet:
		return []metav1.TableColumnDefinition{
			nameColumn(),
			{Name: "Desired", Type: "integer", Description: extensionsv1beta1.DaemonSetStatus{}.SwaggerDoc()["desiredNumberScheduled"]},
			{Name: "Current", Type: "integer", Description: extensionsv1beta1.DaemonSetStatus{}.SwaggerDoc()["currentNumberScheduled"]},
			{Name: "Ready", Type: "integer", Description: extensionsv1beta1.DaemonSetStatus{}.SwaggerDoc()["numberReady"]},
			{Name: "Up-to-date", Type: "integer", Description: extensionsv1beta1.DaemonSetStatus{}.SwaggerDoc()["updatedNumberScheduled"]},
			{Name: "Available", Type: "integer", Description: extensionsv1beta1.DaemonSetStatus{}.SwaggerDoc()["numberAvailable"]},
			{Name: "Node Selector", Type: "string", Description: corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]},
			ageColumn(),
			containersColumn(),
			imagesColumn(),
			{Name: "Selector", Type: "string", Priority: 1, Description: extensionsv1beta1.DaemonSetSpec{}.SwaggerDoc()["selector"]},
		}, true
	case gkControllerRevision:
		return []metav1.TableColumnDefinition{
			nameColumn(),
			{Name: "Controller", Type: "string", Description: "Controller of the object"},
			{Name: "Revision", Type: "string", Description: appsv1beta1.ControllerRevision{}.SwaggerDoc()["revision"]},
			ageColumn(),
		}, true
	case gkService:
		return []metav1.TableColumnDefinition{
			nameColumn(),
			{Name: "Type", Type: "string", Description: corev1.ServiceSpec{}.SwaggerDoc()["type"]},
			{Name: "Cluster-IP", Type: "string", Description: corev1.ServiceSpec{}.SwaggerDoc()["clusterIP"]},
			{Name: "External-IP", Type: "string", Description: corev1.ServiceSpec{}.SwaggerDoc()["externalIPs"]},
			{Name: "Port(s)", Type: "string", Description: corev1.ServiceSpec{}.SwaggerDoc()["ports"]},
			ageColumn(),
			{Name: "Selector", Type: "string", Priority: 1, Description: corev1.ServiceSpec{}.SwaggerDoc()["selector"]},
		}, true
	case gkEndpointSlice:
		return []metav1.TableColumnDefinition{
			nameColumn(),
			{Name: "AddressType", Type: "string", Description: discoveryv1.EndpointSlice{}.SwaggerDoc()["addressType"]},
			{Name: "Ports", Type: "string", Description: discoveryv1.EndpointSlice{}.SwaggerDoc()["ports"]},
			{Name: "Endpoints", Type: "string", Description: discoveryv1.EndpointSlice{}.SwaggerDoc()["endpoints"]},
			ageColumn(),
		}, true
	case gkLease:
		return []metav1.TableColumnDefinition{
			nameColumn(),
			{Name: "Holder", Type: "string", Description: coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]},
			ageColumn(),
		}, true
	case gkCSR:
		return []metav1.TableColumnDefinition{
			nameColumn(),
			ageColumn(),
			{Name: "SignerName", Type: "string", Description: certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["signerName"]},
			{Name: "Requestor", Type: "string", Description: "Name of the user which made this request."},
			{Name: "RequestedDuration", Type: "string", Description: certificatesv1.CertificateSigningRequestSpec{}.SwaggerDoc()["expirationSeconds"]},
			{Name: "Condition", Type: "string", Description: "State of the request."},
		}, true
	case gkRole, gkClusterRole:
		// kube-apiserver has no printer for these and uses its default table.
		return defaultColumns(), true
	case gkRoleBinding:
		return bindingColumns(rbacv1beta1.RoleBinding{}.SwaggerDoc()["roleRef"], "roleBinding"), true
	case gkClusterRoleBinding:
		return bindingColumns(rbacv1beta1.ClusterRoleBinding{}.SwaggerDoc()["roleRef"], "clusterRoleBinding"), true
	}
	return defaultColumns(), false
}

func nameColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}
}

// ageColumn is declared "string", not "date": kube sends the age already
// rendered ("5m"), and kubectl prints it as it comes.
func ageColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
}

func containersColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."}
}

func imagesColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."}
}

func bindingColumns(roleRefDoc, noun string) []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Role", Type: "string", Description: roleRefDoc},
		ageColumn(),
		{Name: "Users", Type: "string", Priority: 1, Description: "Users in the " + noun},
		{Name: "Groups", Type: "string", Priority: 1, Description: "Groups in the " + noun},
		{Name: "ServiceAccounts", Type: "string", Priority: 1, Description: "ServiceAccounts in the " + noun},
	}
}

// defaultColumns are those of k8s.io/apiserver's default table convertor,
// which kube-apiserver uses for every kind without a printer of its own.
func defaultColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
	}
}
