package kinds_test

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/trustplane/trustplane/apiserver/kinds"
)

// A create as kube-apiserver handles it: defaults first, then validation,
// whose errors become the 422 a client prints.
func Example() {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "api"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx"}}},
			},
		},
	}
	kinds.DefaultDeployment(d)
	fmt.Println(*d.Spec.Replicas, d.Spec.Strategy.RollingUpdate.MaxSurge, d.Spec.Template.Spec.Containers[0].ImagePullPolicy)

	if errs := kinds.ValidateDeployment(d, nil); len(errs) > 0 {
		err := apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, d.Name, errs)
		fmt.Println(err)
	}
	// Output:
	// 1 25% Always
	// Deployment.apps "web" is invalid: spec.template.metadata.labels: Invalid value: {"app":"api"}: `selector` does not match template `labels`
}

// Of a running pod's spec only a few fields may change; the image is one.
func ExampleValidatePod() {
	old := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
	}
	kinds.DefaultPod(old)

	newImage := old.DeepCopy()
	newImage.Spec.Containers[0].Image = "nginx:1.28"
	fmt.Println(len(kinds.ValidatePod(newImage, old)))

	newCommand := old.DeepCopy()
	newCommand.Spec.Containers[0].Command = []string{"sleep", "3600"}
	errs := kinds.ValidatePod(newCommand, old)
	fmt.Println(errs[0].Field, errs[0].Type)
	// Output:
	// 0
	// spec Forbidden
}
