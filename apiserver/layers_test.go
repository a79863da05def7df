package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/trustplane/trustplane/apiserver/storage"
	"github.com/trustplane/trustplane/audit"
	"github.com/trustplane/trustplane/etcd/etcdtest"
)

// layerCase is one server of BenchmarkSecretCreateLayers and what it
// leaves out: filters of the chain, and guards of the write path.
type layerCase struct {
	name    string
	filters []string // names of pipeline filters left out
	without guards
}

// layerCases are every layer on, each of audit, authorization, admission
// and encryption off in turn, then all four off.
var layerCases = []layerCase{
	{name: "all-on"},
	{name: "audit-off", filters: []string{"audit"}},
	{name: "rbac-off", filters: []string{"authorization"}},
	{name: "admission-off", without: guards{admission: true}},
	{name: "encryption-off", without: guards{encryption: true}},
	{name: "all-off", filters: []string{"audit", "authorization"}, without: guards{admission: true, encryption: true}},
}

// layersNamespace is where the benchmark creates its Secrets: a
// namespace labelled for them, as the shipped policies ask.
const layersNamespace = "bench"

// layerServer is one running server of the benchmark, its own etcd
// beneath it, and a client-go client of it as admin.
type layerServer struct {
	layerCase
	ts     *testServer
	client *kubernetes.Clientset
}

// startLayerServer starts the server of lc over an etcd of its own, so
// that no server's watch caches decode another's writes, with the shipped
// policy library. Authorization off is the chain without its
// authorization filter: nothing is asked, everything passes, as with an
// authorizer that allows all. Audit off is the chain without its audit
// filter: no policy is evaluated and nothing is written.
func startLayerServer(b *testing.B, lc layerCase) *layerServer {
	b.Helper()
	e := etcdtest.Start(b)
	cfg, auditLog := testConfig(b, e, withShippedPolicies(b), func(c *Config) { c.without = lc.without })
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	chain := slices.DeleteFunc(s.pipeline(), func(f filter) bool { return slices.Contains(lc.filters, f.name) })
	if len(chain) != len(s.pipeline())-len(lc.filters) {
		b.Fatalf("%s: the pipeline has no filter among %v", lc.name, lc.filters)
	}
	s.handler = buildChain(http.HandlerFunc(s.route), chain, nil)
	ts := runServer(b, e, s, auditLog)
	cfgREST := ts.restConfig(b, admin)
	cfgREST.ContentType = "application/vnd.kubernetes.protobuf"
	cfgREST.WarningHandler = rest.NoWarnings{}
	cs, err := kubernetes.NewForConfig(cfgREST)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: layersNamespace, Labels: map[string]string{"trustplane.io/secrets": "allowed"}}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	// Admission sees the namespace once the watch cache has it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := cs.CoreV1().Secrets(layersNamespace).Create(ctx, benchSecret("probe"), metav1.CreateOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: probe create: %v", lc.name, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return &layerServer{layerCase: lc, ts: ts, client: cs}
}

var benchPayload = []byte(strings.Repeat("abcdefghijklmnopqrstuvwxyz", 40))

func benchSecret(name string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"value": benchPayload}}
}

// BenchmarkSecretCreateLayers measures what each security layer costs
// Secret creates. Six API servers, each over its own etcd and with the
// shipped policy library: every layer on as shipped (audit with its hash
// chain, RBAC and the Node authorizer, the built-in admission plugins and
// the OPA policies, AES-GCM for Secrets); each of audit, authorization
// (rbac-off), admission (built-in and OPA) and encryption off in turn; and
// all four off. They take turns, each b.N/2 creates at concurrency 32
// forwards then backwards, so that a drift of load on the machine weighs
// on all alike. It reports each server's rate and the process's CPU per
// create (client, server and etcd), which other load changes less, and
// all on ÷ all off for both.
//
// The switches exist only here: the filters are left out of the chain by
// this benchmark, and the guards by a Config field no option sets
// (TestGuardsOffOnlyInTests).
//
//	go test ./apiserver -run '^$' -bench SecretCreateLayers -benchtime 2000x
func BenchmarkSecretCreateLayers(b *testing.B) {
	var servers []*layerServer
	for _, lc := range layerCases {
		servers = append(servers, startLayerServer(b, lc))
	}
	checkLayers(b, servers)
	ctx := context.Background()
	n := max(b.N/2, 1)
	elapsed := make([]time.Duration, len(servers))
	cpu := make([]time.Duration, len(servers))
	order := make([]int, 0, 2*len(servers))
	for i := range servers {
		order = append(order, i)
	}
	for i := range servers {
		order = append(order, len(servers)-1-i)
	}
	b.ResetTimer()
	for phase, i := range order {
		ls := servers[i]
		before := processCPUTime(b)
		elapsed[i] += runConcurrently(b, n, func(j int) error {
			_, err := ls.client.CoreV1().Secrets(layersNamespace).Create(ctx, benchSecret(fmt.Sprintf("p%d-%d", phase, j)), metav1.CreateOptions{})
			return err
		})
		cpu[i] += processCPUTime(b) - before
	}
	b.StopTimer()
	creates := float64(2 * n)
	rate := make([]float64, len(servers))
	perCreate := make([]float64, len(servers))
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-15s %10s %14s %10s\n", "server", "creates/s", "cpu-µs/create", "cpu ÷ on")
	for i, ls := range servers {
		rate[i] = creates / elapsed[i].Seconds()
		perCreate[i] = float64(cpu[i].Microseconds()) / creates
		b.ReportMetric(rate[i], "creates/s-"+ls.name)
		b.ReportMetric(perCreate[i], "cpu-µs/create-"+ls.name)
		fmt.Fprintf(&table, "%-15s %10.0f %14.0f %10.2f\n", ls.name, rate[i], perCreate[i], perCreate[i]/perCreate[0])
	}
	on, off := 0, len(servers)-1
	b.ReportMetric(rate[on]/rate[off], "ratio-all")
	b.ReportMetric(perCreate[off]/perCreate[on], "cpu-ratio-all")
	fmt.Fprintf(&table, "all on ÷ all off: rate %.2f, CPU per create %.2f", rate[on]/rate[off], perCreate[off]/perCreate[on])
	// The testing package runs b.N = 1 first, and prints the log of one
	// run only: the table is the measured run's.
	if b.N > 1 {
		b.Log(table.String())
	}

	// What was measured: every create of the servers that audit is in
	// their logs, chained; the others' logs are empty.
	for _, ls := range servers {
		_, verifiers := auditSigner(b, ls.ts.etcd)
		v, err := audit.Verify([]string{ls.ts.auditLog}, verifiers)
		audited := !slices.Contains(ls.filters, "audit")
		switch {
		case err != nil || v.Finding != nil:
			b.Fatalf("%s: audit log: %v, %v", ls.name, err, v.Finding)
		case audited && v.Events < int64(2*n):
			b.Fatalf("%s: %d audit events, want %d or more", ls.name, v.Events, 2*n)
		case !audited && v.Events != 0:
			b.Fatalf("%s: %d audit events, want none", ls.name, v.Events)
		}
	}
}

