package controllers

import (
	"testing"
	"time"
)

func TestExpectations(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	e := newExpectations(func() time.Time { return now })
	const rs = "team/web"
	check := func(step string, want bool) {
		t.Helper()
		if got := e.satisfied(rs); got != want {
			t.Errorf("%s: satisfied = %v, want %v", step, got, want)
		}
	}
	check("never set", true)

	e.expectCreations(rs, 2)
	check("2 creations pending", false)
	e.creationObserved(rs)
	check("1 creation pending", false)
	e.creationObserved(rs)
	check("creations observed", true)
	e.creationObserved(rs)
	e.expectCreations(rs, 1)
	check("an extra observation does not count towards the next creations", false)
	e.creationObserved(rs)

	e.expectDeletions(rs, []string{"team/web-a", "team/web-b"})
	check("2 deletions pending", false)
	e.deletionObserved(rs, "team/web-a")
	e.deletionObserved(rs, "team/web-a")
	check("one deletion observed twice (deletionTimestamp, then gone)", false)
	e.deletionObserved(rs, "team/other")
	check("another pod's deletion", false)
	e.deletionObserved(rs, "team/web-b")
	check("deletions observed", true)

	e.expectCreations(rs, 3)
	now = now.Add(expectationsTimeout)
	check("at the timeout", false)
	now = now.Add(time.Second)
	check("past the timeout", true)

	e.expectCreations(rs, 1)
	e.forget(rs)
	check("forgotten", true)
	e.creationObserved(rs)
	e.deletionObserved(rs, "team/web-a")
	check("observations of a forgotten key", true)
}
