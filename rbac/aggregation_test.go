package rbac

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// labelled is a test ClusterRole with labels.
func labelled(name string, labels map[string]string, rules ...ruleBuilder) *rbacv1.ClusterRole {
	r := testClusterRole(name, rules...)
	r.Labels = labels
	return r
}

// aggregating is a test ClusterRole aggregating by selectors, with rules
// already set to have (possibly stale).
func aggregating(name string, labels map[string]string, have []rbacv1.PolicyRule, selectors ...metav1.LabelSelector) *rbacv1.ClusterRole {
	r := labelled(name, labels)
	r.Rules = have
	r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: selectors}
	return r
}

func matchLabels(kv ...string) metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return metav1.LabelSelector{MatchLabels: m}
}

func TestAggregateClusterRoles(t *testing.T) {
	getPods := newRule("get").groups("").resources("pods")
	listPods := newRule("list").groups("").resources("pods")
	getCMs := newRule("get").groups("").resources("configmaps")
	getSecrets := newRule("get").groups("").resources("secrets")
	url := newRule("get").urls("/metrics")

	tests := []struct {
		name  string
		roles []*rbacv1.ClusterRole
		// want maps each changed role to its new rules; roles not in it must
		// not be returned.
		want map[string][]rbacv1.PolicyRule
	}{
		{
			name: "matchLabels, matching roles in name order",
			roles: []*rbacv1.ClusterRole{
				aggregating("agg", nil, nil, matchLabels("team", "web")),
				labelled("z-pods", map[string]string{"team": "web"}, getPods, listPods),
				labelled("a-cms", map[string]string{"team": "web", "extra": "x"}, getCMs),
				labelled("other", map[string]string{"team": "db"}, getSecrets),
				labelled("unlabelled", nil, url),
			},
			want: map[string][]rbacv1.PolicyRule{"agg": rules(getCMs, getPods, listPods)},
		},
		{
			name: "matchLabels needs every label",
			roles: []*rbacv1.ClusterRole{
				aggregating("agg", nil, nil, matchLabels("team", "web", "tier", "front")),
				labelled("both", map[string]string{"team": "web", "tier": "front"}, getPods),
				labelled("one", map[string]string{"team": "web"}, getSecrets),
			},
			want: map[string][]rbacv1.PolicyRule{"agg": rules(getPods)},
		},
		{
			name: "matchExpressions",
			roles: []*rbacv1.ClusterRole{
				aggregating("agg", nil, nil, metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "api"}},
					{Key: "secret", Operator: metav1.LabelSelectorOpDoesNotExist},
				}}),
				labelled("api", map[string]string{"team": "api"}, getPods),
				labelled("web", map[string]string{"team": "web"}, getCMs),
				labelled("web-secret", map[string]string{"team": "web", "secret": "yes"}, getSecrets),
				labelled("db", map[string]string{"team": "db"}, url),
			},
			want: map[string][]rbacv1.PolicyRule{"agg": rules(getPods, getCMs)},
		},
		{
			name: "selectors in order, each role once, rules deduplicated",
			roles: []*rbacv1.ClusterRole{
				aggregating("agg", nil, nil, matchLabels("b", "true"), matchLabels("a", "true")),
				labelled("1-a", map[string]string{"a": "true"}, getCMs, getPods),
				labelled("2-b", map[string]string{"b": "true"}, getPods),
				labelled("3-ab", map[string]string{"a": "true", "b": "true"}, listPods, getPods),
				// Equal rules with nil and empty lists are one rule.
				labelled("4-b", map[string]string{"b": "true"}, ruleBuilder{rbacv1.PolicyRule{
					Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{},
				}}),
			},
			want: map[string][]rbacv1.PolicyRule{"agg": rules(getPods, listPods, getCMs)},
		},
		{
			name: "a role never selects itself",
			roles: []*rbacv1.ClusterRole{
				aggregating("agg", map[string]string{"team": "web"}, rules(getSecrets), matchLabels("team", "web")),
				labelled("pods", map[string]string{"team": "web"}, getPods),
			},
			// Its own stale secrets rule is not carried over.
			want: map[string][]rbacv1.PolicyRule{"agg": rules(getPods)},
		},
		{
			name: "already aggregated: no change",
			roles: []*rbacv1.ClusterRole{
				aggregating("agg", nil, rules(getPods, getCMs), matchLabels("team", "web")),
				labelled("a", map[string]string{"team": "web"}, getPods),
				labelled("b", map[string]string{"team": "web"}, getCMs),
			},
		},
		{
			name: "already aggregated to nothing: no change",
			roles: []*rbacv1.ClusterRole{
				aggregating("nil-rules", nil, nil, matchLabels("team", "none")),
				aggregating("empty-rules", nil, []rbacv1.PolicyRule{}, matchLabels("team", "none")),
				labelled("a", map[string]string{"team": "web"}, getPods),
			},
		},
		{
			name: "stale rules are replaced",
			roles: []*rbacv1.ClusterRole{
				aggregating("agg", nil, rules(getSecrets, getPods), matchLabels("team", "web")),
				labelled("a", map[string]string{"team": "web"}, getPods),
			},
			want: map[string][]rbacv1.PolicyRule{"agg": rules(getPods)},
		},
		{
			name: "order matters to change",
			roles: []*rbacv1.ClusterRole{
				aggregating("agg", nil, rules(getCMs, getPods), matchLabels("team", "web")),
				labelled("a", map[string]string{"team": "web"}, getPods),
				labelled("b", map[string]string{"team": "web"}, getCMs),
			},
			want: map[string][]rbacv1.PolicyRule{"agg": rules(getPods, getCMs)},
		},
		{
			name: "chains are followed: view into edit into admin",
			roles: []*rbacv1.ClusterRole{
				aggregating("admin", nil, nil, matchLabels("to-admin", "true")),
				aggregating("edit", map[string]string{"to-admin": "true"}, nil, matchLabels("to-edit", "true")),
				aggregating("view", map[string]string{"to-edit": "true"}, nil, matchLabels("to-view", "true")),
				labelled("x-admin", map[string]string{"to-admin": "true"}, url),
				labelled("x-edit", map[string]string{"to-edit": "true"}, getSecrets),
				labelled("x-view", map[string]string{"to-view": "true"}, getPods),
			},
			// edit takes view's rules before x-edit's: "view" < "x-edit".
			want: map[string][]rbacv1.PolicyRule{
				"view":  rules(getPods),
				"edit":  rules(getPods, getSecrets),
				"admin": rules(getPods, getSecrets, url),
			},
		},
		{
			name: "a cycle adds only the ordinary roles it reaches",
			roles: []*rbacv1.ClusterRole{
				aggregating("a", map[string]string{"to-b": "true"}, rules(getSecrets), matchLabels("to-a", "true")),
				aggregating("b", map[string]string{"to-a": "true"}, rules(getSecrets), matchLabels("to-b", "true")),
				labelled("leaf-a", map[string]string{"to-a": "true"}, getPods),
				labelled("leaf-b", map[string]string{"to-b": "true"}, getCMs),
			},
			want: map[string][]rbacv1.PolicyRule{
				"a": rules(getCMs, getPods),
				"b": rules(getPods, getCMs),
			},
		},
		{
			name: "empty selector selects every other role",
			roles: []*rbacv1.ClusterRole{
				aggregating("all", nil, nil, metav1.LabelSelector{}),
				labelled("a", nil, getPods),
				labelled("b", map[string]string{"x": "y"}, url),
			},
			want: map[string][]rbacv1.PolicyRule{"all": rules(getPods, url)},
		},
		{
			name: "invalid selector selects nothing",
			roles: []*rbacv1.ClusterRole{
				aggregating("agg", nil, rules(getSecrets), metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "team", Operator: "Near", Values: []string{"web"}},
				}}),
				labelled("a", map[string]string{"team": "web"}, getPods),
			},
			want: map[string][]rbacv1.PolicyRule{"agg": nil},
		},
		{
			name:  "nil roles and no aggregated roles",
			roles: []*rbacv1.ClusterRole{nil, labelled("a", map[string]string{"team": "web"}, getPods), nil},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := make([]*rbacv1.ClusterRole, len(tt.roles))
			for i, r := range tt.roles {
				before[i] = r.DeepCopy()
			}
			changed := AggregateClusterRoles(tt.roles)

			got := map[string][]rbacv1.PolicyRule{}
			for _, c := range changed {
				if _, dup := got[c.Name]; dup {
					t.Errorf("%s returned twice", c.Name)
				}
				got[c.Name] = c.Rules
			}
			want := tt.want
			if want == nil {
				want = map[string][]rbacv1.PolicyRule{}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("changed roles' rules (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.roles); diff != "" {
				t.Errorf("input modified (-before +after):\n%s", diff)
			}

			// Copies of the input, but for the rules, sharing nothing with it.
			for _, c := range changed {
				var orig *rbacv1.ClusterRole
				for _, r := range tt.roles {
					if r != nil && r.Name == c.Name {
						orig = r
					}
				}
				if c == orig {
					t.Fatalf("%s: returned the input role itself, want a copy", c.Name)
				}
				c2 := c.DeepCopy()
				c2.Rules = orig.Rules
				if diff := cmp.Diff(orig, c2); diff != "" {
					t.Errorf("%s: copy differs beyond its rules (-input +copy):\n%s", c.Name, diff)
				}
				for i := range c.Rules {
					c.Rules[i].Verbs[0] = "mutated"
				}
			}
			if diff := cmp.Diff(before, tt.roles); diff != "" {
				t.Errorf("editing the result modified the input (-before +after):\n%s", diff)
			}

			// Aggregating the result again changes nothing.
			next := make([]*rbacv1.ClusterRole, 0, len(tt.roles))
			fresh := AggregateClusterRoles(before)
			for _, r := range before {
				for _, c := range fresh {
					if r != nil && c.Name == r.Name {
						r = c
					}
				}
				next = append(next, r)
			}
			if again := AggregateClusterRoles(next); len(again) != 0 {
				t.Errorf("second pass changed %d roles, want none", len(again))
			}
		})
	}
}