// checkLayers fails unless each server has exactly the layers its case
// says, each tried with a request it would refuse or a value it would
// store otherwise.
func checkLayers(b *testing.B, servers []*layerServer) {
	b.Helper()
	ctx := context.Background()
	for _, ls := range servers {
		// Authorization: a user no role binds may create nothing.
		stranger := ls.ts.clientset(b, &identity{user: "stranger"})
		_, err := stranger.CoreV1().Secrets(layersNamespace).Create(ctx, benchSecret("stranger"), metav1.CreateOptions{})
		if authorized := !slices.Contains(ls.filters, "authorization"); authorized != apierrors.IsForbidden(err) {
			b.Fatalf("%s: a create by an unbound user: %v; authorization on: %v", ls.name, err, authorized)
		}
		// Admission: NamespaceLifecycle refuses a Secret in a
		// namespace that does not exist.
		_, err = ls.client.CoreV1().Secrets("nowhere").Create(ctx, benchSecret("lost"), metav1.CreateOptions{})
		if admitted := !ls.without.admission; admitted != apierrors.IsNotFound(err) {
			b.Fatalf("%s: a Secret in a missing namespace: %v; admission on: %v", ls.name, err, admitted)
		}
		// Encryption: the probe Secret as etcd holds it.
		raw, err := ls.ts.etcd.Client(b).Get(ctx, storage.Key(secretsGR, layersNamespace, "probe"))
		if err != nil || len(raw.Kvs) != 1 {
			b.Fatalf("%s: the probe in etcd: %v %v", ls.name, raw, err)
		}
		if encrypted := bytes.HasPrefix(raw.Kvs[0].Value, []byte("k8s:enc:aesgcm:v1:")); encrypted == ls.without.encryption {
			b.Fatalf("%s: the stored Secret encrypted: %v; encryption on: %v", ls.name, encrypted, !ls.without.encryption)
		}
	}
}

// The switches that leave a guard out of a server exist for the
// benchmark only: no file of the module but a test sets Config.without,
// so neither an option nor a flag of trustplane up or apiserver reaches
// it. (The filters the benchmark leaves out, it leaves out of the chain
// itself, in this file.)
func TestGuardsOffOnlyInTests(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root %s: %v", root, err)
	}
	fset := token.NewFileSet()
	var setters []string
	var seen int
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		seen++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.KeyValueExpr:
				if id, ok := n.Key.(*ast.Ident); ok && id.Name == "without" {
					setters = append(setters, fset.Position(n.Pos()).String())
				}
			case *ast.AssignStmt:
				for _, lhs := range n.Lhs {
					if writesWithout(lhs) {
						setters = append(setters, fset.Position(n.Pos()).String())
					}
				}
			case *ast.UnaryExpr:
				// &c.without, to be set through the pointer.
				if n.Op == token.AND && writesWithout(n.X) {
					setters = append(setters, fset.Position(n.Pos()).String())
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 100 {
		t.Fatalf("parsed %d Go files under %s; want the whole module", seen, root)
	}
	if len(setters) > 0 {
		t.Errorf("Config.without is set outside tests, at %v", setters)
	}

}

// writesWithout is whether x is a selector of a field named without, or
// of a field of it.
func writesWithout(x ast.Expr) bool {
	for {
		sel, ok := x.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		if sel.Sel.Name == "without" {
			return true
		}
		x = sel.X
	}
}
