package rbac

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

// Request is one request as RBAC sees it: a resource request, or a
// non-resource one when NonResourceURL is set. It is comparable, so that
// the requests of a log can be counted in a map.
type Request struct {
	Verb           string `json:"verb"`
	APIGroup       string `json:"apiGroup,omitempty"`
	Resource       string `json:"resource,omitempty"`
	Subresource    string `json:"subresource,omitempty"`
	Namespace      string `json:"namespace,omitempty"`
	Name           string `json:"name,omitempty"`
	NonResourceURL string `json:"nonResourceURL,omitempty"`
}

func (r Request) request() request {
	return request{
		isResource:  r.NonResourceURL == "",
		verb:        r.Verb,
		namespace:   r.Namespace,
		apiGroup:    r.APIGroup,
		resource:    r.Resource,
		subresource: r.Subresource,
		name:        r.Name,
		path:        r.NonResourceURL,
	}
}

// String is the request as one line: "get secrets.apps/status db -n a",
// "list pods (all namespaces)", "get /healthz".
func (r Request) String() string {
	if r.NonResourceURL != "" {
		return r.Verb + " " + r.NonResourceURL
	}
	s := r.Verb + " " + r.Resource
	if r.APIGroup != "" {
		s += "." + r.APIGroup
	}
	if r.Subresource != "" {
		s += "/" + r.Subresource
	}
	if r.Name != "" {
		s += " " + r.Name
	}
	if r.Namespace != "" {
		s += " -n " + r.Namespace
	}
	return s
}

// RequestCount is a request and how many times it was made.
type RequestCount struct {
	Request
	Count int `json:"count"`
}

// PermissionUse is one permission of a granted rule and how much of it the
// requests used.
type PermissionUse struct {
	// Rule is the permission: one verb, one apiGroup, one resource and at
	// most one resourceName, or one verb and one nonResourceURL. Each may be
	// a wildcard ("*", "*/scale", "/logs/*"), which Wildcard then says.
	Rule     rbacv1.PolicyRule `json:"rule"`
	Wildcard bool              `json:"wildcard,omitempty"`
	// Used is how many requests it allows, repeats counted; 0 means it was
	// never used.
	Used int `json:"used"`
	// Requests are, for a wildcard permission, the distinct requests it
	// allowed: the part of it that was used.
	Requests []RequestCount `json:"requests,omitempty"`
}

// GrantUse is a binding that applies to a user, and how much of each
// permission of its role the user's requests used.
type GrantUse struct {
	Grant
	Permissions []PermissionUse `json:"permissions"`
}

// UserUsage is what [Usage] finds for one user.
type UserUsage struct {
	// Grants are the bindings that apply to the user, with the use of
	// each permission of their roles.
	Grants []GrantUse `json:"grants"`
	// Ungranted are the requests that no permission of Grants allows:
	// allowed by another authorizer (the Node authorizer), or by RBAC
	// objects changed since.
	Ungranted []RequestCount `json:"ungranted,omitempty"`
}

