package serviceaccount

import (
	"fmt"
	"io"
	"log/slog"
	"strconv"
)

const redacted = "[redacted]"

// Token is a bearer token that redacts itself when it is formatted with any
// fmt verb or logged with log/slog. Convert it to a string explicitly, and
// only to verify or send it.
type Token string

// String returns "[redacted]".
func (Token) String() string { return redacted }

// GoString returns a Go expression for a redacted Token, for %#v.
func (Token) GoString() string { return `serviceaccount.Token("[redacted]")` }

// LogValue makes log/slog print "[redacted]".
func (Token) LogValue() slog.Value { return slog.StringValue(redacted) }

// Format redacts every verb. String and GoString alone are not enough: fmt
// prints the raw value of a string type for verbs it does not expect, such
// as %d ("%!d(serviceaccount.Token=<the token>)").
func (t Token) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		_, _ = io.WriteString(f, t.GoString())
	case verb == 'q':
		_, _ = io.WriteString(f, strconv.Quote(redacted))
	default:
		_, _ = io.WriteString(f, redacted)
	}
}

var (
	_ fmt.Stringer   = Token("")
	_ fmt.GoStringer = Token("")
	_ fmt.Formatter  = Token("")
	_ slog.LogValuer = Token("")
)
