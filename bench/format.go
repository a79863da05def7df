package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable writes results as an aligned table with one row per phase,
// then the variants of the large lists, if any, in a table of their own.
func WriteTable(w io.Writer, results []Result) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "PHASE\tOPS\tSECONDS\tOPS/S\tP50\tP99\tNOTES")
	var large []Result
	for _, r := range results {
		if r.Phase == PhaseListLarge {
			large = append(large, r)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%s\t%s\t%s\t%s\n",
			r.Phase, r.Ops, r.Seconds, formatRate(r.PerSecond), formatDuration(r.P50), formatDuration(r.P99), notes(r))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(large) > 0 {
		buf.WriteByte('\n')
		writeLargeLists(&buf, large)
	}
	// The padding of a row without notes would end it in spaces.
	var out bytes.Buffer
	for line := range bytes.Lines(buf.Bytes()) {
		out.Write(bytes.TrimRight(line, " \n"))
		out.WriteByte('\n')
	}
	_, err := w.Write(out.Bytes())
	return err
}

// writeLargeLists writes the variants of the large lists, one a row:
// the format, resourceVersion and Accept-Encoding asked, the latencies,
// and the bytes of a list as decoded and as read from the connection.
func writeLargeLists(w io.Writer, results []Result) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "LIST %d CONFIGMAPS\tRV\tACCEPT-ENCODING\tLISTS\tP50\tP99\tBODY\tREAD\n", results[0].Items)
	for _, r := range results {
		rv := "-"
		if r.ResourceVersion != nil {
			rv = strconv.Quote(*r.ResourceVersion)
		}
		enc := "-"
		if r.AcceptGzip {
			enc = fmt.Sprintf("gzip (%d/%d gzipped)", r.Gzipped, r.Ops)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n",
			r.Format, rv, enc, r.Ops, formatDuration(r.P50), formatDuration(r.P99), formatMiB(r.BodyBytes), formatMiB(r.WireBytes))
	}
	tw.Flush()
}

// formatRate shows whole operations per second, and a tenth below 100.
func formatRate(r float64) string {
	if r < 100 {
		return fmt.Sprintf("%.1f", r)
	}
	return fmt.Sprintf("%.0f", r)
}

// WriteJSON writes results as an indented JSON array of Result.
func WriteJSON(w io.Writer, results []Result) error {
	if results == nil {
		results = []Result{}
	}
	b, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// notes are the facts of a phase that have no column of their own.
func notes(r Result) string {
	var n []string
	if r.Watchers > 0 {
		n = append(n, fmt.Sprintf("%d watchers", r.Watchers))
	}
	if r.Connections > 0 {
		n = append(n, fmt.Sprintf("%d connections", r.Connections))
	}
	if r.Rate > 0 {
		n = append(n, fmt.Sprintf("%g events/s", r.Rate))
	}
	if r.Expected > 0 {
		n = append(n, fmt.Sprintf("delivered %d/%d", r.Delivered, r.Expected))
	}
	if r.ClientCPU > 0 {
		n = append(n, "client CPU "+formatDuration(r.ClientCPU)+"/op")
	}
	if r.ServerCPU > 0 {
		n = append(n, "server CPU "+formatDuration(r.ServerCPU)+"/op")
	}
	if r.Items > 0 {
		n = append(n, fmt.Sprintf("%d items/list", r.Items))
	}
	if r.Bytes > 0 {
		n = append(n, fmt.Sprintf("%d B each", r.Bytes))
	}
	if r.Ratio > 0 {
		n = append(n, fmt.Sprintf("%.2f x etcd puts", r.Ratio))
	}
	if r.RSSBytes > 0 {
		n = append(n, "RSS "+formatMiB(r.RSSBytes))
	}
	if r.PeakRSSBytes > 0 {
		n = append(n, "peak "+formatMiB(r.PeakRSSBytes))
	}
	if r.BaseRSSBytes > 0 {
		n = append(n, formatMiB(r.BaseRSSBytes)+" before")
	}
	return strings.Join(n, ", ")
}

// formatMiB shows a size in whole MiB, and a tenth below 100.
func formatMiB(b int64) string {
	m := float64(b) / (1 << 20)
	if m < 100 {
		return fmt.Sprintf("%.1f MiB", m)
	}
	return fmt.Sprintf("%.0f MiB", m)
}

// formatDuration shows d with three significant digits: 1.23ms, 45.6µs,
// 789ms, 1.2s.
func formatDuration(d time.Duration) string {
	if d <= 0 {
		return "0"
	}
	unit := time.Duration(1)
	for limit := time.Duration(1000); d >= limit && unit < time.Second; limit *= 10 {
		unit *= 10
	}
	return d.Round(unit).String()
}
