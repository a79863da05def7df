package audit

import (
	"errors"
	"fmt"

	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/audit/policy"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// DefaultPolicy is the audit policy `trustplane init` writes: Secrets,
// ConfigMaps and credential-bearing requests at Metadata, writes with their
// request and response, reads with their request, health probes not at all.
const DefaultPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages:
  - RequestReceived
rules:
  - level: None
    nonResourceURLs:
      - /livez
      - /livez/*
      - /readyz
      - /readyz/*
      - /healthz
      - /healthz/*
  - level: Metadata
    resources:
      - group: ""
        resources: ["secrets", "configmaps", "serviceaccounts/token"]
      - group: authentication.k8s.io
        resources: ["tokenreviews"]
  - level: RequestResponse
    verbs: ["create", "update", "patch", "delete", "deletecollection"]
  - level: Request
`

// Policy decides the audit level of a request.
type Policy struct {
	evaluator audit.PolicyRuleEvaluator
}

// LoadPolicy reads an audit.k8s.io/v1 Policy file.
func LoadPolicy(path string) (*Policy, error) {
	if path == "" {
		return nil, errors.New("audit policy file is not set")
	}
	p, err := policy.LoadPolicyFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("load audit policy: %w", err)
	}
	return &Policy{evaluator: policy.NewPolicyRuleEvaluator(p)}, nil
}

// ParsePolicy parses an audit.k8s.io/v1 Policy document.
func ParsePolicy(data []byte) (*Policy, error) {
	p, err := policy.LoadPolicyFromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("parse audit policy: %w", err)
	}
	return &Policy{evaluator: policy.NewPolicyRuleEvaluator(p)}, nil
}

// Decision is what the policy says of one request: the level it is
// recorded at, the stages it is recorded at (omitStages, the policy's and
// its rule's together), and whether managedFields are left out of the
// objects it records.
type Decision struct {
	Level             auditv1.Level
	OmitManagedFields bool
	omit              stageSet
}

// stageSet is a set of stages, one bit each.
type stageSet uint8

func stageBit(s auditv1.Stage) stageSet {
	switch s {
	case auditv1.StageRequestReceived:
		return 1
	case auditv1.StageResponseStarted:
		return 2
	case auditv1.StageResponseComplete:
		return 4
	case auditv1.StagePanic:
		return 8
	}
	return 0
}

// Logs reports whether the request's event of stage is recorded.
func (d Decision) Logs(stage auditv1.Stage) bool {
	return d.Level != auditv1.LevelNone && d.omit&stageBit(stage) == 0
}

// Decide is what the policy says of the request described by attrs.
func (p *Policy) Decide(attrs authorizer.Attributes) Decision {
	c := p.evaluator.EvaluatePolicyRule(attrs)
	d := Decision{Level: auditv1.Level(c.Level), OmitManagedFields: c.OmitManagedFields}
	if carriesSecrets(attrs) && auditinternal.LevelMetadata.Less(c.Level) {
		d.Level = auditv1.LevelMetadata
	}
	for _, s := range c.OmitStages {
		d.omit |= stageBit(auditv1.Stage(s))
	}
	return d
}

// Level is the level the request described by attrs is recorded at.
func (p *Policy) Level(attrs authorizer.Attributes) auditv1.Level {
	return p.Decide(attrs).Level
}

// carriesSecrets reports whether request or response bodies may hold
// Secret data or credentials.
func carriesSecrets(attrs authorizer.Attributes) bool {
	if !attrs.IsResourceRequest() {
		return false
	}
	switch attrs.GetAPIGroup() + "/" + attrs.GetResource() {
	case "/secrets", "authentication.k8s.io/tokenreviews":
		return true
	case "/serviceaccounts":
		return attrs.GetSubresource() == "token"
	}
	return false
}

// AtLeast reports whether level records at least as much as min.
func AtLeast(level, min auditv1.Level) bool {
	return !auditinternal.Level(level).Less(auditinternal.Level(min))
}
