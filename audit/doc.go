// Package audit decides how much of each request the audit log records and
// writes audit.k8s.io/v1 events, one JSON object per line.
//
// The level comes from an audit.k8s.io/v1 Policy evaluated by
// k8s.io/apiserver's policy evaluator, with one rule the policy cannot
// override: requests that carry Secret data or credentials (Secrets,
// ServiceAccount tokens, TokenReviews) are recorded at Metadata at most, so
// their bodies never reach the log.
//
// The Writer chains every event to the one before by a hash and signs a
// checkpoint of the chain every so many events (chain.go); it rotates its
// file as kube-apiserver's --audit-log-max* flags say, the chain running on
// across files (rotate.go); Verify checks the chain across the files that
// LogFiles lists, and Query reads them. The Webhook sends events to a
// webhook as kube-apiserver's batch webhook backend does; Union writes to
// it and to the log. Every backend fails closed: an event it cannot keep is
// an error, and the request it describes is refused.
package audit
