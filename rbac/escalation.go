package rbac

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

// ConfirmNoEscalation returns nil if u holds every permission that rules
// grant, within namespace ("" means cluster-wide: only ClusterRoleBindings
// count), and otherwise an error listing the permissions u lacks, in kube's
// words:
//
//	user "alice" (groups=["g1" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:
//	{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}
//
// What u holds is [Authorizer.RulesFor]; whether it covers rules is decided
// as kube's Covers (k8s.io/component-helpers/auth/rbac/validation) does:
// each rule is broken into single permissions (one group, resource, verb and
// resource name, or one URL and verb), and each must be allowed by one rule u
// holds, with wildcards in rules taken literally, so that only "*" covers
// "*", only an unrestricted rule covers one without resourceNames, "*/scale"
// covers "deployments/scale", and "/logs*" covers "/logs/x" and "/logs*".
// The matching is the authorizer's own, so "covered" means exactly "u could
// already do it".
//
// If some of u's bindings could not be read and rules are not covered, the
// message says so (without the cause) and the lookup failure is wrapped, for
// the log: errors.Unwrap returns it. Covered rules are accepted even from a
// partial view, which can only understate what u holds. The message names
// only u, its groups and the permissions it asked for, so it is safe to
// return to u in a Forbidden status, as kube does. (A canceled context
// reads as a lookup failure; a nil user is an error of its own.)
//
// See the package documentation for when the API server must call it.
func (a *Authorizer) ConfirmNoEscalation(ctx context.Context, u user.Info, namespace string, rules []rbacv1.PolicyRule) error {
	if u == nil {
		return errors.New("rbac: no user")
	}
	held, _, lookupErr := a.RulesFor(ctx, u, namespace)
	missing := Uncovered(held, rules)
	if len(missing) == 0 {
		return nil
	}
	return &escalationError{name: u.GetName(), groups: u.GetGroups(), missing: missing, lookupErr: lookupErr}
}

// escalationError is ConfirmNoEscalation's refusal.
type escalationError struct {
	name      string
	groups    []string
	missing   []rbacv1.PolicyRule // single permissions, as uncovered returns them
	lookupErr error               // why the user's rules may be incomplete; nil if they are not
}

func (e *escalationError) Error() string {
	var b strings.Builder
	described := describeRules(e.missing)
	if len(described) > maxDescribedRules {
		described = append(described[:maxDescribedRules], fmt.Sprintf("... and %d more", len(described)-maxDescribedRules))
	}
	fmt.Fprintf(&b, "user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s",
		e.name, e.groups, strings.Join(described, "\n"))
	if e.lookupErr != nil {
		b.WriteString("\n(some of the user's RBAC bindings or roles could not be read, so it may hold more than this shows)")
	}
	return b.String()
}

// Unwrap returns the failure to read the user's RBAC objects, if any.
func (e *escalationError) Unwrap() error { return e.lookupErr }

// Uncovered returns the single permissions of rules that no rule of held
// allows, in the order of rules, matched exactly as the Authorizer matches
// requests: what reconciling a role must add back, or what a writer lacks
// to grant rules.
func Uncovered(held, rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var missing []rbacv1.PolicyRule
	for i := range rules {
		forEachPermission(&rules[i], func(p request) {
			if !p.allowedByAny(held) {
				missing = append(missing, p.rule())
			}
		})
	}
	return missing
}

// maxDescribedRules bounds the missing permissions an escalation error
// lists: the message goes to the client.
const maxDescribedRules = 50

// forEachPermission calls f with every single permission rule grants, as a
// request whose fields may hold the rule's wildcards literally. A rule
// missing verbs, groups or resources (and URLs) grants nothing and yields
// nothing, exactly as Authorize reads it.
func forEachPermission(rule *rbacv1.PolicyRule, f func(request)) {
	for _, verb := range rule.Verbs {
		for _, group := range rule.APIGroups {
			for _, res := range rule.Resources {
				// "a/b/c" is resource "a", subresource "b/c", as in
				// resourceMatches; owner rules are split the same way.
				r, sub, _ := strings.Cut(res, "/")
				p := request{isResource: true, verb: verb, apiGroup: group, resource: r, subresource: sub}
				if len(rule.ResourceNames) == 0 {
					f(p)
					continue
				}
				for _, name := range rule.ResourceNames {
					p.name = name
					f(p)
				}
			}
		}
		for _, url := range rule.NonResourceURLs {
			f(request{verb: verb, path: url})
		}
	}
}

// rule is the PolicyRule granting exactly the permission r stands for.
func (r *request) rule() rbacv1.PolicyRule {
	if !r.isResource {
		return rbacv1.PolicyRule{Verbs: []string{r.verb}, NonResourceURLs: []string{r.path}}
	}
	res := r.resource
	if r.subresource != "" {
		res += "/" + r.subresource
	}
	rule := rbacv1.PolicyRule{Verbs: []string{r.verb}, APIGroups: []string{r.apiGroup}, Resources: []string{res}}
	if r.name != "" {
		rule.ResourceNames = []string{r.name}
	}
	return rule
}

// describeRules renders single permissions as kube's escalation message
// does: those differing only in verb are merged into one rule (verbs in
// first-seen order), each is written compactly, and the lines are sorted
// and deduplicated.
func describeRules(perms []rbacv1.PolicyRule) []string {
	type key struct {
		group, resource, name string
		named                 bool
	}
	var merged []rbacv1.PolicyRule
	index := map[key]int{}
	for _, p := range perms {
		if len(p.APIGroups) != 1 || len(p.Resources) != 1 || len(p.ResourceNames) > 1 || len(p.NonResourceURLs) > 0 {
			merged = append(merged, p)
			continue
		}
		k := key{group: p.APIGroups[0], resource: p.Resources[0]}
		if len(p.ResourceNames) == 1 {
			k.name, k.named = p.ResourceNames[0], true
		}
		i, ok := index[k]
		if !ok {
			index[k] = len(merged)
			merged = append(merged, *p.DeepCopy())
			continue
		}
		for _, v := range p.Verbs {
			if !slices.Contains(merged[i].Verbs, v) {
				merged[i].Verbs = append(merged[i].Verbs, v)
			}
		}
	}
	lines := make([]string, 0, len(merged))
	for i := range merged {
		lines = append(lines, compactString(&merged[i]))
	}
	slices.Sort(lines)
	return slices.Compact(lines)
}

// compactString writes rule as kube's escalation message does: only the
// fields that are set, lists quoted, e.g.
// {APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}.
func compactString(rule *rbacv1.PolicyRule) string {
	var parts []string
	add := func(field string, v []string) {
		if len(v) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", field, v))
		}
	}
	add("APIGroups", rule.APIGroups)
	add("Resources", rule.Resources)
	add("NonResourceURLs", rule.NonResourceURLs)
	add("ResourceNames", rule.ResourceNames)
	add("Verbs", rule.Verbs)
	return "{" + strings.Join(parts, ", ") + "}"
}
