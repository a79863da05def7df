package rbac

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// AggregateClusterRoles does what kube's clusterrole-aggregation controller
// does, for a whole set of ClusterRoles at once. For every role with an
// aggregationRule it computes the union of the rules of the other
// ClusterRoles whose labels match any of its clusterRoleSelectors, and it
// returns copies, carrying the new rules, of the roles whose rules that
// changes; nil if none. roles is not modified, and the result shares nothing
// with it. The API server applies it whenever a ClusterRole is created,
// changed or deleted, and writes back what it returns.
//
// The rules come in kube's order: selector by selector, the matching roles
// by name, each role's rules in order; a rule equal to an earlier one is
// dropped (nil and empty lists are equal). A role never selects itself.
// A selected role that is itself aggregated contributes the rules it is
// computed to have, so chains (view into edit into admin) are followed to
// the end in one call, where kube's controller gets there over several
// passes; a cycle of aggregated roles adds nothing beyond the ordinary roles
// reachable from it. An empty selector matches every ClusterRole, as in
// kube. A selector that cannot be parsed (validation refuses those) selects
// nothing, and nil roles are ignored.
//
// Selecting grants whatever later carries the label too, which is why kube
// lets only a user holding every permission set an aggregationRule; see the
// package documentation.
func AggregateClusterRoles(roles []*rbacv1.ClusterRole) []*rbacv1.ClusterRole {
	ag := aggregator{selectors: map[*rbacv1.ClusterRole][]labels.Selector{}}
	for _, r := range roles {
		if r == nil {
			continue
		}
		ag.byName = append(ag.byName, r)
		if r.AggregationRule != nil {
			ag.selectors[r] = parseSelectors(r.AggregationRule.ClusterRoleSelectors)
		}
	}
	if len(ag.selectors) == 0 {
		return nil
	}
	slices.SortStableFunc(ag.byName, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })

	var changed []*rbacv1.ClusterRole
	for _, r := range roles {
		if r == nil || r.AggregationRule == nil {
			continue
		}
		rules := ag.rules(r)
		if equalRules(rules, r.Rules) {
			continue
		}
		c := r.DeepCopy()
		c.Rules = rules
		changed = append(changed, c)
	}
	return changed
}

// aggregator holds one set of ClusterRoles being aggregated.
type aggregator struct {
	byName    []*rbacv1.ClusterRole                     // every role, sorted by name
	selectors map[*rbacv1.ClusterRole][]labels.Selector // of each aggregated role
}

// rules computes the rules of the aggregated role root: a depth-first walk
// of the roles its selectors match, taking the rules of ordinary roles and
// walking on through aggregated ones. Each role is visited once, which also
// stops cycles; visiting it again could only add rules already taken.
func (ag *aggregator) rules(root *rbacv1.ClusterRole) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	seenRule := map[string]bool{}
	visited := map[*rbacv1.ClusterRole]bool{root: true}
	var walk func(*rbacv1.ClusterRole)
	walk = func(r *rbacv1.ClusterRole) {
		for _, sel := range ag.selectors[r] {
			for _, c := range ag.byName {
				if visited[c] || c.Name == root.Name || !sel.Matches(labels.Set(c.Labels)) {
					continue
				}
				visited[c] = true
				if c.AggregationRule != nil {
					walk(c)
					continue
				}
				for i := range c.Rules {
					k := ruleKey(&c.Rules[i])
					if !seenRule[k] {
						seenRule[k] = true
						out = append(out, *c.Rules[i].DeepCopy())
					}
				}
			}
		}
	}
	walk(root)
	return out
}

// parseSelectors returns the selectors that parse; one that does not would
// be refused by validation, and selecting nothing with it fails closed.
func parseSelectors(in []metav1.LabelSelector) []labels.Selector {
	out := make([]labels.Selector, 0, len(in))
	for i := range in {
		s, err := metav1.LabelSelectorAsSelector(&in[i])
		if err != nil {
			continue
		}
		out = append(out, s)
	}
	return out
}

// ruleKey is equal for two rules exactly when they hold the same lists in
// the same order, a nil list being equal to an empty one (kube's semantic
// equality).
func ruleKey(r *rbacv1.PolicyRule) string {
	return fmt.Sprintf("%q%q%q%q%q", r.Verbs, r.APIGroups, r.Resources, r.ResourceNames, r.NonResourceURLs)
}

func equalRules(a, b []rbacv1.PolicyRule) bool {
	return slices.EqualFunc(a, b, func(x, y rbacv1.PolicyRule) bool { return ruleKey(&x) == ruleKey(&y) })
}
