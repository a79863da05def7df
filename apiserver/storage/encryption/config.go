package encryption

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"sigs.k8s.io/yaml"
)

// Key is a provider and the name of one of its keys, as a stored value's
// prefix names them. Identity has no name: its values are plain text.
// A KMS v2 value names the KMS key it was sealed under too, its KeyID,
// which the plugin reports: a key of a configuration has none, and one
// of a value is the plugin's key of the time.
type Key struct {
	Provider string `json:"provider"`
	Name     string `json:"name,omitempty"`
	KeyID    string `json:"keyID,omitempty"`
}

// Providers, as the prefixes of their values name them.
const (
	AESGCM    = "aesgcm"
	AESCBC    = "aescbc"
	Secretbox = "secretbox"
	KMS       = "kms"
	Identity  = "identity"
	// Unknown is a value with the encrypted prefix of no provider the
	// scan knows.
	Unknown = "unknown"
)

// Plain is the key of a value in plain text.
var Plain = Key{Provider: Identity}

func (k Key) String() string {
	switch {
	case k.Name == "":
		return k.Provider
	case k.KeyID != "":
		return k.Provider + " key " + k.Name + " (key id " + k.KeyID + ")"
	}
	return k.Provider + " key " + k.Name
}

// Encrypts is whether the key encrypts what it writes.
func (k Key) Encrypts() bool { return k.Provider != Identity }

// Rule is what the configuration says of one resource: the providers'
// keys in order, the first the one every write uses, and the resource
// pattern that matched (secrets, *.apps, *.*).
type Rule struct {
	Pattern string `json:"rule"`
	Keys    []Key  `json:"keys"`
}

// WriteKey is the key new writes are stored under.
func (r Rule) WriteKey() Key { return r.Keys[0] }

// Has is whether k is one of the rule's keys: a value under a key the
// rule does not have cannot be read. A KMS key id is the plugin's to
// know, not the rule's.
func (r Rule) Has(k Key) bool {
	k.KeyID = ""
	for _, have := range r.Keys {
		if have == k {
			return true
		}
	}
	return false
}

// Config is an EncryptionConfiguration as the scan needs it. Its keys'
// secrets are not kept.
type Config struct {
	// rules maps each resource pattern of the file to its keys, in the
	// loader's order: a resource listed twice has both lists.
	rules map[schema.GroupResource]Rule
	// kmsEndpoints are the KMS v2 providers' plugins, by provider name.
	kmsEndpoints map[string]string
}

// KMSEndpoint is the endpoint of the plugin of the KMS v2 provider name.
func (c *Config) KMSEndpoint(name string) (string, bool) {
	e, ok := c.kmsEndpoints[name]
	return e, ok
}

// ReadConfig reads an apiserver.config.k8s.io/v1 EncryptionConfiguration.
// It does not check the keys: the API server's loader does.
func ReadConfig(path string) (*Config, error) {
	f, err := readConfigFile(path)
	if err != nil {
		return nil, err
	}
	c := &Config{rules: map[schema.GroupResource]Rule{}, kmsEndpoints: map[string]string{}}
	for i, rc := range f.cfg.Resources {
		var keys []Key
		for j, p := range rc.Providers {
			if p.KMS != nil && p.KMS.APIVersion == "v2" {
				c.kmsEndpoints[p.KMS.Name] = p.KMS.Endpoint
			}
			k, err := providerKeys(p)
			if err != nil {
				return nil, fmt.Errorf("encryption config %s: resources[%d].providers[%d]: %w", path, i, j, err)
			}
			keys = append(keys, k...)
		}
		for _, res := range rc.Resources {
			gr := schema.ParseGroupResource(res)
			r := c.rules[gr]
			r.Pattern = res
			r.Keys = append(r.Keys, keys...)
			c.rules[gr] = r
		}
	}
	return c, nil
}

// parseConfig decodes the file strictly, so that a misspelt field is an
// error rather than a provider silently missing. Its errors name fields,
// never their values.
func parseConfig(data []byte) (*apiserverv1.EncryptionConfiguration, error) {
	var cfg apiserverv1.EncryptionConfiguration
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return nil, errors.New(redactDecodeError(err))
	}
	if cfg.Kind != "EncryptionConfiguration" || cfg.APIVersion != apiserverv1.SchemeGroupVersion.String() {
		return nil, fmt.Errorf("kind %q, apiVersion %q: want EncryptionConfiguration, %s", cfg.Kind, cfg.APIVersion, apiserverv1.SchemeGroupVersion)
	}
	return &cfg, nil
}

// redactDecodeError keeps a decoding error's position and field, and
// drops a quoted value, which could be a key.
func redactDecodeError(err error) string {
	msg := err.Error()
	if i := strings.IndexAny(msg, "\"'`"); i >= 0 {
		msg = msg[:i] + "(value withheld)"
	}
	return "decode: " + msg
}

// providerKeys are the keys of one provider, in order.
func providerKeys(p apiserverv1.ProviderConfiguration) ([]Key, error) {
	named := func(provider string, keys []apiserverv1.Key) []Key {
		out := make([]Key, 0, len(keys))
		for _, k := range keys {
			out = append(out, Key{Provider: provider, Name: k.Name})
		}
		return out
	}
	switch {
	case p.AESGCM != nil:
		return named(AESGCM, p.AESGCM.Keys), nil
	case p.AESCBC != nil:
		return named(AESCBC, p.AESCBC.Keys), nil
	case p.Secretbox != nil:
		return named(Secretbox, p.Secretbox.Keys), nil
	case p.KMS != nil:
		return []Key{{Provider: KMS, Name: p.KMS.Name}}, nil
	case p.Identity != nil:
		return []Key{Plain}, nil
	}
	return nil, errors.New("no provider set")
}

// RuleFor is the rule that covers gr, as the loader chooses it: the
// resource named, else its group's wildcard, else *.*. ok is false when
// none does: gr is stored in plain text.
func (c *Config) RuleFor(gr schema.GroupResource) (Rule, bool) {
	for _, try := range []schema.GroupResource{gr, {Group: gr.Group, Resource: "*"}, {Group: "*", Resource: "*"}} {
		if r, ok := c.rules[try]; ok && len(r.Keys) > 0 {
			return r, true
		}
	}
	return Rule{}, false
}
