package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/yaml"

	"github.com/trustplane/trustplane/apiserver/filters"
	"github.com/trustplane/trustplane/apiserver/responses"
	"github.com/trustplane/trustplane/audit"
	"github.com/trustplane/trustplane/datadir"
	"github.com/trustplane/trustplane/rbac"
)

func newRBACCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rbac",
		Short: "Set what RBAC grants against what the audit log shows was used",
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return badInput(err) })
	cmd.AddCommand(newRBACUnusedCommand())
	return cmd
}

// rbacUnusedFlags are the flags of `trustplane rbac unused`.
type rbacUnusedFlags struct {
	auditLogs  []string
	kubeconfig string
	dir        string
	user       string
	since      time.Duration
	output     string
	now        func() time.Time
}

func (f *rbacUnusedFlags) validate() error {
	var errs []error
	if !slices.Contains([]string{"table", "yaml", "json"}, f.output) {
		errs = append(errs, fmt.Errorf("-o %q: want table, yaml or json", f.output))
	}
	if f.since < 0 {
		errs = append(errs, fmt.Errorf("--since %s is negative", f.since))
	}
	return errors.Join(errs...)
}

func newRBACUnusedCommand() *cobra.Command {
	f := rbacUnusedFlags{dir: datadir.DefaultDir, output: "table", now: time.Now}
	cmd := &cobra.Command{
		Use:   "unused",
		Short: "For each user and ServiceAccount of the audit log, the permissions it never used and the smallest roles for what it did",
		Long: `Read the audit log and, for each user and ServiceAccount that made requests
in it, set what RBAC grants it now against what it did.

Every binding that applies to the subject (naming the user, a group it was
seen with in the log, or its ServiceAccount) is listed with the rules of its
role, each split into permissions: one verb on one resource of one group
(and one name, for rules with resourceNames), or one verb on one
non-resource URL. Each permission shows how many of the subject's allowed
requests it allowed, or "never". A wildcard ("*", "*/scale", "/logs/*")
stays one permission, with the requests that used it. A request counts
for a RoleBinding only in the binding's namespace, as the authorizer
grants it. Requests that no binding grants now (the Node authorizer's, or
RBAC changed since) are listed as "not granted by RBAC now".

An impersonated request counts for the impersonated user; a refused one
counts for nothing. Groups are not subjects of their own: they show
through their members.

-o yaml writes, for each subject, the smallest Roles (one per namespace)
and ClusterRole (cluster-scoped resources, requests across all namespaces,
non-resource URLs) that allow exactly what it did, with their bindings,
ready for kubectl apply: a rule names resourceNames when every request of
its verb and resource named one; verbs of a resource, then resources of a
group that share their verbs, are merged. -o json writes all of it.

RBAC objects are read live (list on roles, clusterroles, rolebindings and
clusterrolebindings in all namespaces). The log is read one line at a
time; memory grows with the number of distinct requests, not of events.

Exit status: 0; 2 for bad flags, a log that cannot be read, or a log
without events (of --user).`,
		Example: `  trustplane rbac unused
  trustplane rbac unused --user alice --since 720h
  trustplane rbac unused --audit-log /backup/audit --user system:serviceaccount:ci:builder -o yaml > builder-rbac.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRBACUnused(cmd, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.auditLogs, "audit-log", nil, "audit log file or directory, repeatable (default DIR/audit)")
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default $KUBECONFIG, else admin.conf in --dir)")
	fl.StringVar(&f.dir, "dir", f.dir, "data directory whose audit log and admin.conf are the defaults")
	fl.StringVar(&f.user, "user", "", "only this subject: a user name, or system:serviceaccount:NAMESPACE:NAME")
	fl.DurationVar(&f.since, "since", 0, "only events received within this long before now: 24h, 720h")
	fl.StringVarP(&f.output, "output", "o", f.output, "output: table, yaml (the covering roles) or json")
	return cmd
}

// seenSubject is what the log shows of one subject.
type seenSubject struct {
	name     string
	groups   map[string]bool
	requests map[rbac.Request]int // allowed requests and their counts
	allowed  int
	refused  int
}

func runRBACUnused(cmd *cobra.Command, f *rbacUnusedFlags) error {
	if err := f.validate(); err != nil {
		return badInput(err)
	}
	paths := f.auditLogs
	if len(paths) == 0 {
		paths = []string{filepath.Dir(datadir.Layout{Dir: f.dir}.AuditLog())}
	}
	files, err := audit.LogFiles(paths)
	if err != nil {
		return badInput(fmt.Errorf("audit log: %w", err))
	}
	var filter audit.Filter
	if f.since > 0 {
		filter.From = f.now().Add(-f.since)
	}
	subjects, events, err := readSubjects(files, &filter, f.user)
	if err != nil {
		return badInput(fmt.Errorf("audit log: %w", err))
	}
	if events == 0 {
		return badInput(fmt.Errorf("no audit events in %s%s", strings.Join(files, ", "), sinceText(f.since)))
	}
	if len(subjects) == 0 {
		return badInput(fmt.Errorf("no audit event of user %q in %s%s", f.user, strings.Join(files, ", "), sinceText(f.since)))
	}

	client, err := clientset(f.kubeconfig, f.dir, "trustplane-rbac-unused/"+version)
	if err != nil {
		return err
	}
	objs, err := listRBAC(cmd.Context(), client)
	if err != nil {
		return err
	}

	reports := make([]subjectReport, 0, len(subjects))
	for _, s := range subjects {
		reports = append(reports, reportSubject(s, objs))
	}
	out := bufio.NewWriter(cmd.OutOrStdout())
	switch f.output {
	case "json":
		err = writeUnusedJSON(out, reports)
	case "yaml":
		err = writeCoveringYAML(out, reports)
	default:
		err = writeUnusedTable(out, reports)
	}
	return errors.Join(err, out.Flush())
}

func sinceText(since time.Duration) string {
	if since == 0 {
		return ""
	}
	return " in the last " + since.String()
}

// readSubjects reads the events of files that filter selects and returns
// the subjects they show, sorted by name (only the one named only, unless
// only is ""), and how many events were read.
//
// A request counts once, whatever stages its policy logs, by its event
// that audit.Requests picks.
func readSubjects(files []string, filter *audit.Filter, only string) ([]*seenSubject, int, error) {
	byName := map[string]*seenSubject{}
	var requests audit.Requests
	events := 0
	err := audit.Query(files, filter, func(_ []byte, e *audit.Event) error {
		events++
		if !requests.Pick(e) {
			return nil
		}
		name, groups := e.User.Username, e.User.Groups
		if e.ImpersonatedUser != nil {
			name, groups = e.ImpersonatedUser.Username, e.ImpersonatedUser.Groups
		}
		if name == "" || (only != "" && name != only) {
			return nil
		}
		s := byName[name]
		if s == nil {
			s = &seenSubject{name: name, groups: map[string]bool{}, requests: map[rbac.Request]int{}}
			byName[name] = s
		}
		for _, g := range groups {
			s.groups[g] = true
		}
		if e.Annotations[audit.DecisionAnnotation] != "allow" {
			s.refused++
			return nil
		}
		s.allowed++
		s.requests[requestOf(e)]++
		return nil
	})
	if err != nil {
		return nil, events, err
	}
	subjects := make([]*seenSubject, 0, len(byName))
	for _, s := range byName {
		subjects = append(subjects, s)
	}
	slices.SortFunc(subjects, func(a, b *seenSubject) int { return strings.Compare(a.name, b.name) })
	return subjects, events, nil
}

// requestOf is the request of e as the authorizer saw it. The name of a
// create is the one of the object created, which the event records but
// the authorizer never sees (the URL has none), so it is left out: a role
// naming it would not allow the create.
func requestOf(e *audit.Event) rbac.Request {
	if e.ObjectRef == nil {
		path := e.RequestURI
		if u, err := url.ParseRequestURI(e.RequestURI); err == nil {
			path = u.Path
		}
		return rbac.Request{Verb: e.Verb, NonResourceURL: path}
	}
	r := rbac.Request{
		Verb:        e.Verb,
		APIGroup:    e.APIGroup(),
		Resource:    e.Resource(),
		Subresource: e.Subresource(),
		Namespace:   e.Namespace(),
		Name:        e.Name(),
	}
	if r.Verb == "create" && r.Subresource == "" {
		r.Name = ""
	}
	if r.Subresource == "" && e.Annotations[filters.MetadataOnlyAnnotation] == "true" {
		// Allowed by a grant on metadata alone: that is what it used.
		r.Subresource = responses.MetadataSubresource
	}
	return r
}

// subjectReport is what `rbac unused` says of one subject.
type subjectReport struct {
	// Kind is User or ServiceAccount.
	Kind    string   `json:"kind"`
	Name    string   `json:"name"` // the user name; a ServiceAccount's is system:serviceaccount:NS:NAME
	Groups  []string `json:"groups,omitempty"`
	Allowed int      `json:"allowed"` // requests allowed
	Refused int      `json:"refused"`
	rbac.UserUsage
	// Requests are the distinct requests allowed, with their counts.
	Requests     []rbac.RequestCount `json:"requests,omitempty"`
	Roles        []*rbacv1.Role      `json:"roles,omitempty"`
	ClusterRole  *rbacv1.ClusterRole `json:"clusterRole,omitempty"`
	subject      rbacv1.Subject
	coveringName string
}

func reportSubject(s *seenSubject, objs rbacObjects) subjectReport {
	r := subjectReport{Kind: rbacv1.UserKind, Name: s.name, Allowed: s.allowed, Refused: s.refused}
	r.subject = rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: s.name}
	if ns, name, err := serviceaccount.SplitUsername(s.name); err == nil {
		r.Kind = rbacv1.ServiceAccountKind
		r.subject = rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
	}
	for g := range s.groups {
		r.Groups = append(r.Groups, g)
	}
	slices.Sort(r.Groups)
	var plain []rbac.Request
	for req, n := range s.requests {
		r.Requests = append(r.Requests, rbac.RequestCount{Request: req, Count: n})
		plain = append(plain, req)
	}
	slices.SortFunc(r.Requests, func(a, b rbac.RequestCount) int { return strings.Compare(a.String(), b.String()) })

	u := &user.DefaultInfo{Name: s.name, Groups: r.Groups}
	r.UserUsage = rbac.Usage(u, r.Requests, objs.clusterRoles, objs.roles, objs.clusterRoleBindings, objs.roleBindings)

	// The covering roles: names are path segments, which hold no "/" or "%".
	r.coveringName = "used-by:" + strings.NewReplacer("/", "-", "%", "-").Replace(s.name)
	meta := func(namespace string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: r.coveringName, Namespace: namespace, Labels: map[string]string{"trustplane.io/generated-by": "rbac-unused"}}
	}
	covering := rbac.CoveringRules(plain)
	for _, ns := range slices.Sorted(maps.Keys(covering)) {
		if ns == "" {
			r.ClusterRole = &rbacv1.ClusterRole{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
				ObjectMeta: meta(""), Rules: covering[ns],
			}
			continue
		}
		r.Roles = append(r.Roles, &rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
			ObjectMeta: meta(ns), Rules: covering[ns],
		})
	}
	return r
}

// bindings are the bindings of the covering roles to the subject.
func (r *subjectReport) bindings() (rbs []*rbacv1.RoleBinding, crb *rbacv1.ClusterRoleBinding) {
	for _, role := range r.Roles {
		rbs = append(rbs, &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
			ObjectMeta: role.ObjectMeta,
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
			Subjects:   []rbacv1.Subject{r.subject},
		})
	}
	if r.ClusterRole != nil {
		crb = &rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: r.ClusterRole.ObjectMeta,
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: r.ClusterRole.Name},
			Subjects:   []rbacv1.Subject{r.subject},
		}
	}
	return rbs, crb
}

// writeUnusedJSON writes the reports as an indented JSON list.
func writeUnusedJSON(w io.Writer, reports []subjectReport) error {
	data, err := json.MarshalIndent(reports, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// writeCoveringYAML writes each subject's covering roles and their
// bindings as YAML documents, ClusterRole first, then Roles by namespace.
func writeCoveringYAML(w io.Writer, reports []subjectReport) error {
	for _, r := range reports {
		rbs, crb := r.bindings()
		var docs []any
		if r.ClusterRole != nil {
			docs = append(docs, r.ClusterRole, crb)
		}
		for i := range r.Roles {
			docs = append(docs, r.Roles[i], rbs[i])
		}
		fmt.Fprintf(w, "# %s %s: %d requests allowed (%d distinct), %d refused\n", r.Kind, r.Name, r.Allowed, len(r.Requests), r.Refused)
		if len(docs) == 0 {
			fmt.Fprintln(w, "# no request allowed: nothing to grant")
		}
		for _, d := range docs {
			data, err := yaml.Marshal(d)
			if err != nil {
				return err
			}
			fmt.Fprintln(w, "---")
			if _, err := w.Write(data); err != nil {
				return err
			}
		}
	}
	return nil
}

// wildcardShown is how many of the requests that used a wildcard
// permission the table shows.
const wildcardShown = 3

// writeUnusedTable writes one row per permission of each subject's
// bindings, then one per request that no binding grants.
func writeUnusedTable(w io.Writer, reports []subjectReport) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "SUBJECT\tVIA\tPERMISSION\tUSED")
	for _, r := range reports {
		for _, g := range r.Grants {
			via := grantPath(g.Grant)
			if g.Subject.Kind == rbacv1.GroupKind {
				via = "group " + g.Subject.Name + ": " + via
			}
			if len(g.Permissions) == 0 {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, via, "(no rules)", "-")
			}
			for _, p := range g.Permissions {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, via, rbac.DescribePermission(p.Rule), usedText(p))
			}
		}
		for _, rc := range r.Ungranted {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", r.Name, "(not granted by RBAC now)", rc.String(), rc.Count)
		}
	}
	return tw.Flush()
}

// usedText is a permission's USED cell: "never", a count, and for a
// wildcard the requests that used it.
func usedText(p rbac.PermissionUse) string {
	if p.Used == 0 {
		return "never"
	}
	s := strconv.Itoa(p.Used)
	if !p.Wildcard {
		return s
	}
	var shown []string
	for i, rc := range p.Requests {
		if i == wildcardShown {
			shown = append(shown, fmt.Sprintf("and %d more", len(p.Requests)-wildcardShown))
			break
		}
		shown = append(shown, fmt.Sprintf("%s ×%d", rc.String(), rc.Count))
	}
	return s + ": " + strings.Join(shown, ", ")
}
