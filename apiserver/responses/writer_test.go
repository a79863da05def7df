package responses

import (
	"fmt"
	"net/http/httptest"
	"slices"
	"testing"
)

func TestWarn(t *testing.T) {
	many := make([]string, 150)
	for i := range many {
		many[i] = fmt.Sprintf("unknown field %q", fmt.Sprintf("f%d", i))
	}
	tests := []struct {
		name  string
		calls [][]string
		want  []string // the first and last headers, and how many
		count int
	}{
		{name: "quoted", calls: [][]string{{`unknown field "spec.foo"`}}, want: []string{`299 - "unknown field \"spec.foo\""`}, count: 1},
		{name: "a control character cannot end the header", calls: [][]string{{"unknown field \"a\r\nX-Injected: 1\""}}, want: []string{`299 - "unknown field \"a\r\nX-Injected: 1\""`}, count: 1},
		{name: "duplicates across calls", calls: [][]string{{"a", "b"}, {"b", "a", "c"}}, want: []string{`299 - "a"`, `299 - "c"`}, count: 3},
		{name: "at most maxWarnings", calls: [][]string{many}, want: []string{`299 - "unknown field \"f0\""`, `299 - "more warnings left out"`}, count: maxWarnings},
		{name: "none past the limit", calls: [][]string{many, {"late"}}, want: []string{`299 - "unknown field \"f0\""`, `299 - "more warnings left out"`}, count: maxWarnings},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			for _, texts := range tt.calls {
				Warn(w, texts...)
			}
			got := w.Header().Values("Warning")
			if len(got) != tt.count || got[0] != tt.want[0] || got[len(got)-1] != tt.want[len(tt.want)-1] {
				t.Errorf("headers %q, want %d from %q to %q", got, tt.count, tt.want[0], tt.want[len(tt.want)-1])
			}
			if slices.Contains(got, "") {
				t.Errorf("an empty header in %q", got)
			}
		})
	}
}
