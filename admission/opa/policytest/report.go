package policytest

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// The formats a Report is written in.
const (
	// Pretty is OPA's own report, as opa test prints it, and the coverage.
	Pretty = "pretty"
	// JSON is {"results": [...], "coverage": {...}}: each result as
	// opa test --format json writes it, and the coverage report as opa
	// test --coverage writes it, beside the results it came from.
	JSON = "json"
	// JUnit is JUnit XML, one testsuite a package; with coverage, one
	// more, "coverage", whose one case fails below the threshold.
	JUnit = "junit"
	// TAP is the Test Anything Protocol, version 14; with coverage, one
	// more test point that fails below the threshold.
	TAP = "tap"
)

// Formats are the formats Write knows.
var Formats = []string{Pretty, JSON, JUnit, TAP}

// Write writes the report in format; verbose lists every test in the
// pretty format, not only those that failed, and each failure's trace
// when the run kept it (Options.Verbose).
func (r *Report) Write(w io.Writer, format string, verbose bool) error {
	switch format {
	case Pretty:
		return r.writePretty(w, verbose)
	case JSON:
		return r.writeJSON(w)
	case JUnit:
		return r.writeJUnit(w)
	case TAP:
		return r.writeTAP(w)
	default:
		return fmt.Errorf("output format %q: want one of %s", format, strings.Join(Formats, ", "))
	}
}

// results is the results as a closed channel, as OPA's reporters read them.
func (r *Report) results() chan *tester.Result {
	ch := make(chan *tester.Result, len(r.Results))
	for _, t := range r.Results {
		ch <- t
	}
	close(ch)
	return ch
}

func (r *Report) writePretty(w io.Writer, verbose bool) error {
	if len(r.Results) == 0 {
		fmt.Fprintln(w, "no tests ran")
	} else if err := (tester.PrettyReporter{Output: w, Verbose: verbose}).Report(r.results()); err != nil {
		return err
	}
	if r.Coverage == nil {
		return nil
	}
	fmt.Fprintf(w, "COVERAGE: %.2f%% (threshold %g%%)\n", r.Coverage.Coverage, r.Threshold)
	for _, file := range slices.Sorted(maps.Keys(r.Coverage.Files)) {
		fr := r.Coverage.Files[file]
		if len(fr.NotCovered) == 0 {
			continue
		}
		fmt.Fprintf(w, "  %s: %.2f%%, not covered: lines %s\n", file, fr.Coverage, lines(fr.NotCovered))
	}
	return nil
}

// lines are the rows of ranges, adjacent ones joined: "3, 7-9".
func lines(ranges []cover.Range) string {
	sorted := slices.Clone(ranges)
	slices.SortFunc(sorted, func(a, b cover.Range) int { return a.Compare(b) })
	var spans [][2]int
	for _, rg := range sorted {
		if n := len(spans); n > 0 && rg.Start.Row <= spans[n-1][1]+1 {
			spans[n-1][1] = max(spans[n-1][1], rg.End.Row)
			continue
		}
		spans = append(spans, [2]int{rg.Start.Row, rg.End.Row})
	}
	parts := make([]string, len(spans))
	for i, sp := range spans {
		parts[i] = strconv.Itoa(sp[0])
		if sp[1] > sp[0] {
			parts[i] += "-" + strconv.Itoa(sp[1])
		}
	}
	return strings.Join(parts, ", ")
}

