package kinds

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// newDeployment is what `kubectl create deployment web --image=nginx` sends.
func newDeployment(t *testing.T) *appsv1.Deployment {
	return fromYAML[appsv1.Deployment](t, `
metadata: {name: web, namespace: default, labels: {app: web}}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx
`)
}

func validDeployment(t *testing.T) *appsv1.Deployment {
	d := newDeployment(t)
	DefaultDeployment(d)
	return d
}

// TestDefaultDeploymentMatchesKube compares with the spec of
// `kubectl create deployment web --image=nginx --dry-run=server -o yaml`.
func TestDefaultDeploymentMatchesKube(t *testing.T) {
	got := validDeployment(t)
	want := fromYAML[appsv1.Deployment](t, `
metadata: {name: web, namespace: default, labels: {app: web}}
spec:
  progressDeadlineSeconds: 600
  replicas: 1
  revisionHistoryLimit: 10
  selector:
    matchLabels:
      app: web
  strategy:
    rollingUpdate:
      maxSurge: 25%
      maxUnavailable: 25%
    type: RollingUpdate
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - image: nginx
        imagePullPolicy: Always
        name: nginx
        resources: {}
        terminationMessagePath: /dev/termination-log
        terminationMessagePolicy: File
      dnsPolicy: ClusterFirst
      restartPolicy: Always
      schedulerName: default-scheduler
      securityContext: {}
      terminationGracePeriodSeconds: 30
`)
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("DefaultDeployment (-want +got):\n%s", cmp.Diff(want, got))
	}
	again := got.DeepCopy()
	DefaultDeployment(again)
	if !equality.Semantic.DeepEqual(got, again) {
		t.Errorf("second DefaultDeployment changed it:\n%s", cmp.Diff(got, again))
	}
}

func TestDefaultDeploymentKeepsSetValues(t *testing.T) {
	d := newDeployment(t)
	replicas, history := int32(0), int32(0)
	d.Spec.Replicas, d.Spec.RevisionHistoryLimit = &replicas, &history
	d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
	DefaultDeployment(d)
	if *d.Spec.Replicas != 0 || *d.Spec.RevisionHistoryLimit != 0 {
		t.Errorf("replicas %d, revisionHistoryLimit %d, want both kept at 0", *d.Spec.Replicas, *d.Spec.RevisionHistoryLimit)
	}
	if d.Spec.Strategy.RollingUpdate != nil {
		t.Errorf("Recreate strategy got rollingUpdate %+v", d.Spec.Strategy.RollingUpdate)
	}
	DefaultDeployment(nil)
}

func TestValidateDeployment(t *testing.T) {
	intOrString := func(s string) *intstr.IntOrString { v := intstr.Parse(s); return &v }
	for _, tc := range []struct {
		name   string
		mutate func(d *appsv1.Deployment)
		want   []string
	}{
		{"valid", func(d *appsv1.Deployment) {}, nil},
		{"Recreate", func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		}, nil},
		{"integer surge and unavailable", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate.MaxSurge, d.Spec.Strategy.RollingUpdate.MaxUnavailable = intOrString("1"), intOrString("0")
		}, nil},
		{"negative replicas", func(d *appsv1.Deployment) { r := int32(-1); d.Spec.Replicas = &r },
			[]string{e("spec.replicas", invalid)}},
		{"selector missing", func(d *appsv1.Deployment) { d.Spec.Selector = nil },
			[]string{e("spec.selector", required), e("spec.template.metadata.labels", invalid)}},
		{"selector empty", func(d *appsv1.Deployment) { d.Spec.Selector.MatchLabels = nil },
			[]string{e("spec.selector", invalid)}},
		{"selector does not match template", func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "api"} },
			[]string{e("spec.template.metadata.labels", invalid)}},
		{"template label invalid", func(d *appsv1.Deployment) { d.Spec.Template.Labels["bad key"] = "x" },
			[]string{e("spec.template.labels", invalid)}},
		{"template without containers", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers = nil },
			[]string{e("spec.template.spec.containers", required)}},
		{"template restartPolicy Never", func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			[]string{e("spec.template.spec.restartPolicy", notSupported)}},
		{"template activeDeadlineSeconds", func(d *appsv1.Deployment) { d.Spec.Template.Spec.ActiveDeadlineSeconds = int64Ptr(60) },
			[]string{e("spec.template.spec.activeDeadlineSeconds", forbidden)}},
		{"strategy type unknown", func(d *appsv1.Deployment) { d.Spec.Strategy.Type = "BlueGreen" },
			[]string{e("spec.strategy", notSupported)}},
		{"rollingUpdate with Recreate", func(d *appsv1.Deployment) { d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType },
			[]string{e("spec.strategy.rollingUpdate", forbidden)}},
		{"RollingUpdate without rollingUpdate", func(d *appsv1.Deployment) { d.Spec.Strategy.RollingUpdate = nil },
			[]string{e("spec.strategy.rollingUpdate", required)}},
		{"surge and unavailable both zero", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate.MaxSurge, d.Spec.Strategy.RollingUpdate.MaxUnavailable = intOrString("0%"), intOrString("0")
		}, []string{e("spec.strategy.rollingUpdate.maxUnavailable", invalid)}},
		{"maxUnavailable above 100%", func(d *appsv1.Deployment) { d.Spec.Strategy.RollingUpdate.MaxUnavailable = intOrString("150%") },
			[]string{e("spec.strategy.rollingUpdate.maxUnavailable", invalid)}},
		{"maxSurge not a percentage", func(d *appsv1.Deployment) { d.Spec.Strategy.RollingUpdate.MaxSurge = intOrString("half") },
			[]string{e("spec.strategy.rollingUpdate.maxSurge", invalid)}},
		{"maxSurge negative", func(d *appsv1.Deployment) { d.Spec.Strategy.RollingUpdate.MaxSurge = intOrString("-1") },
			[]string{e("spec.strategy.rollingUpdate.maxSurge", invalid)}},
		{"minReadySeconds negative", func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = -1 },
			[]string{e("spec.minReadySeconds", invalid)}},
		{"revisionHistoryLimit negative", func(d *appsv1.Deployment) { v := int32(-1); d.Spec.RevisionHistoryLimit = &v },
			[]string{e("spec.revisionHistoryLimit", invalid)}},
		{"progress deadline not above minReadySeconds", func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 600 },
			[]string{e("spec.progressDeadlineSeconds", invalid)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := validDeployment(t)
			tc.mutate(d)
			checkErrs(t, ValidateDeployment(d, nil), tc.want...)
		})
	}
}

