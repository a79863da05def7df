package main

import "testing"

func TestMemoryLimitFlag(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  int64
		err   []string // substrings of the error; none: valid
	}{
		{"", 0, nil},
		{"448Mi", 448 << 20, nil},
		{"1Gi", 1 << 30, nil},
		{"500M", 500_000_000, nil},
		{"64Mi", 64 << 20, nil},
		{"63Mi", 0, []string{`--memory-limit "63Mi" must be at least 64Mi`}},
		{"512", 0, []string{`--memory-limit "512" must be at least 64Mi`}},
		{"-1Gi", 0, []string{`--memory-limit "-1Gi" must be at least 64Mi`}},
		{"lots", 0, []string{`--memory-limit "lots"`}},
	} {
		t.Run(tc.value, func(t *testing.T) {
			f := memoryLimitFlag{value: tc.value}
			checkValidation(t, f.validate(), tc.err)
			if got, _ := f.bytes(); got != tc.want {
				t.Errorf("bytes() = %d, want %d", got, tc.want)
			}
		})
	}
}
