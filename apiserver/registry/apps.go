package registry

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/trustplane/trustplane/apiserver/kinds"
)

// ScaleKind is the kind of the scale subresources, autoscaling/v1 Scale.
var ScaleKind = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

// appsResources are the kinds of apps/v1.
func appsResources() []*Resource {
	apps := appsv1.SchemeGroupVersion
	return []*Resource{
		{
			GVR: apps.WithResource("deployments"), Kind: "Deployment", Singular: "deployment",
			Namespaced: true, ShortNames: []string{"deploy"}, Categories: []string{"all"},
			TracksGeneration: true,
			NewObject:        func() runtime.Object { return &appsv1.Deployment{} },
			NewList:          func() runtime.Object { return &appsv1.DeploymentList{} },
			NameValidator:    apimachineryvalidation.NameIsDNSSubdomain,
			Defaults:         func(obj runtime.Object) { kinds.DefaultDeployment(obj.(*appsv1.Deployment)) },
			PrepareCreate:    func(obj runtime.Object) { obj.(*appsv1.Deployment).Status = appsv1.DeploymentStatus{} },
			Validate:         typed(kinds.ValidateDeployment),
			ValidateStatus:   typed(kinds.ValidateDeploymentStatusUpdate),
			Subresources: []Subresource{
				{Name: "status", Kind: apps.WithKind("Deployment"), Verbs: statusVerbs},
				{Name: "scale", Kind: ScaleKind, Verbs: metav1.Verbs{"get", "patch", "update"}},
			},
		},
		{
			GVR: apps.WithResource("replicasets"), Kind: "ReplicaSet", Singular: "replicaset",
			Namespaced: true, ShortNames: []string{"rs"}, Categories: []string{"all"},
			TracksGeneration: true,
			NewObject:        func() runtime.Object { return &appsv1.ReplicaSet{} },
			NewList:          func() runtime.Object { return &appsv1.ReplicaSetList{} },
			NameValidator:    apimachineryvalidation.NameIsDNSSubdomain,
			Defaults:         func(obj runtime.Object) { kinds.DefaultReplicaSet(obj.(*appsv1.ReplicaSet)) },
			PrepareCreate:    func(obj runtime.Object) { obj.(*appsv1.ReplicaSet).Status = appsv1.ReplicaSetStatus{} },
			Validate:         typed(kinds.ValidateReplicaSet),
			ValidateStatus:   typed(kinds.ValidateReplicaSetStatusUpdate),
			Fields:           func(obj runtime.Object) fields.Set { return kinds.ReplicaSetFields(obj.(*appsv1.ReplicaSet)) },
			Subresources: []Subresource{
				{Name: "status", Kind: apps.WithKind("ReplicaSet"), Verbs: statusVerbs},
				{Name: "scale", Kind: ScaleKind, Verbs: metav1.Verbs{"get", "patch", "update"}},
			},
		},
		{
			GVR: apps.WithResource("statefulsets"), Kind: "StatefulSet", Singular: "statefulset",
			Namespaced: true, ShortNames: []string{"sts"}, Categories: []string{"all"},
			TracksGeneration: true,
			NewObject:        func() runtime.Object { return &appsv1.StatefulSet{} },
			NewList:          func() runtime.Object { return &appsv1.StatefulSetList{} },
			NameValidator:    apimachineryvalidation.NameIsDNSSubdomain,
			Defaults:         func(obj runtime.Object) { kinds.DefaultStatefulSet(obj.(*appsv1.StatefulSet)) },
			PrepareCreate:    func(obj runtime.Object) { obj.(*appsv1.StatefulSet).Status = appsv1.StatefulSetStatus{} },
			Validate:         typed(kinds.ValidateStatefulSet),
			ValidateStatus:   typed(kinds.ValidateStatefulSetStatusUpdate),
			Subresources: []Subresource{
				{Name: "status", Kind: apps.WithKind("StatefulSet"), Verbs: statusVerbs},
				{Name: "scale", Kind: ScaleKind, Verbs: metav1.Verbs{"get", "patch", "update"}},
			},
		},
		{
			GVR: apps.WithResource("controllerrevisions"), Kind: "ControllerRevision", Singular: "controllerrevision",
			Namespaced:    true,
			NewObject:     func() runtime.Object { return &appsv1.ControllerRevision{} },
			NewList:       func() runtime.Object { return &appsv1.ControllerRevisionList{} },
			NameValidator: apimachineryvalidation.NameIsDNSSubdomain,
			Validate:      typed(kinds.ValidateControllerRevision),
		},
		{
			GVR: apps.WithResource("daemonsets"), Kind: "DaemonSet", Singular: "daemonset",
			Namespaced: true, ShortNames: []string{"ds"}, Categories: []string{"all"},
			TracksGeneration: true,
			NewObject:        func() runtime.Object { return &appsv1.DaemonSet{} },
			NewList:          func() runtime.Object { return &appsv1.DaemonSetList{} },
			NameValidator:    apimachineryvalidation.NameIsDNSSubdomain,
			Defaults:         func(obj runtime.Object) { kinds.DefaultDaemonSet(obj.(*appsv1.DaemonSet)) },
			PrepareCreate:    func(obj runtime.Object) { obj.(*appsv1.DaemonSet).Status = appsv1.DaemonSetStatus{} },
			Validate:         typed(kinds.ValidateDaemonSet),
			ValidateStatus:   typed(kinds.ValidateDaemonSetStatusUpdate),
			Subresources: []Subresource{
				{Name: "status", Kind: apps.WithKind("DaemonSet"), Verbs: statusVerbs},
			},
		},
	}
}