func TestValidateDeploymentMessages(t *testing.T) {
	d := validDeployment(t)
	d.Spec.Template.Labels = map[string]string{"app": "api"}
	checkDetail(t, ValidateDeployment(d, nil), "spec.template.metadata.labels", "`selector` does not match template `labels`")
	d = validDeployment(t)
	d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
	checkDetail(t, ValidateDeployment(d, nil), "spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'")
}

func TestValidateDeploymentUpdate(t *testing.T) {
	old := validDeployment(t)
	scaled := old.DeepCopy()
	three := int32(3)
	scaled.Spec.Replicas = &three
	scaled.Spec.Template.Spec.Containers[0].Image = "nginx:1.27"
	checkErrs(t, ValidateDeployment(scaled, old))

	reselected := old.DeepCopy()
	reselected.Spec.Selector.MatchLabels["tier"] = "web"
	reselected.Spec.Template.Labels["tier"] = "web"
	errs := ValidateDeployment(reselected, old)
	checkErrs(t, errs, e("spec.selector", invalid))
	checkDetail(t, errs, "spec.selector", "field is immutable")
}

func TestValidateDeploymentStatusUpdate(t *testing.T) {
	two := int32(2)
	for _, tc := range []struct {
		name   string
		old    func(s *appsv1.DeploymentStatus)
		mutate func(s *appsv1.DeploymentStatus)
		want   []string
	}{
		{"progressing", nil, func(s *appsv1.DeploymentStatus) {
			s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas = 2, 3, 3, 2, 2
		}, nil},
		{"negative unavailableReplicas", nil, func(s *appsv1.DeploymentStatus) { s.UnavailableReplicas = -1 },
			[]string{e("status.unavailableReplicas", invalid)}},
		{"more ready than replicas", nil, func(s *appsv1.DeploymentStatus) { s.Replicas, s.ReadyReplicas = 1, 2 },
			[]string{e("status.readyReplicas", invalid)}},
		{"more available than ready", nil, func(s *appsv1.DeploymentStatus) { s.Replicas, s.ReadyReplicas, s.AvailableReplicas = 3, 1, 2 },
			[]string{e("status.availableReplicas", invalid)}},
		{"collisionCount decremented", func(s *appsv1.DeploymentStatus) { s.CollisionCount = &two },
			func(s *appsv1.DeploymentStatus) { one := int32(1); s.CollisionCount = &one },
			[]string{e("status.collisionCount", invalid)}},
		{"collisionCount cleared", func(s *appsv1.DeploymentStatus) { s.CollisionCount = &two },
			func(s *appsv1.DeploymentStatus) { s.CollisionCount = nil },
			[]string{e("status.collisionCount", invalid)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := validDeployment(t)
			if tc.old != nil {
				tc.old(&old.Status)
			}
			d := old.DeepCopy()
			tc.mutate(&d.Status)
			checkErrs(t, ValidateDeploymentStatusUpdate(d, old), tc.want...)
		})
	}
}
