package apiserver

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/trustplane/trustplane/apiserver/registry"
	"github.com/trustplane/trustplane/apiserver/storage"
	"github.com/trustplane/trustplane/rbac"
)

// An authorizer whose caches have not synced refuses everything, the
// cluster admin included, and says why for the log.
func TestUnsyncedAuthorizerRefuses(t *testing.T) {
	ts := startServer(t)
	caches := map[schema.GroupResource]*storage.Cacher{}
	for _, res := range ts.server.registry.Stored() {
		// Never run: not synced.
		caches[res.GroupResource()] = newTestCacher(ts, res)
	}
	indexBindings(caches)
	authz, err := rbac.New(cacheReader{store: ts.server.store, caches: caches})
	if err != nil {
		t.Fatal(err)
	}
	attrs := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "admin", Groups: []string{rbac.ClusterAdminsGroup}}, Verb: "get", Resource: "secrets", Namespace: "default", ResourceRequest: true}
	decision, _, err := authz.Authorize(context.Background(), attrs)
	if decision == authorizer.DecisionAllow || err == nil {
		t.Errorf("unsynced authorizer: %v, %v; want a refusal with an error", decision, err)
	}
}

func newTestCacher(ts *testServer, res *registry.Resource) *storage.Cacher {
	return storage.NewCacher(ts.server.store, res.GroupResource(), res.NewObject, 10, ts.server.logger)
}