// Usage returns every binding among the objects that applies to u, in the
// order of [WhoCan], with each rule of its role split into permissions
// ([ExpandRule]) and, for each, how many of requests it allows. A
// permission of a RoleBinding counts only the requests of the binding's
// namespace; one of a ClusterRoleBinding counts all, as the authorizer
// grants. A request allowed by several permissions counts for each: any
// of them could have been the one that allowed it.
//
// Bindings are matched to u as [Authorizer.Authorize] matches them (u's
// name, its groups, and its ServiceAccount), and what grants nothing is
// left out as WhoCan leaves it out. Usage modifies none of its arguments.
func Usage(u user.Info, requests []RequestCount, clusterRoles []*rbacv1.ClusterRole, roles []*rbacv1.Role,
	clusterRoleBindings []*rbacv1.ClusterRoleBinding, roleBindings []*rbacv1.RoleBinding) UserUsage {
	clusterRoleRules := map[string][]rbacv1.PolicyRule{}
	for _, r := range clusterRoles {
		if r != nil {
			if _, seen := clusterRoleRules[r.Name]; !seen {
				clusterRoleRules[r.Name] = r.Rules
			}
		}
	}
	type roleKey struct{ namespace, name string }
	roleRules := map[roleKey][]rbacv1.PolicyRule{}
	for _, r := range roles {
		if r != nil {
			k := roleKey{r.Namespace, r.Name}
			if _, seen := roleRules[k]; !seen {
				roleRules[k] = r.Rules
			}
		}
	}

	var uses []GrantUse
	granted := make([]bool, len(requests))
	add := func(s *rbacv1.Subject, bindingKind, bindingName, bindingNamespace string, ref rbacv1.RoleRef, rules []rbacv1.PolicyRule) {
		subject, ok := grantedSubject(s, bindingNamespace)
		if !ok {
			return
		}
		g := GrantUse{Grant: Grant{
			Subject:          subject,
			BindingKind:      bindingKind,
			BindingName:      bindingName,
			BindingNamespace: bindingNamespace,
			RoleKind:         ref.Kind,
			RoleName:         ref.Name,
		}}
		for i := range rules {
			for _, p := range ExpandRule(rules[i]) {
				g.Permissions = append(g.Permissions, permissionUse(p, requests, bindingNamespace, granted))
			}
		}
		uses = append(uses, g)
	}

	for _, b := range clusterRoleBindings {
		if b == nil || b.RoleRef.APIGroup != rbacv1.GroupName || b.RoleRef.Kind != "ClusterRole" {
			continue
		}
		rules, found := clusterRoleRules[b.RoleRef.Name]
		if s := matchingSubject(u, b.Subjects, ""); s != nil && found {
			add(s, "ClusterRoleBinding", b.Name, "", b.RoleRef, rules)
		}
	}
	for _, b := range roleBindings {
		if b == nil || b.Namespace == "" || b.RoleRef.APIGroup != rbacv1.GroupName {
			continue
		}
		var rules []rbacv1.PolicyRule
		var found bool
		switch b.RoleRef.Kind {
		case "ClusterRole":
			rules, found = clusterRoleRules[b.RoleRef.Name]
		case "Role":
			rules, found = roleRules[roleKey{b.Namespace, b.RoleRef.Name}]
		}
		if s := matchingSubject(u, b.Subjects, b.Namespace); s != nil && found {
			add(s, "RoleBinding", b.Name, b.Namespace, b.RoleRef, rules)
		}
	}
	slices.SortStableFunc(uses, func(a, b GrantUse) int { return compareGrants(a.Grant, b.Grant) })
	out := UserUsage{Grants: uses}
	for i, rc := range requests {
		if !granted[i] {
			out.Ungranted = append(out.Ungranted, rc)
		}
	}
	return out
}

// permissionUse counts the requests that p allows, in namespace when it is
// not "" (a RoleBinding's), and marks them in granted.
func permissionUse(p rbacv1.PolicyRule, requests []RequestCount, namespace string, granted []bool) PermissionUse {
	use := PermissionUse{Rule: p, Wildcard: isWildcard(&p)}
	for i, rc := range requests {
		if namespace != "" && rc.Namespace != namespace {
			continue
		}
		req := rc.request()
		if !req.allowedBy(&p) {
			continue
		}
		use.Used += rc.Count
		granted[i] = true
		if use.Wildcard {
			use.Requests = append(use.Requests, rc)
		}
	}
	return use
}

