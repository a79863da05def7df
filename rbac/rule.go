package rbac

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// request is the part of authorizer.Attributes that rules are matched
// against, read once per Authorize call.
type request struct {
	isResource  bool
	verb        string
	namespace   string
	apiGroup    string
	resource    string
	subresource string
	name        string
	path        string
}

func newRequest(attrs authorizer.Attributes) request {
	return request{
		isResource:  attrs.IsResourceRequest(),
		verb:        attrs.GetVerb(),
		namespace:   attrs.GetNamespace(),
		apiGroup:    attrs.GetAPIGroup(),
		resource:    attrs.GetResource(),
		subresource: attrs.GetSubresource(),
		name:        attrs.GetName(),
		path:        attrs.GetPath(),
	}
}

// allowedByAny reports whether one of rules allows r.
func (r *request) allowedByAny(rules []rbacv1.PolicyRule) bool {
	for i := range rules {
		if r.allowedBy(&rules[i]) {
			return true
		}
	}
	return false
}

// allowedBy reports whether rule allows r. A rule written for resources never
// matches a non-resource request and the other way round, because the list it
// would be matched against is empty.
func (r *request) allowedBy(rule *rbacv1.PolicyRule) bool {
	if !containsOrAll(rule.Verbs, r.verb, rbacv1.VerbAll) {
		return false
	}
	if !r.isResource {
		return nonResourceURLMatches(rule.NonResourceURLs, r.path)
	}
	return containsOrAll(rule.APIGroups, r.apiGroup, rbacv1.APIGroupAll) &&
		resourceMatches(rule.Resources, r.resource, r.subresource) &&
		resourceNameMatches(rule.ResourceNames, r.name)
}

// containsOrAll reports whether list holds v or the wildcard all.
func containsOrAll(list []string, v, all string) bool {
	for _, s := range list {
		if s == v || s == all {
			return true
		}
	}
	return false
}

// resourceMatches reports whether one of the rule's resources names res (when
// sub is empty) or res/sub. Beyond exact names it understands "*" (every
// resource and subresource) and "*/sub" (subresource sub of any resource), as
// kube-apiserver does; "res/*" has no special meaning there and none here.
func resourceMatches(ruleResources []string, res, sub string) bool {
	for _, rr := range ruleResources {
		if rr == rbacv1.ResourceAll {
			return true
		}
		if sub == "" {
			if rr == res {
				return true
			}
			continue
		}
		// rr is "<a>/<b>": compare both halves without building res+"/"+sub.
		a, b, ok := strings.Cut(rr, "/")
		if !ok {
			continue
		}
		if (a == res || a == "*") && b == sub {
			return true
		}
	}
	return false
}

// resourceNameMatches reports whether name is allowed by a rule's
// resourceNames: an empty list allows every name, including no name; a
// non-empty list allows only the names it holds, so a request without a name
// (list, watch, create, deletecollection) never matches it.
func resourceNameMatches(names []string, name string) bool {
	if len(names) == 0 {
		return true
	}
	if name == "" {
		return false
	}
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// nonResourceURLMatches reports whether path is one of urls, or starts with
// one that ends in "*" once the trailing stars are removed ("*" alone matches
// every path).
func nonResourceURLMatches(urls []string, path string) bool {
	for _, u := range urls {
		if u == rbacv1.NonResourceAll || u == path {
			return true
		}
		if strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*")) {
			return true
		}
	}
	return false
}
