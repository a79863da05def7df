// Package policytest is what a policy author runs against a working copy
// of Rego admission policies: offline, their unit tests, with OPA's
// tester (Run, and Report's formats), and one admission request decided
// as the API server would decide it (Decide); against a running cluster,
// every live object judged as if each policy were enforced as deny
// (Audit).
//
// All read policies as the server does, in Rego v1; Decide evaluates
// them with the server's own input builder and admission plugin, so that
// what it answers is what the server would answer, and Audit decides
// each object with Decide. Nothing Decide or Audit shows carries the data
// of a Secret it was given (see opa.Redactor).
package policytest
