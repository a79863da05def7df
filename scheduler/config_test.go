package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// summary is what a profile runs: its filters in order, and its scores
// with their weights, in order.
func summary(p *Profile) []string {
	var out []string
	for _, f := range p.filters {
		out = append(out, "filter "+f.name)
	}
	for _, s := range p.scorers {
		out = append(out, fmt.Sprintf("score %s %d", s.name, s.weight))
	}
	return out
}

const configHeader = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

// A KubeSchedulerConfiguration changes the default profile as kube's
// would: weights, plugins disabled at multiPoint, filter or score.
func TestParseConfig(t *testing.T) {
	defaults := summary(DefaultProfile())
	without := func(names ...string) []string {
		return slices.DeleteFunc(slices.Clone(defaults), func(s string) bool {
			return slices.ContainsFunc(names, func(n string) bool { return s == n || strings.HasPrefix(s, n+" ") })
		})
	}
	replace := func(old, new string) []string {
		out := slices.Clone(defaults)
		out[slices.Index(out, old)] = new
		return out
	}
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{name: "no profile: kube's defaults", yaml: "", want: defaults},
		{name: "the default profile named, nothing changed", yaml: "profiles:\n- schedulerName: default-scheduler\n", want: defaults},
		{
			name: "a score weight changed in place",
			yaml: "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: ImageLocality\n        weight: 7\n",
			want: replace("score ImageLocality 1", "score ImageLocality 7"),
		},
		{
			name: "re-enabled at multiPoint without a weight: 1, as kube's",
			yaml: "profiles:\n- plugins:\n    multiPoint:\n      enabled:\n      - name: InterPodAffinity\n",
			want: replace("score InterPodAffinity 2", "score InterPodAffinity 1"),
		},
		{
			name: "disabled at multiPoint: neither filter nor score",
			yaml: "profiles:\n- plugins:\n    multiPoint:\n      disabled:\n      - name: PodTopologySpread\n      - name: VolumeBinding\n",
			want: without("filter PodTopologySpread", "score PodTopologySpread"),
		},
		{
			name: "disabled at score only: it still filters",
			yaml: "profiles:\n- plugins:\n    score:\n      disabled:\n      - name: TaintToleration\n",
			want: without("score TaintToleration"),
		},
		{
			name: "disabled at filter only: it still scores",
			yaml: "profiles:\n- plugins:\n    filter:\n      disabled:\n      - name: NodeAffinity\n",
			want: without("filter NodeAffinity"),
		},
		{
			name: "every score disabled, one enabled again",
			yaml: "profiles:\n- plugins:\n    score:\n      disabled:\n      - name: '*'\n      enabled:\n      - name: NodeResourcesBalancedAllocation\n        weight: 5\n",
			want: append(without("score"), "score NodeResourcesBalancedAllocation 5"),
		},
		{
			name: "JSON, as kube reads it too",
			yaml: `{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [{"plugins": {"score": {"disabled": [{"name": "ImageLocality"}]}}}]}`,
			want: without("score ImageLocality"),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := configHeader + tc.yaml
			if strings.HasPrefix(tc.yaml, "{") {
				data = tc.yaml
			}
			c, err := ParseConfig([]byte(data))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, summary(c.Profile)); diff != "" {
				t.Errorf("profile (-want +got):\n%s", diff)
			}
		})
	}
}

