package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/trustplane/trustplane/datadir"
	"github.com/trustplane/trustplane/rbac"
)

// whoCanFlags are the flags of `trustplane who-can`.
type whoCanFlags struct {
	kubeconfig string
	dir        string
	namespace  string
	output     string
}

func (f *whoCanFlags) validate() error {
	if f.output != "table" && f.output != "json" {
		return fmt.Errorf("-o %q: want table or json", f.output)
	}
	return nil
}

func newWhoCanCommand() *cobra.Command {
	f := whoCanFlags{dir: datadir.DefaultDir, output: "table"}
	cmd := &cobra.Command{
		Use:   "who-can VERB RESOURCE [NAME]",
		Short: "List every user, group and ServiceAccount that RBAC allows a request, and the binding that allows it",
		Long: `List every subject (user, group or ServiceAccount) that RBAC allows to do VERB
on RESOURCE, and through which binding and role, as the API server's
authorizer would decide it now.

RESOURCE is "resource", "resource.group" or either of them followed by
"/subresource": pods, deployments.apps, pods/log. Short and singular names are
resolved through the server's discovery, as kubectl resolves them. NAME
limits the request to one object, which matters to rules with
resourceNames. A RESOURCE starting with "/" is a non-resource URL
(who-can get /metrics).

With -n the request is in that namespace, where RoleBindings of the
namespace grant it too. Without -n it is cluster-wide: a cluster-scoped
resource, or the resource in every namespace at once, which only
ClusterRoleBindings grant.

Subjects are listed as bindings name them: a group stands for all its
members, and system:authenticated for every authenticated user. The answer
is RBAC's alone: admission policies may still refuse a request RBAC allows.
Reading every role and binding of the cluster needs list on clusterroles,
roles, clusterrolebindings and rolebindings in all namespaces.`,
		Example: `  trustplane who-can get secrets -n default
  trustplane who-can create deployments.apps -n prod
  trustplane who-can get configmaps kube-root-ca.crt -n default
  trustplane who-can update nodes/status -o json`,
		Args: cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			q, err := parseWhoCanArgs(args, f.namespace)
			if err != nil {
				return err
			}
			client, err := clientset(f.kubeconfig, f.dir, "trustplane-who-can/"+version)
			if err != nil {
				return err
			}
			warn := func(s string) { fmt.Fprintln(cmd.ErrOrStderr(), "warning:", s) }
			if !q.nonResource() {
				dc := memory.NewMemCacheClientWithContext(discovery.ToDiscoveryInterfaceWithContext(client.Discovery()))
				mapper := restmapper.NewShortcutExpanderWithContext(restmapper.NewDeferredDiscoveryRESTMapperWithContext(dc), dc, warn)
				if err := q.resolve(cmd.Context(), mapper, warn); err != nil {
					return err
				}
			}
			objs, err := listRBAC(cmd.Context(), client)
			if err != nil {
				return err
			}
			grants := rbac.WhoCan(q.attributes(), objs.clusterRoles, objs.roles, objs.clusterRoleBindings, objs.roleBindings)
			if f.output == "json" {
				return writeGrantsJSON(cmd.OutOrStdout(), grants)
			}
			if len(grants) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "no subject may %s\n", q.String())
				return nil
			}
			return writeGrantsTable(cmd.OutOrStdout(), grants)
		},
	}
	flags := cmd.Flags()
	flags.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default $KUBECONFIG, else admin.conf in --dir)")
	flags.StringVar(&f.dir, "dir", f.dir, "data directory whose admin.conf is the default kubeconfig")
	flags.StringVarP(&f.namespace, "namespace", "n", "", "namespace of the request (default: cluster-wide)")
	flags.StringVarP(&f.output, "output", "o", f.output, "output format: table or json (the list of grants)")
	return cmd
}

// whoCanQuery is the request who-can asks about.
type whoCanQuery struct {
	verb        string
	group       string
	resource    string
	subresource string
	name        string
	namespace   string
	path        string // a non-resource URL, instead of the resource fields
}

// parseWhoCanArgs reads VERB RESOURCE [NAME] and --namespace.
func parseWhoCanArgs(args []string, namespace string) (whoCanQuery, error) {
	q := whoCanQuery{verb: args[0], namespace: namespace}
	target := args[1]
	if len(args) > 2 {
		q.name = args[2]
	}
	var errs []error
	if q.verb == "" || strings.ContainsAny(q.verb, "/ ") {
		errs = append(errs, fmt.Errorf("VERB %q: want a verb such as get, list or create", q.verb))
	}
	if strings.HasPrefix(target, "/") {
		q.path = target
		if q.name != "" {
			errs = append(errs, fmt.Errorf("NAME %q: a non-resource URL has no name", q.name))
		}
		if namespace != "" {
			errs = append(errs, fmt.Errorf("--namespace %q: a non-resource URL has no namespace", namespace))
		}
		return q, errors.Join(errs...)
	}
	res, sub, _ := strings.Cut(target, "/")
	q.resource, q.group, _ = strings.Cut(res, ".")
	q.subresource = sub
	if q.resource == "" || strings.Contains(sub, "/") || (strings.Contains(target, "/") && sub == "") {
		errs = append(errs, fmt.Errorf("RESOURCE %q: want resource, resource.group or resource/subresource", target))
	}
	return q, errors.Join(errs...)
}

func (q *whoCanQuery) nonResource() bool { return q.path != "" }

