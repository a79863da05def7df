package controllers

import (
	"slices"
	"strings"
	"testing"

	"github.com/trustplane/trustplane/rbac"
)

// Every controller has an identity, and every identity a controller.
func TestEveryControllerHasAnIdentity(t *testing.T) {
	var named []string
	for _, c := range rbac.Controllers() {
		if controllers[c.Name] == nil {
			t.Errorf("identity %s names no controller", c.Name)
		}
		named = append(named, c.Name)
	}
	for name := range controllers {
		if !slices.Contains(named, name) {
			t.Errorf("controller %s has no identity", name)
		}
	}
}

func TestSelect(t *testing.T) {
	allBut := func(name string) []string {
		return slices.DeleteFunc(Names(), func(n string) bool { return n == name })
	}
	for _, tc := range []struct {
		list    []string
		want    []string
		wantErr string
	}{
		{list: nil, want: Names()},
		{list: []string{"*"}, want: Names()},
		{list: []string{"*", "-serviceaccount"}, want: allBut("serviceaccount")},
		{list: []string{"-serviceaccount", "*"}, want: allBut("serviceaccount")},
		{list: []string{"serviceaccount"}, want: []string{"serviceaccount"}},
		{list: []string{"replicaset", "-replicaset"}, want: nil},
		{list: []string{"cronjob"}, wantErr: `unknown controller "cronjob"`},
	} {
		got, err := Select(tc.list)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Select(%q): %v, want %q", tc.list, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Select(%q) = %q, %v; want %q", tc.list, got, err, tc.want)
		}
	}
}
