package scheduler

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	configv1 "k8s.io/kube-scheduler/config/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Config is what a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1)
// file sets. Fields the file leaves out are zero (nil), for the caller's
// own defaults and flags to apply.
type Config struct {
	// Profile is the default profile, kube's defaults changed by the
	// file's plugins and pluginConfig.
	Profile *Profile
	// InitialBackoff and MaxBackoff are the queue's backoff
	// (podInitialBackoffSeconds, podMaxBackoffSeconds).
	InitialBackoff, MaxBackoff time.Duration
	// Kubeconfig, QPS and Burst are clientConnection's.
	Kubeconfig string
	QPS        float32
	Burst      int
	// LeaderElect and the durations are leaderElection's.
	LeaderElect                               *bool
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// LoadConfig reads a KubeSchedulerConfiguration file (YAML or JSON).
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseConfig decodes a KubeSchedulerConfiguration strictly: an unknown
// or repeated field, a plugin kube does not have, one trustplane does not
// run, a profile for another scheduler name, or a setting trustplane
// cannot honour is an error, every problem joined, never ignored. What
// tunes only kube-scheduler's own machinery is accepted and changes
// nothing: parallelism (trustplane filters in one goroutine),
// delayCacheUntilActive (it builds its cache when it starts leading),
// enableProfiling and enableContentionProfiling (it serves no profiles).
func ParseConfig(data []byte) (*Config, error) {
	var kc configv1.KubeSchedulerConfiguration
	if err := decodeStrict(data, &kc); err != nil {
		return nil, fmt.Errorf("decode KubeSchedulerConfiguration: %w", err)
	}
	if gv := configv1.SchemeGroupVersion.String(); kc.APIVersion != gv || kc.Kind != "KubeSchedulerConfiguration" {
		return nil, fmt.Errorf("apiVersion %q, kind %q: want %s, KubeSchedulerConfiguration", kc.APIVersion, kc.Kind, gv)
	}
	var errs []error
	c := &Config{}

	pct := kc.PercentageOfNodesToScore
	if len(kc.Profiles) > 1 {
		errs = append(errs, fmt.Errorf("profiles: %d given; trustplane's scheduler runs one profile, %s", len(kc.Profiles), DefaultSchedulerName))
	}
	profile := configv1.KubeSchedulerProfile{}
	for i, p := range kc.Profiles {
		if p.SchedulerName != nil && *p.SchedulerName != DefaultSchedulerName {
			errs = append(errs, fmt.Errorf("profiles[%d].schedulerName %q: trustplane's scheduler runs the default profile only, %s", i, *p.SchedulerName, DefaultSchedulerName))
		}
		profile = p
	}
	if profile.PercentageOfNodesToScore != nil {
		pct = profile.PercentageOfNodesToScore
	}
	p, err := profileFromConfig(profile)
	errs = append(errs, err)
	c.Profile = p
	if pct != nil {
		if *pct < 0 || *pct > 100 {
			errs = append(errs, fmt.Errorf("percentageOfNodesToScore %d: not in 0..100", *pct))
		} else if p != nil {
			p.PercentageOfNodesToScore = int(*pct)
		}
	}

	if v := kc.PodInitialBackoffSeconds; v != nil {
		if *v <= 0 {
			errs = append(errs, fmt.Errorf("podInitialBackoffSeconds %d: must be positive", *v))
		}
		c.InitialBackoff = time.Duration(*v) * time.Second
	}
	if v := kc.PodMaxBackoffSeconds; v != nil {
		c.MaxBackoff = time.Duration(*v) * time.Second
	}
	if initial, most := cmp.Or(c.InitialBackoff, defaultInitialBackoff), cmp.Or(c.MaxBackoff, defaultMaxBackoff); most < initial {
		errs = append(errs, fmt.Errorf("podMaxBackoffSeconds %s: less than podInitialBackoffSeconds %s", most, initial))
	}
	if len(kc.Extenders) > 0 {
		errs = append(errs, errors.New("extenders: not supported by trustplane's scheduler"))
	}

	cc := kc.ClientConnection
	c.Kubeconfig, c.QPS, c.Burst = cc.Kubeconfig, cc.QPS, int(cc.Burst)
	if cc.QPS < 0 || cc.Burst < 0 {
		errs = append(errs, fmt.Errorf("clientConnection qps %g, burst %d: must not be negative", cc.QPS, cc.Burst))
	}
	if cc.ContentType != "" || cc.AcceptContentTypes != "" {
		errs = append(errs, errors.New("clientConnection contentType and acceptContentTypes: not supported; trustplane's clients negotiate their own"))
	}

	le := kc.LeaderElection
	c.LeaderElect = le.LeaderElect
	c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = le.LeaseDuration.Duration, le.RenewDeadline.Duration, le.RetryPeriod.Duration
	// The scheduler's role may update only the Lease kube-system/kube-scheduler.
	for _, f := range []struct{ name, value, want string }{
		{"resourceLock", le.ResourceLock, "leases"},
		{"resourceName", le.ResourceName, LeaseName},
		{"resourceNamespace", le.ResourceNamespace, leaseNamespace},
	} {
		if f.value != "" && f.value != f.want {
			errs = append(errs, fmt.Errorf("leaderElection.%s %q: trustplane's scheduler elects through the Lease %s/%s only", f.name, f.value, leaseNamespace, LeaseName))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// decodeStrict decodes YAML or JSON into v as kube's strict decoder
// does: field names matched exactly, a duplicate or unknown field an
// error that names its path.
func decodeStrict(data []byte, v any) error {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	strict, err := sigsjson.UnmarshalStrict(js, v, sigsjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// pluginPoints are what trustplane does with one of kube's plugins.
type pluginPoints struct {
	filter, score bool
	// always: trustplane always runs it, and has no other in its place
	// (queue sort, binding, scheduling gates).
	always bool
	// postFilter: trustplane says its part of the message of a pod that
	// fits nowhere (preemption, dynamic resources), though it neither
	// preempts nor allocates claims.
	postFilter bool
}

// knownPlugins are kube's in-tree plugins. Those that trustplane does not
// run (volumes) may be disabled, which changes nothing, but not enabled.
func knownPlugins() map[string]pluginPoints {
	return map[string]pluginPoints{
		"PrioritySort":                    {always: true},
		"SchedulingGates":                 {always: true},
		"DefaultBinder":                   {always: true},
		"NodeUnschedulable":               {filter: true},
		"NodeName":                        {filter: true},
		"NodePorts":                       {filter: true},
		"TaintToleration":                 {filter: true, score: true},
		"NodeAffinity":                    {filter: true, score: true},
		"NodeResourcesFit":                {filter: true, score: true},
		"PodTopologySpread":               {filter: true, score: true},
		"InterPodAffinity":                {filter: true, score: true},
		"NodeResourcesBalancedAllocation": {score: true},
		"ImageLocality":                   {score: true},
		"VolumeRestrictions":              {},
		"NodeVolumeLimits":                {},
		"VolumeBinding":                   {},
		"VolumeZone":                      {},
		"DefaultPreemption":               {postFilter: true},
		"DynamicResources":                {postFilter: true},
	}
}

// defaultMultiPoint is kube's default profile (v1): its plugins, in
// order, with the weights of those that score.
func defaultMultiPoint() []configv1.Plugin {
	w := func(v int32) *int32 { return &v }
	return []configv1.Plugin{
		{Name: "SchedulingGates"}, {Name: "PrioritySort"}, {Name: "NodeUnschedulable"}, {Name: "NodeName"},
		{Name: "TaintToleration", Weight: w(3)}, {Name: "NodeAffinity", Weight: w(2)}, {Name: "NodePorts"},
		{Name: "NodeResourcesFit", Weight: w(1)}, {Name: "VolumeRestrictions"}, {Name: "NodeVolumeLimits"},
		{Name: "VolumeBinding"}, {Name: "VolumeZone"}, {Name: "PodTopologySpread", Weight: w(2)},
		{Name: "InterPodAffinity", Weight: w(2)}, {Name: "DynamicResources"}, {Name: "DefaultPreemption"},
		{Name: "NodeResourcesBalancedAllocation", Weight: w(1)}, {Name: "ImageLocality", Weight: w(1)},
		{Name: "DefaultBinder"},
	}
}

// mergePluginSet applies a profile's set to the default one, as kube
// does: "*" or a name in disabled removes default plugins; a plugin in
// enabled replaces the default of the same name in place, or is
// appended.
func mergePluginSet(defaults []configv1.Plugin, set configv1.PluginSet) []configv1.Plugin {
	disabled := sets.New[string]()
	for _, p := range set.Disabled {
		disabled.Insert(p.Name)
	}
	var out []configv1.Plugin
	replaced := sets.New[string]()
	if !disabled.Has("*") {
		for _, d := range defaults {
			if disabled.Has(d.Name) {
				continue
			}
			if i := slices.IndexFunc(set.Enabled, func(p configv1.Plugin) bool { return p.Name == d.Name }); i >= 0 {
				d = set.Enabled[i]
				replaced.Insert(d.Name)
			}
			out = append(out, d)
		}
	}
	for _, p := range set.Enabled {
		if !replaced.Has(p.Name) {
			out = append(out, p)
		}
	}
	return out
}

// profileFromConfig is the default profile as p changes it: the
// multiPoint set first, then the filter and score sets, which override
// it at their point (a plugin's score weight is the score set's if it
// names the plugin, else multiPoint's; 0 or none is 1, as kube's).
func profileFromConfig(p configv1.KubeSchedulerProfile) (*Profile, error) {
	var errs []error
	known := knownPlugins()
	plugins := configv1.Plugins{}
	if p.Plugins != nil {
		plugins = *p.Plugins
	}
	for _, point := range []struct {
		name string
		set  configv1.PluginSet
	}{
		{"preEnqueue", plugins.PreEnqueue}, {"queueSort", plugins.QueueSort}, {"preFilter", plugins.PreFilter},
		{"postFilter", plugins.PostFilter}, {"preScore", plugins.PreScore}, {"reserve", plugins.Reserve},
		{"permit", plugins.Permit}, {"preBind", plugins.PreBind}, {"bind", plugins.Bind}, {"postBind", plugins.PostBind},
		{"placementGenerate", plugins.PlacementGenerate}, {"placementScore", plugins.PlacementScore}, {"podGroupPostFilter", plugins.PodGroupPostFilter},
	} {
		if len(point.set.Enabled)+len(point.set.Disabled) > 0 {
			errs = append(errs, fmt.Errorf("plugins.%s: trustplane's scheduler is configured through multiPoint, filter and score only", point.name))
		}
	}
	// Every name must be kube's; a plugin enabled must be one trustplane
	// runs, at a point it has.
	for _, point := range []struct {
		name string
		set  configv1.PluginSet
		has  func(pluginPoints) bool
	}{
		{"multiPoint", plugins.MultiPoint, func(pp pluginPoints) bool { return pp.filter || pp.score || pp.always || pp.postFilter }},
		{"filter", plugins.Filter, func(pp pluginPoints) bool { return pp.filter }},
		{"score", plugins.Score, func(pp pluginPoints) bool { return pp.score }},
	} {
		for _, pl := range point.set.Disabled {
			_, ok := known[pl.Name]
			switch {
			case pl.Name == "*":
			case !ok:
				errs = append(errs, fmt.Errorf("plugins.%s.disabled: unknown plugin %q", point.name, pl.Name))
			}
		}
		enabled := sets.New[string]()
		for _, pl := range point.set.Enabled {
			pp, ok := known[pl.Name]
			switch {
			case enabled.Has(pl.Name):
				errs = append(errs, fmt.Errorf("plugins.%s.enabled: %s named twice", point.name, pl.Name))
			case !ok:
				errs = append(errs, fmt.Errorf("plugins.%s.enabled: unknown plugin %q", point.name, pl.Name))
			case !point.has(pp):
				errs = append(errs, fmt.Errorf("plugins.%s.enabled: %s is not a %s plugin in trustplane's scheduler", point.name, pl.Name, point.name))
			case pl.Weight != nil && *pl.Weight < 0:
				errs = append(errs, fmt.Errorf("plugins.%s.enabled: %s weight %d: must not be negative", point.name, pl.Name, *pl.Weight))
			}
			enabled.Insert(pl.Name)
		}
	}
	multi := mergePluginSet(defaultMultiPoint(), plugins.MultiPoint)
	for _, name := range []string{"SchedulingGates", "PrioritySort", "DefaultBinder"} {
		if !slices.ContainsFunc(multi, func(pl configv1.Plugin) bool { return pl.Name == name }) {
			errs = append(errs, fmt.Errorf("plugins.multiPoint: %s disabled: trustplane's scheduler has nothing in its place", name))
		}
	}
	var filterDefaults, scoreDefaults []configv1.Plugin
	for _, pl := range multi {
		if known[pl.Name].filter {
			filterDefaults = append(filterDefaults, configv1.Plugin{Name: pl.Name})
		}
		if known[pl.Name].score {
			scoreDefaults = append(scoreDefaults, pl)
		}
	}
	enabledFilters := sets.New[string]()
	for _, pl := range mergePluginSet(filterDefaults, plugins.Filter) {
		enabledFilters.Insert(pl.Name)
	}
	weights := map[string]int64{}
	var total int64
	for _, pl := range mergePluginSet(scoreDefaults, plugins.Score) {
		w := int64(1)
		if pl.Weight != nil && *pl.Weight > 0 {
			w = int64(*pl.Weight)
		}
		weights[pl.Name] = w
		total += w
	}
	// kube refuses weights whose sum could overflow its total score.
	if total > 1<<20 {
		errs = append(errs, fmt.Errorf("plugins.score: weights add up to %d: too large", total))
	}

	args := defaultPluginArgs()
	seen := sets.New[string]()
	for i, pc := range p.PluginConfig {
		if seen.Has(pc.Name) {
			errs = append(errs, fmt.Errorf("pluginConfig[%d]: %s configured twice", i, pc.Name))
		}
		seen.Insert(pc.Name)
		if _, ok := known[pc.Name]; !ok {
			errs = append(errs, fmt.Errorf("pluginConfig[%d]: unknown plugin %q", i, pc.Name))
			continue
		}
		var err error
		switch pc.Name {
		case "InterPodAffinity":
			args.interPod, err = interPodAffinityArgsFrom(pc.Args.Raw)
		case "NodeResourcesFit":
			args.fit, err = fitScoringFrom(pc.Args.Raw)
		case "NodeResourcesBalancedAllocation":
			args.balanced, err = balancedScoringFrom(pc.Args.Raw)
		case "PodTopologySpread":
			args.spread, err = spreadDefaultingFrom(pc.Args.Raw)
		case "NodeAffinity":
			args.addedAffinity, err = addedAffinityFrom(pc.Args.Raw)
		default:
			err = fmt.Errorf("arguments of %s are not supported by trustplane's scheduler (only those of NodeAffinity, InterPodAffinity, NodeResourcesFit, NodeResourcesBalancedAllocation and PodTopologySpread are)", pc.Name)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("pluginConfig[%d] (%s): %w", i, pc.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	postFilters := sets.New[string]()
	for _, pl := range multi {
		if known[pl.Name].postFilter {
			postFilters.Insert(pl.Name)
		}
	}
	return newProfile(enabledFilters, weights, args, postFilters), nil
}

// fitScoringFrom reads NodeResourcesFitArgs: its scoringStrategy,
// LeastAllocated or MostAllocated over weighted resources (weight 0 or
// none is 1, as kube defaults it). RequestedToCapacityRatio and the
// filter's ignored resources are refused: trustplane does not have them.
func fitScoringFrom(raw []byte) (fitScoring, error) {
	var a configv1.NodeResourcesFitArgs
	if err := decodeArgs(raw, &a, "NodeResourcesFitArgs", &a.TypeMeta); err != nil {
		return fitScoring{}, err
	}
	var errs []error
	if len(a.IgnoredResources) > 0 || len(a.IgnoredResourceGroups) > 0 {
		errs = append(errs, errors.New("ignoredResources and ignoredResourceGroups: not supported"))
	}
	fs := defaultFitScoring()
	if st := a.ScoringStrategy; st != nil {
		switch st.Type {
		case "", configv1.LeastAllocated:
		case configv1.MostAllocated:
			fs.mostAllocated = true
		default:
			errs = append(errs, fmt.Errorf("scoringStrategy.type %q: trustplane's scheduler has LeastAllocated and MostAllocated", st.Type))
		}
		if st.RequestedToCapacityRatio != nil {
			errs = append(errs, errors.New("scoringStrategy.requestedToCapacityRatio: not supported"))
		}
		if len(st.Resources) > 0 {
			var bad []error
			fs.resources, bad = resourceSpecs(st.Resources, "scoringStrategy.resources", func(w int64) bool { return w >= 0 && w <= 100 }, "not in 1..100")
			errs = append(errs, bad...)
		}
	}
	return fs, errors.Join(errs...)
}

// resourceSpecs are a plugin's resources, each named once, with weights
// that ok accepts, 0 counting as 1, as kube defaults it.
func resourceSpecs(specs []configv1.ResourceSpec, path string, ok func(weight int64) bool, want string) ([]resourceWeight, []error) {
	var out []resourceWeight
	var errs []error
	seen := sets.New[string]()
	for j, r := range specs {
		switch {
		case r.Name == "" || seen.Has(r.Name):
			errs = append(errs, fmt.Errorf("%s[%d]: name %q empty or repeated", path, j, r.Name))
		case !ok(r.Weight):
			errs = append(errs, fmt.Errorf("%s[%d] (%s): weight %d %s", path, j, r.Name, r.Weight, want))
		}
		seen.Insert(r.Name)
		out = append(out, resourceWeight{name: corev1.ResourceName(r.Name), weight: max(r.Weight, 1)})
	}
	return out, errs
}

// balancedScoringFrom reads NodeResourcesBalancedAllocationArgs: the
// resources balanced, each of weight 1 (0 or none), as kube validates
// them.
func balancedScoringFrom(raw []byte) (balancedScoring, error) {
	var a configv1.NodeResourcesBalancedAllocationArgs
	if err := decodeArgs(raw, &a, "NodeResourcesBalancedAllocationArgs", &a.TypeMeta); err != nil {
		return balancedScoring{}, err
	}
	b := defaultBalancedScoring()
	if len(a.Resources) == 0 {
		return b, nil
	}
	specs, errs := resourceSpecs(a.Resources, "resources", func(w int64) bool { return w == 0 || w == 1 }, "must be 1")
	b.resources = nil
	for _, r := range specs {
		b.resources = append(b.resources, r.name)
	}
	return b, errors.Join(errs...)
}

// spreadDefaultingFrom reads PodTopologySpreadArgs: kube's System
// defaults, or a List of constraints, validated as kube validates them
// (a positive maxSkew, a topology key, a known action, no selector, each
// key and action once); System with constraints of its own is refused.
func spreadDefaultingFrom(raw []byte) (spreadDefaulting, error) {
	var a configv1.PodTopologySpreadArgs
	if err := decodeArgs(raw, &a, "PodTopologySpreadArgs", &a.TypeMeta); err != nil {
		return spreadDefaulting{}, err
	}
	var errs []error
	switch a.DefaultingType {
	case "", configv1.SystemDefaulting:
		if len(a.DefaultConstraints) > 0 {
			errs = append(errs, errors.New("defaultConstraints: must be empty when defaultingType is System"))
		}
		return spreadDefaulting{}, errors.Join(errs...)
	case configv1.ListDefaulting:
	default:
		return spreadDefaulting{}, fmt.Errorf("defaultingType %q: want System or List", a.DefaultingType)
	}
	seen := sets.New[string]()
	for i, c := range a.DefaultConstraints {
		path := fmt.Sprintf("defaultConstraints[%d]", i)
		key := c.TopologyKey + "/" + string(c.WhenUnsatisfiable)
		switch {
		case c.MaxSkew <= 0:
			errs = append(errs, fmt.Errorf("%s.maxSkew %d: must be positive", path, c.MaxSkew))
		case c.TopologyKey == "":
			errs = append(errs, fmt.Errorf("%s.topologyKey: must be given", path))
		case c.WhenUnsatisfiable != corev1.DoNotSchedule && c.WhenUnsatisfiable != corev1.ScheduleAnyway:
			errs = append(errs, fmt.Errorf("%s.whenUnsatisfiable %q: want DoNotSchedule or ScheduleAnyway", path, c.WhenUnsatisfiable))
		case c.LabelSelector != nil:
			errs = append(errs, fmt.Errorf("%s.labelSelector: must not be set: the pods a pod shares a Service or controller with are its selector", path))
		case seen.Has(key):
			errs = append(errs, fmt.Errorf("%s: topologyKey %q and whenUnsatisfiable %q given twice", path, c.TopologyKey, c.WhenUnsatisfiable))
		}
		seen.Insert(key)
	}
	return spreadDefaulting{list: true, constraints: a.DefaultConstraints}, errors.Join(errs...)
}

// addedAffinityFrom reads NodeAffinityArgs: an addedAffinity whose
// required terms every node a pod goes to must match besides the pod's
// own, and whose preferred terms count besides the pod's.
func addedAffinityFrom(raw []byte) (addedAffinity, error) {
	var a configv1.NodeAffinityArgs
	if err := decodeArgs(raw, &a, "NodeAffinityArgs", &a.TypeMeta); err != nil {
		return addedAffinity{}, err
	}
	var out addedAffinity
	if a.AddedAffinity == nil {
		return out, nil
	}
	var errs []error
	if ns := a.AddedAffinity.RequiredDuringSchedulingIgnoredDuringExecution; ns != nil {
		sel, err := nodeaffinity.NewNodeSelector(ns, field.WithPath(field.NewPath("addedAffinity", "requiredDuringSchedulingIgnoredDuringExecution")))
		errs = append(errs, err)
		out.required = sel
	}
	if terms := a.AddedAffinity.PreferredDuringSchedulingIgnoredDuringExecution; len(terms) > 0 {
		pref, err := nodeaffinity.NewPreferredSchedulingTerms(terms, field.WithPath(field.NewPath("addedAffinity", "preferredDuringSchedulingIgnoredDuringExecution")))
		errs = append(errs, err)
		out.preferred = pref
	}
	return out, errors.Join(errs...)
}

// decodeArgs decodes a plugin's arguments strictly; their apiVersion and
// kind, when given, must be kind's in kubescheduler.config.k8s.io/v1.
func decodeArgs(raw []byte, v any, kind string, tm *metav1.TypeMeta) error {
	if len(raw) == 0 {
		return nil
	}
	if err := decodeStrict(raw, v); err != nil {
		return err
	}
	if (tm.APIVersion != "" && tm.APIVersion != configv1.SchemeGroupVersion.String()) || (tm.Kind != "" && tm.Kind != kind) {
		return fmt.Errorf("apiVersion %q, kind %q: want %s, %s", tm.APIVersion, tm.Kind, configv1.SchemeGroupVersion, kind)
	}
	return nil
}

func interPodAffinityArgsFrom(raw []byte) (interPodAffinityArgs, error) {
	var a configv1.InterPodAffinityArgs
	if err := decodeArgs(raw, &a, "InterPodAffinityArgs", &a.TypeMeta); err != nil {
		return interPodAffinityArgs{}, err
	}
	out := interPodAffinityArgs{hardPodAffinityWeight: 1, ignorePreferredTermsOfExistingPods: a.IgnorePreferredTermsOfExistingPods}
	if a.HardPodAffinityWeight != nil {
		if w := *a.HardPodAffinityWeight; w < 0 || w > 100 {
			return interPodAffinityArgs{}, fmt.Errorf("hardPodAffinityWeight %d: not in 0..100", w)
		}
		out.hardPodAffinityWeight = int64(*a.HardPodAffinityWeight)
	}
	return out, nil
}
