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
		gr := schema.ParseGroupResource(r)
		if i := strings.Index(r, "/"); i >= 0 {
			gr = schema.GroupResource{Group: r[:i], Resource: r[i+1:]}
		}
		if gr.Group == "" && gr.Resource == "secrets" {
			return nil, fmt.Errorf("%s: %w", path, errSecretsNotReplicated)
		}
		out = append(out, gr)
	}
	return out, nil
}
