//go:build !invariants

package trietest

// InvariantChecks is false in ordinary builds (see invariants_on.go).
const InvariantChecks = false
