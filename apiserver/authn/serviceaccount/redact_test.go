package serviceaccount

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestTokenRedacts(t *testing.T) {
	const secret = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"
	tok := Token(secret)
	holder := struct {
		User  string
		Token Token
	}{"alice", tok}

	fmtCases := []struct {
		format string
		arg    any
		want   string
	}{
		{"%v", tok, "[redacted]"},
		{"%s", tok, "[redacted]"},
		{"%+v", tok, "[redacted]"},
		{"%#v", tok, `serviceaccount.Token("[redacted]")`},
		{"%q", tok, `"[redacted]"`},
		{"%x", tok, "[redacted]"},
		{"%d", tok, "[redacted]"}, // fmt's bad-verb path prints the raw value of a plain string type
		{"%10.3s", tok, "[redacted]"},
		{"%v", holder, "{alice [redacted]}"},
		{"%+v", holder, "{User:alice Token:[redacted]}"},
		{"%#v", holder, `struct { User string; Token serviceaccount.Token }{User:"alice", Token:serviceaccount.Token("[redacted]")}`},
		{"%v", []Token{tok}, "[[redacted]]"},
		{"%v", &holder, "&{alice [redacted]}"},
	}
	for _, tc := range fmtCases {
		got := fmt.Sprintf(tc.format, tc.arg)
		if got != tc.want {
			t.Errorf("Sprintf(%q, %T) = %q; want %q", tc.format, tc.arg, got, tc.want)
		}
		if strings.Contains(got, secret) {
			t.Errorf("Sprintf(%q, %T) leaks the token", tc.format, tc.arg)
		}
	}
	if got := tok.String(); got != "[redacted]" {
		t.Errorf("String() = %q; want %q", got, "[redacted]")
	}

	for name, newHandler := range map[string]func(*bytes.Buffer) slog.Handler{
		"text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
		"json": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
	} {
		var buf bytes.Buffer
		log := slog.New(newHandler(&buf))
		log.Info("authenticate", "token", tok, slog.Any("any", tok), slog.Group("req", "token", tok))
		out := buf.String()
		if strings.Contains(out, secret) {
			t.Errorf("%s handler leaks the token: %s", name, out)
		}
		if got := strings.Count(out, "[redacted]"); got != 3 {
			t.Errorf("%s handler output has %d redactions; want 3: %s", name, got, out)
		}
	}
}