// resolve turns the resource as typed (short name, singular, kind, group
// left out) into the resource and group the server serves, as kubectl
// does, since RBAC rules name the plural resource in its group: asked as
// typed, "deployments" would be the core group's, which no one serves, and
// the answer would leave out everyone bound to the real one. A resource the
// server does not know is kept as typed, with a warning, since a rule may
// name it all the same. A cluster-scoped resource with a namespace is an
// error: no such request exists.
func (q *whoCanQuery) resolve(ctx context.Context, mapper meta.RESTMapperWithContext, warn func(string)) error {
	if q.resource == "*" || q.group == "*" {
		return nil
	}
	typed := q.groupResource()
	gvr, err := mapper.ResourceForWithContext(ctx, schema.GroupVersionResource{Group: q.group, Resource: q.resource})
	if meta.IsNoMatchError(err) {
		warn(fmt.Sprintf("the server does not serve %q; answering for it as typed", typed))
		return nil
	}
	if err != nil {
		return fmt.Errorf("RESOURCE %q: %w", typed, err)
	}
	q.group, q.resource = gvr.Group, gvr.Resource
	gvk, err := mapper.KindForWithContext(ctx, gvr)
	if err != nil {
		return fmt.Errorf("RESOURCE %q: %w", typed, err)
	}
	mapping, err := mapper.RESTMappingWithContext(ctx, gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("RESOURCE %q: %w", typed, err)
	}
	if q.namespace != "" && mapping.Scope.Name() == meta.RESTScopeNameRoot {
		return fmt.Errorf("--namespace %q: %s is cluster-scoped", q.namespace, q.groupResource())
	}
	return nil
}

func (q *whoCanQuery) groupResource() string {
	return schema.GroupResource{Group: q.group, Resource: q.resource}.String()
}

func (q *whoCanQuery) attributes() authorizer.Attributes {
	if q.nonResource() {
		return authorizer.AttributesRecord{Verb: q.verb, Path: q.path}
	}
	return authorizer.AttributesRecord{
		Verb:            q.verb,
		APIGroup:        q.group,
		Resource:        q.resource,
		Subresource:     q.subresource,
		Name:            q.name,
		Namespace:       q.namespace,
		ResourceRequest: true,
	}
}

// String says what is asked, for "no subject may ...".
func (q *whoCanQuery) String() string {
	if q.nonResource() {
		return q.verb + " " + q.path
	}
	s := q.verb + " " + q.groupResource()
	if q.subresource != "" {
		s += "/" + q.subresource
	}
	if q.name != "" {
		s += " " + q.name
	}
	if q.namespace != "" {
		return s + " in namespace " + q.namespace
	}
	return s + " cluster-wide"
}

// rbacObjects are all the RBAC objects of a cluster.
type rbacObjects struct {
	clusterRoles        []*rbacv1.ClusterRole
	roles               []*rbacv1.Role
	clusterRoleBindings []*rbacv1.ClusterRoleBinding
	roleBindings        []*rbacv1.RoleBinding
}

// listRBAC reads every ClusterRole, Role, ClusterRoleBinding and RoleBinding,
// the namespaced ones in all namespaces.
func listRBAC(ctx context.Context, client kubernetes.Interface) (rbacObjects, error) {
	var objs rbacObjects
	api := client.RbacV1()
	all := metav1.ListOptions{}
	crs, err := api.ClusterRoles().List(ctx, all)
	if err != nil {
		return objs, fmt.Errorf("list clusterroles: %w", err)
	}
	roles, err := api.Roles(metav1.NamespaceAll).List(ctx, all)
	if err != nil {
		return objs, fmt.Errorf("list roles: %w", err)
	}
	crbs, err := api.ClusterRoleBindings().List(ctx, all)
	if err != nil {
		return objs, fmt.Errorf("list clusterrolebindings: %w", err)
	}
	rbs, err := api.RoleBindings(metav1.NamespaceAll).List(ctx, all)
	if err != nil {
		return objs, fmt.Errorf("list rolebindings: %w", err)
	}
	objs.clusterRoles = itemPointers(crs.Items)
	objs.roles = itemPointers(roles.Items)
	objs.clusterRoleBindings = itemPointers(crbs.Items)
	objs.roleBindings = itemPointers(rbs.Items)
	return objs, nil
}

// itemPointers returns a pointer to each element of items.
func itemPointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// writeGrantsJSON writes grants as an indented JSON array of rbac.Grant,
// "[]" when there are none.
func writeGrantsJSON(w io.Writer, grants []rbac.Grant) error {
	if grants == nil {
		grants = []rbac.Grant{}
	}
	data, err := json.MarshalIndent(grants, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// writeGrantsTable writes one row per grant: the subject's kind, name and
// namespace (ServiceAccounts only), and the binding and role it holds.
func writeGrantsTable(w io.Writer, grants []rbac.Grant) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "SUBJECT-KIND\tSUBJECT\tNAMESPACE\tVIA")
	for _, g := range grants {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", g.Subject.Kind, g.Subject.Name, g.Subject.Namespace, grantPath(g))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// grantPath is how g grants: "ClusterRoleBinding/NAME → ClusterRole/NAME",
// or "RoleBinding/NAMESPACE/NAME → Role/NAMESPACE/NAME" (or a ClusterRole)
// for a RoleBinding.
func grantPath(g rbac.Grant) string {
	if g.BindingNamespace == "" {
		return fmt.Sprintf("%s/%s → %s/%s", g.BindingKind, g.BindingName, g.RoleKind, g.RoleName)
	}
	role := g.RoleKind + "/" + g.RoleName
	if g.RoleKind == "Role" {
		role = g.RoleKind + "/" + g.BindingNamespace + "/" + g.RoleName
	}
	return fmt.Sprintf("%s/%s/%s → %s", g.BindingKind, g.BindingNamespace, g.BindingName, role)
}