// What trustplane cannot honour is refused with the reason, never
// ignored: unknown fields and plugins, plugins it does not run, other
// profiles, settings out of range.
func TestParseConfigRefused(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{name: "unknown field", yaml: configHeader + "profiles:\n- schedulerName: default-scheduler\n  plugin: {}\n", want: `unknown field "profiles[0].plugin"`},
		{name: "unknown top-level field", yaml: configHeader + "parallelizm: 4\n", want: `unknown field "parallelizm"`},
		{name: "wrong kind", yaml: "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerPolicy\n", want: `kind "KubeSchedulerPolicy"`},
		{name: "old version", yaml: "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n", want: `apiVersion "kubescheduler.config.k8s.io/v1beta3"`},
		{name: "unknown plugin", yaml: configHeader + "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: NodeResourcesMostAllocated\n", want: `plugins.score.enabled: unknown plugin "NodeResourcesMostAllocated"`},
		{name: "unknown plugin disabled", yaml: configHeader + "profiles:\n- plugins:\n    multiPoint:\n      disabled:\n      - name: Spread\n", want: `plugins.multiPoint.disabled: unknown plugin "Spread"`},
		{name: "a kube plugin trustplane does not run", yaml: configHeader + "profiles:\n- plugins:\n    multiPoint:\n      enabled:\n      - name: VolumeBinding\n", want: "VolumeBinding is not a multiPoint plugin in trustplane's scheduler"},
		{name: "a filter enabled as a score", yaml: configHeader + "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: NodePorts\n", want: "NodePorts is not a score plugin"},
		{name: "a plugin enabled twice", yaml: configHeader + "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: ImageLocality\n      - name: ImageLocality\n        weight: 3\n", want: "plugins.score.enabled: ImageLocality named twice"},
		{name: "negative weight", yaml: configHeader + "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: ImageLocality\n        weight: -1\n", want: "ImageLocality weight -1: must not be negative"},
		{name: "another profile", yaml: configHeader + "profiles:\n- schedulerName: default-scheduler\n- schedulerName: batch\n", want: `profiles[1].schedulerName "batch": trustplane's scheduler runs the default profile only`},
		{name: "the one profile for another scheduler", yaml: configHeader + "profiles:\n- schedulerName: batch\n", want: `profiles[0].schedulerName "batch"`},
		{name: "queue sort disabled with everything", yaml: configHeader + "profiles:\n- plugins:\n    multiPoint:\n      disabled:\n      - name: '*'\n", want: "PrioritySort disabled"},
		{name: "another extension point", yaml: configHeader + "profiles:\n- plugins:\n    preScore:\n      disabled:\n      - name: PodTopologySpread\n", want: "plugins.preScore: trustplane's scheduler is configured through multiPoint, filter and score only"},
		{name: "unsupported plugin args", yaml: configHeader + "profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n    args:\n      minCandidateNodesPercentage: 20\n", want: "arguments of DefaultPreemption are not supported"},
		{name: "System defaulting with constraints", yaml: configHeader + "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultConstraints:\n      - maxSkew: 1\n        topologyKey: zone\n        whenUnsatisfiable: DoNotSchedule\n", want: "defaultConstraints: must be empty when defaultingType is System"},
		{name: "List defaults with a selector", yaml: configHeader + "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultingType: List\n      defaultConstraints:\n      - maxSkew: 1\n        topologyKey: zone\n        whenUnsatisfiable: DoNotSchedule\n        labelSelector: {matchLabels: {app: web}}\n", want: "defaultConstraints[0].labelSelector: must not be set"},
		{name: "List defaults repeated", yaml: configHeader + "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultingType: List\n      defaultConstraints:\n      - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n      - {maxSkew: 2, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n      - {maxSkew: 0, topologyKey: host, whenUnsatisfiable: ScheduleAnyway}\n", want: `defaultConstraints[1]: topologyKey "zone" and whenUnsatisfiable "DoNotSchedule" given twice`},
		{name: "RequestedToCapacityRatio", yaml: configHeader + "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: RequestedToCapacityRatio\n", want: `scoringStrategy.type "RequestedToCapacityRatio": trustplane's scheduler has LeastAllocated and MostAllocated`},
		{name: "resource weight out of range", yaml: configHeader + "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        resources:\n        - name: cpu\n          weight: 101\n", want: "scoringStrategy.resources[0] (cpu): weight 101 not in 1..100"},
		{name: "ignored resources", yaml: configHeader + "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      ignoredResources: [example.com/foo]\n", want: "ignoredResources and ignoredResourceGroups: not supported"},
		{name: "args of another kind", yaml: configHeader + "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      kind: InterPodAffinityArgs\n", want: `kind "InterPodAffinityArgs": want kubescheduler.config.k8s.io/v1, NodeResourcesFitArgs`},
		{name: "unknown field in args", yaml: configHeader + "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args:\n      hardPodAffinityWeigth: 2\n", want: `unknown field "hardPodAffinityWeigth"`},
		{name: "args out of range", yaml: configHeader + "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args:\n      hardPodAffinityWeight: 101\n", want: "hardPodAffinityWeight 101: not in 0..100"},
		{name: "percentage out of range", yaml: configHeader + "percentageOfNodesToScore: 120\n", want: "percentageOfNodesToScore 120: not in 0..100"},
		{name: "initial backoff above the default maximum", yaml: configHeader + "podInitialBackoffSeconds: 20\n", want: "podMaxBackoffSeconds 10s: less than podInitialBackoffSeconds 20s"},
		{name: "extenders", yaml: configHeader + "extenders:\n- urlPrefix: http://127.0.0.1:8888/\n", want: "extenders: not supported"},
		{name: "another lease", yaml: configHeader + "leaderElection:\n  resourceName: my-scheduler\n", want: `leaderElection.resourceName "my-scheduler"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig([]byte(tc.yaml))
			if err == nil {
				t.Fatalf("accepted, profile %v; want an error with %q", summary(c.Profile), tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// The file's other settings reach the scheduler's options; InterPodAffinity's
// arguments reach its score.
func TestParseConfigSettings(t *testing.T) {
	c, err := ParseConfig([]byte(configHeader + `percentageOfNodesToScore: 30
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 20
clientConnection:
  kubeconfig: /etc/trustplane/scheduler.conf
  qps: 100
  burst: 200
leaderElection:
  leaderElect: true
  leaseDuration: 30s
  renewDeadline: 20s
  retryPeriod: 4s
  resourceLock: leases
  resourceName: kube-scheduler
  resourceNamespace: kube-system
profiles:
- schedulerName: default-scheduler
  percentageOfNodesToScore: 40
  pluginConfig:
  - name: InterPodAffinity
    args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: InterPodAffinityArgs
      hardPodAffinityWeight: 0
      ignorePreferredTermsOfExistingPods: true
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Profile.PercentageOfNodesToScore != 40 {
		t.Errorf("percentageOfNodesToScore %d, want the profile's 40", c.Profile.PercentageOfNodesToScore)
	}
	got := fmt.Sprint(c.InitialBackoff, c.MaxBackoff, c.Kubeconfig, c.QPS, c.Burst, *c.LeaderElect, c.LeaseDuration, c.RenewDeadline, c.RetryPeriod)
	if want := fmt.Sprint(2*time.Second, 20*time.Second, "/etc/trustplane/scheduler.conf", float32(100), 200, true, 30*time.Second, 20*time.Second, 4*time.Second); got != want {
		t.Errorf("settings %s, want %s", got, want)
	}
	// With hardPodAffinityWeight 0 and existing pods' preferences
	// ignored, a pod without terms of its own is not scored.
	s := newTestScheduler(nil)
	s.profile = c.Profile
	p := pod("p", "", "")
	cycle := newPodCycle(newPodInfo(p), nil, s.namespaceLabels)
	i := slices.IndexFunc(c.Profile.scorers, func(sc scorer) bool { return sc.name == "InterPodAffinity" })
	if c.Profile.scorers[i].prepare(cycle) {
		t.Errorf("InterPodAffinity scores a pod without terms despite ignorePreferredTermsOfExistingPods")
	}
}

// NodeResourcesFit's scoringStrategy: MostAllocated packs, LeastAllocated
// spreads, each resource by its weight.
func TestFitScoringStrategy(t *testing.T) {
	nodes := []*corev1.Node{node("busy", "4", "8Gi", 110), node("idle", "4", "8Gi", 110)}
	busy := pod("old", "2", "1Gi", onNode("busy"))
	for _, tc := range []struct {
		name, args string
		want       map[string]int64
	}{
		// busy: cpu (2+1)/4, memory (1+1)/8; idle: cpu 1/4, memory 1/8.
		{"kube's default", "", map[string]int64{"busy": (25 + 75) / 2, "idle": (75 + 87) / 2}},
		{"MostAllocated", "scoringStrategy:\n        type: MostAllocated\n", map[string]int64{"busy": (75 + 25) / 2, "idle": (25 + 12) / 2}},
		{"MostAllocated, cpu weighing 3", "scoringStrategy:\n        type: MostAllocated\n        resources:\n        - name: cpu\n          weight: 3\n        - name: memory\n",
			map[string]int64{"busy": (75*3 + 25) / 4, "idle": (25*3 + 12) / 4}},
		{"LeastAllocated, cpu weighing 3", "scoringStrategy:\n        resources:\n        - name: cpu\n          weight: 3\n        - name: memory\n          weight: 1\n",
			map[string]int64{"busy": (25*3 + 75) / 4, "idle": (75*3 + 87) / 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := configHeader
			if tc.args != "" {
				yaml += "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      " + tc.args
			}
			c, err := ParseConfig([]byte(yaml))
			if err != nil {
				t.Fatal(err)
			}
			s := newTestScheduler(nodes, busy)
			s.profile = c.Profile
			if got := runScorer(t, s, "NodeResourcesFit", pod("p", "1", "1Gi"), []string{"busy", "idle"}); !maps.Equal(got, tc.want) {
				t.Errorf("scores %v, want %v", got, tc.want)
			}
		})
	}
}

// NodeResourcesBalancedAllocation's resources: with three, the standard
// deviation of the three fractions; weights other than 1 are refused.
func TestBalancedResources(t *testing.T) {
	gpus := func(n *corev1.Node) { n.Status.Allocatable["example.com/gpu"] = resource.MustParse("4") }
	c, err := ParseConfig([]byte(configHeader + "profiles:\n- pluginConfig:\n  - name: NodeResourcesBalancedAllocation\n    args:\n      resources:\n      - name: cpu\n      - name: memory\n      - name: example.com/gpu\n        weight: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := newTestScheduler([]*corev1.Node{node("a", "4", "8Gi", 110, gpus)})
	s.profile = c.Profile
	withGPU := func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("1")
	}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want int64
	}{
		{pod("even", "1", "2Gi", withGPU), 100},  // 1/4, 2/8, 1/4
		{pod("uneven", "2", "2Gi", withGPU), 88}, // 2/4, 2/8, 1/4: std 0.118
		{pod("no gpu", "2", "2Gi"), 87},          // the gpu not asked for is not counted: |2/4-2/8|/2
	} {
		if got := runScorer(t, s, "NodeResourcesBalancedAllocation", tc.pod, []string{"a"}); got["a"] != tc.want {
			t.Errorf("%s: score %d, want %d", tc.pod.Name, got["a"], tc.want)
		}
	}
	if _, err := ParseConfig([]byte(configHeader + "profiles:\n- pluginConfig:\n  - name: NodeResourcesBalancedAllocation\n    args:\n      resources:\n      - name: cpu\n        weight: 2\n")); err == nil || !strings.Contains(err.Error(), "resources[0] (cpu): weight 2 must be 1") {
		t.Errorf("weight 2: %v, want refused", err)
	}
}

// PodTopologySpread's List defaulting: a pod without constraints of its
// own is held to the configuration's, among the pods that share a
// Service or controller with it; the filter refuses as the pod's own
// constraints would, and a pod that shares nothing is not held.
func TestSpreadListDefaults(t *testing.T) {
	c, err := ParseConfig([]byte(configHeader + "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultingType: List\n      defaultConstraints:\n      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule}\n"))
	if err != nil {
		t.Fatal(err)
	}
	web := labelled("app", "web")
	s := newTestScheduler([]*corev1.Node{node("a", "4", "8Gi", 110), node("b", "4", "8Gi", 110)}, podsOn("a", 2, web)...)
	s.profile = c.Profile
	s.spreadSelector = listersOf(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}}).selector
	for _, tc := range []struct {
		pod  *corev1.Pod
		want map[string]string
	}{
		{pod("web", "", "", web), map[string]string{"a": reasonSpread, "b": ""}},
		{pod("batch", "", "", labelled("app", "batch")), map[string]string{"a": "", "b": ""}},
	} {
		if got := filterReasons(s, tc.pod); !maps.Equal(got, tc.want) {
			t.Errorf("%s: reasons %v, want %v", tc.pod.Name, got, tc.want)
		}
	}
}