// ExpandRule splits rule into the permissions it grants, as far as they
// are finite: one rule for each verb, apiGroup, resource and resourceName
// (none when the rule names none), and one for each verb and
// nonResourceURL. A list that holds "*" stays "*", which stands for all the
// others; other wildcards ("*/scale", "/logs/*") are kept as they are.
// Each permission allows a subset of what rule allows, and together they
// allow exactly what it allows.
//
// apiGroups and resources multiply out as the authorizer matches them, so
// a rule naming groups "" and "apps" and resources pods and deployments
// yields apps/pods too, which no server serves: that is what the rule
// grants.
func ExpandRule(rule rbacv1.PolicyRule) []rbacv1.PolicyRule {
	verbs := collapse(rule.Verbs, rbacv1.VerbAll)
	var out []rbacv1.PolicyRule
	if len(rule.Resources) > 0 {
		groups := collapse(rule.APIGroups, rbacv1.APIGroupAll)
		resources := collapse(rule.Resources, rbacv1.ResourceAll)
		names := rule.ResourceNames
		for _, v := range verbs {
			for _, g := range groups {
				for _, r := range resources {
					p := rbacv1.PolicyRule{Verbs: []string{v}, APIGroups: []string{g}, Resources: []string{r}}
					if len(names) == 0 {
						out = append(out, p)
						continue
					}
					for _, n := range slices.Compact(slices.Sorted(slices.Values(names))) {
						pn := p
						pn.ResourceNames = []string{n}
						out = append(out, pn)
					}
				}
			}
		}
	}
	if len(rule.NonResourceURLs) > 0 {
		for _, v := range verbs {
			for _, u := range collapse(rule.NonResourceURLs, rbacv1.NonResourceAll) {
				out = append(out, rbacv1.PolicyRule{Verbs: []string{v}, NonResourceURLs: []string{u}})
			}
		}
	}
	return out
}

