// Package audit decides how much of each request the audit log records and
// writes audit.k8s.io/v1 events, one JSON object per line.
//
// The level comes from an audit.k8s.io/v1 Policy evaluated by
// k8s.io/apiserver's policy evaluator, with one rule the policy cannot
// override: requests that carry Secret data or credentials (Secrets,
// ServiceAccount tokens, TokenReviews) are recorded at Metadata at most, so
// their bodies never reach the log.
package audit
