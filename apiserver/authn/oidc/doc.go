// Package oidc authenticates OpenID Connect ID tokens as configured by the
// structured AuthenticationConfiguration file of kube-apiserver
// (apiserver.config.k8s.io/v1 or v1beta1, kind AuthenticationConfiguration,
// the file kube-apiserver reads with --authentication-config).
//
// The file is decoded strictly and validated by k8s.io/apiserver itself,
// and the tokens are verified by kube's own JWT authenticator
// (k8s.io/apiserver/plugin/pkg/authenticator/token/oidc, built on
// github.com/coreos/go-oidc): one authenticator per jwt entry, tried in
// turn; a token is only ever checked by the entry whose issuer URL equals
// its iss claim.
//
//	apiVersion: apiserver.config.k8s.io/v1
//	kind: AuthenticationConfiguration
//	jwt:
//	- issuer:
//	    url: https://login.example.com
//	    audiences: [trustplane]
//	    certificateAuthority: |
//	      -----BEGIN CERTIFICATE-----
//	      ...
//	  claimValidationRules:
//	  - claim: hd
//	    requiredValue: example.com
//	  claimMappings:
//	    username: {claim: sub, prefix: "example:"}
//	    groups: {claim: groups, prefix: "example:"}
//	    uid: {expression: "claims.sub"}
//	    extra:
//	    - key: example.com/tenant
//	      valueExpression: "claims.tenant"
//	  userValidationRules:
//	  - expression: "!user.username.startsWith('example:bad-')"
//	    message: banned user
//	anonymous:
//	  enabled: true
//	  conditions:
//	  - path: /livez
//
// trustplane is stricter than kube-apiserver in three ways:
//
//   - An identity from OIDC can never be system:*. [Load] refuses a
//     username or groups prefix that starts with "system:", and the
//     authenticator refuses (with an error, never by stripping) any token
//     whose username or one of whose groups starts with "system:", whatever
//     mapping produced it. The system: names belong to trustplane's own
//     components and ServiceAccounts.
//   - An issuer that is not ready when the server starts stops the start
//     (see [Config.Authenticator]) instead of refusing its tokens until it
//     is.
//   - egressSelectorType is refused: trustplane has no egress selector.
//
// Anonymous requests follow the anonymous block of the same file (see
// [Config.AnonymousEnabled]); without one, only the health paths are
// served anonymously.
package oidc