// collapse returns list without repeats, or just all when it holds all.
func collapse(list []string, all string) []string {
	if slices.Contains(list, all) {
		return []string{all}
	}
	var out []string
	for _, s := range list {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// isWildcard reports whether a permission of ExpandRule stands for more
// than one verb, group, resource or URL.
func isWildcard(p *rbacv1.PolicyRule) bool {
	for _, v := range p.Verbs {
		if v == rbacv1.VerbAll {
			return true
		}
	}
	for _, g := range p.APIGroups {
		if g == rbacv1.APIGroupAll {
			return true
		}
	}
	for _, r := range p.Resources {
		if strings.HasPrefix(r, "*") {
			return true
		}
	}
	for _, u := range p.NonResourceURLs {
		if strings.HasSuffix(u, "*") {
			return true
		}
	}
	return false
}

// DescribePermission writes a permission of ExpandRule as one line:
// "get secrets", "delete deployments.apps/scale [web]", "* *.*", "get /healthz".
func DescribePermission(p rbacv1.PolicyRule) string {
	verbs := strings.Join(p.Verbs, ",")
	if len(p.NonResourceURLs) > 0 {
		return verbs + " " + strings.Join(p.NonResourceURLs, ",")
	}
	var res []string
	for _, g := range p.APIGroups {
		for _, r := range p.Resources {
			name, sub, hasSub := strings.Cut(r, "/")
			if g != "" {
				name += "." + g
			}
			if hasSub {
				name += "/" + sub
			}
			res = append(res, name)
		}
	}
	s := verbs + " " + strings.Join(res, ",")
	if len(p.ResourceNames) > 0 {
		s += fmt.Sprintf(" [%s]", strings.Join(p.ResourceNames, ","))
	}
	return s
}

// CoveringRules returns, for each namespace of requests ("" for the
// cluster-scoped ones, those across all namespaces, and the non-resource
// ones), rules that allow every request and as little else as rules can
// say: a Role's rules for a namespace, a ClusterRole's for "".
//
// Rules are grouped as audit2rbac groups them. For each namespace, verb,
// apiGroup and resource (with its subresource), the rule names the
// resourceNames the requests named when every one of them named one, and
// no names (all of them) otherwise. Verbs used on a resource with the same
// names are merged into one rule, then resources of one apiGroup that
// share their verbs and names. Since every merge multiplies only lists
// whose every combination was used, each permission of the result was
// used by some request: the rules are never narrower than the requests,
// and broader only where a verb was used both with and without a name.
func CoveringRules(requests []Request) map[string][]rbacv1.PolicyRule {
	type verbKey struct {
		namespace, group, resource, verb string
	}
	type nameSet struct {
		names   map[string]bool
		unnamed bool
	}
	byVerb := map[verbKey]*nameSet{}
	urlVerbs := map[string]map[string]bool{}
	for _, r := range requests {
		if r.NonResourceURL != "" {
			if urlVerbs[r.NonResourceURL] == nil {
				urlVerbs[r.NonResourceURL] = map[string]bool{}
			}
			urlVerbs[r.NonResourceURL][r.Verb] = true
			continue
		}
		res := r.Resource
		if r.Subresource != "" {
			res += "/" + r.Subresource
		}
		k := verbKey{r.Namespace, r.APIGroup, res, r.Verb}
		ns := byVerb[k]
		if ns == nil {
			ns = &nameSet{names: map[string]bool{}}
			byVerb[k] = ns
		}
		if r.Name == "" {
			ns.unnamed = true
		} else {
			ns.names[r.Name] = true
		}
	}

	// The verbs used on each resource with the same names.
	type resourceKey struct {
		namespace, group, resource, names string
	}
	verbsOf := map[resourceKey][]string{}
	for k, ns := range byVerb {
		names := ""
		if !ns.unnamed {
			names = strings.Join(sortedKeys(ns.names), "\x00")
		}
		rk := resourceKey{k.namespace, k.group, k.resource, names}
		verbsOf[rk] = append(verbsOf[rk], k.verb)
	}
	// The resources of one group sharing their verbs and names.
	type ruleKey struct {
		namespace, group, verbs, names string
	}
	resourcesOf := map[ruleKey][]string{}
	for rk, verbs := range verbsOf {
		slices.Sort(verbs)
		k := ruleKey{rk.namespace, rk.group, strings.Join(verbs, "\x00"), rk.names}
		resourcesOf[k] = append(resourcesOf[k], rk.resource)
	}
	out := map[string][]rbacv1.PolicyRule{}
	for k, resources := range resourcesOf {
		slices.Sort(resources)
		rule := rbacv1.PolicyRule{
			Verbs:     strings.Split(k.verbs, "\x00"),
			APIGroups: []string{k.group},
			Resources: resources,
		}
		if k.names != "" {
			rule.ResourceNames = strings.Split(k.names, "\x00")
		}
		out[k.namespace] = append(out[k.namespace], rule)
	}

	// Non-resource URLs sharing their verbs.
	urlsOf := map[string][]string{}
	for u, verbs := range urlVerbs {
		k := strings.Join(sortedKeys(verbs), "\x00")
		urlsOf[k] = append(urlsOf[k], u)
	}
	for verbs, urls := range urlsOf {
		slices.Sort(urls)
		out[""] = append(out[""], rbacv1.PolicyRule{Verbs: strings.Split(verbs, "\x00"), NonResourceURLs: urls})
	}
	for ns := range out {
		slices.SortFunc(out[ns], compareRules)
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// compareRules orders rules of CoveringRules: resource rules by group and
// first resource, then non-resource ones by first URL.
func compareRules(a, b rbacv1.PolicyRule) int {
	first := func(s []string) string {
		if len(s) == 0 {
			return ""
		}
		return s[0]
	}
	nonResource := func(r rbacv1.PolicyRule) int { return min(len(r.NonResourceURLs), 1) }
	return cmp.Or(
		cmp.Compare(nonResource(a), nonResource(b)),
		cmp.Compare(first(a.APIGroups), first(b.APIGroups)),
		slices.Compare(a.Resources, b.Resources),
		slices.Compare(a.NonResourceURLs, b.NonResourceURLs),
		slices.Compare(a.Verbs, b.Verbs),
		slices.Compare(a.ResourceNames, b.ResourceNames),
	)
}