// NodeAffinity's addedAffinity: its required terms refuse a node before
// the pod's own, in kube's words; its preferred terms count besides the
// pod's.
func TestAddedAffinity(t *testing.T) {
	c, err := ParseConfig([]byte(configHeader + `profiles:
- pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: pool, operator: In, values: [general]}
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 5
          preference:
            matchExpressions:
            - {key: disk, operator: In, values: [ssd]}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := newTestScheduler([]*corev1.Node{
		node("general", "4", "8Gi", 110, nodeLabelled("pool", "general")),
		node("ssd", "4", "8Gi", 110, nodeLabelled("pool", "general", "disk", "ssd")),
		node("gpu", "4", "8Gi", 110, nodeLabelled("pool", "gpu")),
	})
	s.profile = c.Profile
	want := map[string]string{"general": "", "ssd": "", "gpu": reasonEnforcedAffinity}
	if got := filterReasons(s, pod("p", "", "")); !maps.Equal(got, want) {
		t.Errorf("reasons %v, want %v", got, want)
	}
	if got := runScorer(t, s, "NodeAffinity", pod("p", "", ""), []string{"general", "ssd"}); got["ssd"] != 100 || got["general"] != 0 {
		t.Errorf("scores %v, want ssd 100, general 0", got)
	}
	if _, err := ParseConfig([]byte(configHeader + "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args:\n      addedAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n          nodeSelectorTerms:\n          - matchExpressions:\n            - {key: pool, operator: In}\n")); err == nil || !strings.Contains(err.Error(), "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution") {
		t.Errorf("an In without values: %v, want refused", err)
	}
}
