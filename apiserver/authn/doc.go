// Package authn builds the API server's request authenticator: the
// credential methods trustplane accepts, tried in turn, each returning a
// user or an error for a credential that is present but invalid.
//
// The methods are an X.509 client certificate from the cluster CA (the
// common name is the user, the organizations are the groups) and a
// ServiceAccount token (an ES256 JWT whose ServiceAccount and bound object
// are looked up live on every request), and a bootstrap token
// (<id>.<secret>, kube's form, checked against its Secret
// kube-system/bootstrap-token-<id> on every request: the user
// system:bootstrap:<id> in system:bootstrappers). Every authenticated user also gets
// the group system:authenticated.
package authn
