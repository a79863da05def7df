// Package policytest is what a policy author runs against a working copy
// of Rego admission policies, offline: their unit tests, with OPA's
// tester (Run, and Report's formats), and one admission request decided
// as the API server would decide it (Decide).
//
// Both read policies as the server does, in Rego v1; Decide evaluates
// them with the server's own input builder and admission plugin, so that
// what it answers is what the server would answer. Nothing Decide shows
// carries the data of a Secret it was given (see opa.Redactor).
package policytest
