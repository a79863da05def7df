// Package policytest is what a policy author runs against a working copy
// of Rego admission policies, offline: their unit tests, with OPA's
// tester (Run, and Report's formats), reading the policies as the server
// does, in Rego v1.
package policytest
