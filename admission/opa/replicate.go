package opa

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// ReplicationFile, in the policy directory, names the resources whose
// objects the policies read as data.kubernetes:
//
//	resources: [namespaces, serviceaccounts, apps/deployments]
const ReplicationFile = "replicate.yaml"

// LoadReplication reads a replication file; a missing one replicates
// nothing. Secrets are refused: their data is not for every policy to
// read.
func LoadReplication(path string) ([]schema.GroupResource, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var doc struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.UnmarshalStrict(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []schema.GroupResource
	for _, r := range doc.Resources {
		gr := ParseResource(r)
		if gr.Group == "" && gr.Resource == "secrets" {
			return nil, fmt.Errorf("%s: %q: %w", path, r, errSecretsNotReplicated)
		}
		out = append(out, gr)
	}
	return out, nil
}

// ParseResource reads "resource", "group/resource" or kube-mgmt's
// "version/resource" and "group/version/resource", in any case and
// spacing; "core" and "v1" name the core group.
func ParseResource(r string) schema.GroupResource {
	parts := strings.Split(strings.ToLower(strings.TrimSpace(r)), "/")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	resource := parts[len(parts)-1]
	group := ""
	switch len(parts) {
	case 2:
		group = parts[0]
	case 3:
		group = parts[0]
	}
	if group == "core" || group == "v1" {
		group = ""
	}
	if len(parts) == 2 && strings.HasPrefix(group, "v") && !strings.Contains(group, ".") && group != "" {
		// kube-mgmt's version/resource of the core group.
		group = ""
	}
	return schema.GroupResource{Group: group, Resource: resource}
}

// errSecretsNotReplicated refuses to give policies every Secret's data.
var errSecretsNotReplicated = errors.New("secrets are never replicated to the policies' data")