func (r *Report) writeJSON(w io.Writer) error {
	var results bytes.Buffer
	if err := (tester.JSONReporter{Output: &results}).Report(r.results()); err != nil {
		return err
	}
	out := struct {
		Results   json.RawMessage `json:"results"`
		Coverage  *cover.Report   `json:"coverage,omitempty"`
		Threshold *float64        `json:"threshold,omitempty"`
		Passed    bool            `json:"passed"`
	}{Results: results.Bytes(), Coverage: r.Coverage, Passed: r.Passed()}
	if r.Coverage != nil {
		out.Threshold = &r.Threshold
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
	seconds  float64
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Line      int           `xml:"line,attr,omitempty"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr,omitempty"`
	Text    string `xml:",chardata"`
}

func (r *Report) writeJUnit(w io.Writer) error {
	var out junitSuites
	suites := map[string]int{}
	for _, t := range r.Results {
		i, ok := suites[t.Package]
		if !ok {
			i = len(out.Suites)
			suites[t.Package] = i
			out.Suites = append(out.Suites, junitSuite{Name: t.Package})
		}
		s := &out.Suites[i]
		c := junitCase{Name: t.Name, Classname: t.Package, Time: seconds(t.Duration.Seconds()), SystemOut: string(t.Output)}
		if t.Location != nil {
			c.File, c.Line = t.Location.File, t.Location.Row
		}
		switch {
		case t.Skip:
			c.Skipped = &junitMessage{Message: "skipped"}
			s.Skipped++
		case t.Error != nil:
			c.Error = &junitMessage{Message: t.Error.Error()}
			s.Errors++
		case t.Fail:
			c.Failure = &junitMessage{Message: "failed at " + where(t), Text: trace(t)}
			s.Failures++
		}
		s.Tests++
		s.seconds += t.Duration.Seconds()
		s.Cases = append(s.Cases, c)
	}
	if r.Coverage != nil {
		c := junitCase{Name: coverageName(r), Classname: "coverage", Time: seconds(0)}
		s := junitSuite{Name: "coverage", Tests: 1}
		if r.BelowThreshold() {
			c.Failure = &junitMessage{Message: coverageName(r)}
			s.Failures = 1
		}
		s.Cases = []junitCase{c}
		out.Suites = append(out.Suites, s)
	}
	for i := range out.Suites {
		s := &out.Suites[i]
		s.Time = seconds(s.seconds)
		out.Tests, out.Failures, out.Errors, out.Skipped = out.Tests+s.Tests, out.Failures+s.Failures, out.Errors+s.Errors, out.Skipped+s.Skipped
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func (r *Report) writeTAP(w io.Writer) error {
	var b strings.Builder
	n := len(r.Results)
	if r.Coverage != nil {
		n++
	}
	fmt.Fprintf(&b, "TAP version 14\n1..%d\n", n)
	for i, t := range r.Results {
		name := t.Package + "." + t.Name
		switch {
		case t.Skip:
			fmt.Fprintf(&b, "ok %d - %s # SKIP\n", i+1, name)
		case t.Error != nil:
			fmt.Fprintf(&b, "not ok %d - %s\n", i+1, name)
			tapDiagnostics(&b, [][2]string{{"at", where(t)}, {"error", t.Error.Error()}, {"output", string(t.Output)}})
		case t.Fail:
			fmt.Fprintf(&b, "not ok %d - %s\n", i+1, name)
			tapDiagnostics(&b, [][2]string{{"at", where(t)}, {"message", "failed"}, {"trace", trace(t)}, {"output", string(t.Output)}})
		default:
			fmt.Fprintf(&b, "ok %d - %s\n", i+1, name)
		}
	}
	if r.Coverage != nil {
		status := "ok"
		if r.BelowThreshold() {
			status = "not ok"
		}
		fmt.Fprintf(&b, "%s %d - %s\n", status, n, coverageName(r))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// tapDiagnostics writes a YAML block of the fields that are not empty.
func tapDiagnostics(b *strings.Builder, fields [][2]string) {
	b.WriteString("  ---\n")
	for _, f := range fields {
		v := strings.TrimRight(f[1], "\n")
		switch {
		case v == "":
		case strings.Contains(v, "\n"):
			fmt.Fprintf(b, "  %s: |\n", f[0])
			for _, line := range strings.Split(v, "\n") {
				fmt.Fprintf(b, "    %s\n", line)
			}
		default:
			fmt.Fprintf(b, "  %s: %s\n", f[0], strconv.Quote(v))
		}
	}
	b.WriteString("  ...\n")
}

// where is a test's file:line.
func where(t *tester.Result) string {
	if t.Location == nil {
		return ""
	}
	return fmt.Sprintf("%s:%d", t.Location.File, t.Location.Row)
}

// trace is a failed test's trace, when kept (Options.Verbose).
func trace(t *tester.Result) string {
	if len(t.Trace) == 0 {
		return ""
	}
	var b strings.Builder
	topdown.PrettyTraceWithLocation(&b, t.Trace)
	return b.String()
}

func coverageName(r *Report) string {
	op := ">="
	if r.BelowThreshold() {
		op = "<"
	}
	return fmt.Sprintf("coverage %.2f%% %s threshold %g%%", r.Coverage.Coverage, op, r.Threshold)
}

func seconds(s float64) string { return strconv.FormatFloat(s, 'f', 3, 64) }
