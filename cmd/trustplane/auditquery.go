package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trustplane/trustplane/audit"
	"github.com/trustplane/trustplane/datadir"
)

// auditQueryFlags are the flags of `trustplane audit query`.
type auditQueryFlags struct {
	dir       string
	filter    audit.Filter
	code      int
	since     time.Duration
	from, to  string
	output    string
	countBy   []string
	follow    bool
	pollEvery time.Duration
	now       func() time.Time
}

var countByFields = map[string]func(*audit.Event) string{
	"user":        func(e *audit.Event) string { return e.User.Username },
	"verb":        func(e *audit.Event) string { return e.Verb },
	"stage":       func(e *audit.Event) string { return e.Stage },
	"resource":    (*audit.Event).Resource,
	"subresource": (*audit.Event).Subresource,
	"namespace":   (*audit.Event).Namespace,
	"name":        (*audit.Event).Name,
	"code":        func(e *audit.Event) string { return strconv.Itoa(int(e.Code())) },
	"decision":    func(e *audit.Event) string { return e.Annotations[audit.DecisionAnnotation] },
	"useragent":   func(e *audit.Event) string { return e.UserAgent },
	"sourceip": func(e *audit.Event) string {
		if len(e.SourceIPs) == 0 {
			return ""
		}
		return e.SourceIPs[0]
	},
}

// auditStages are the stages of audit.k8s.io/v1 events, in order.
var auditStages = []string{"RequestReceived", "ResponseStarted", "ResponseComplete", "Panic"}

func newAuditQueryCommand() *cobra.Command {
	f := auditQueryFlags{dir: datadir.DefaultDir, output: "table", pollEvery: 250 * time.Millisecond, now: time.Now}
	cmd := &cobra.Command{
		Use:   "query [FILE|DIR...]",
		Short: "Find audit events by who, what and when",
		Long: `Print the events of the audit log that match every filter given. Files are
read in order (a directory stands for its rotated files, oldest first, then
audit.log; without arguments, the data directory's), gzipped ones too, one
line at a time: memory does not grow with the log.

Output: -o table (default), jsonl (each event's line as written, hash
included), json (an audit.k8s.io/v1 EventList). A request has an event
for each stage its policy records (--stage selects one): RequestReceived,
ResponseStarted (a watch), ResponseComplete, Panic.

--count-by counts the matching requests by fields instead: ` + strings.Join(slices.Sorted(maps.Keys(countByFields)), ", ") + `.
Each request counts once, by its first event past RequestReceived; with
--stage, or counted by stage, each event counts.

Exit status: 0, also when nothing matches; 2 for bad flags or a log
that cannot be read.`,
		Example: `  # Who read the Secret db in the last hour?
  trustplane audit query --resource secrets --namespace default --name db --verb get --since 1h
  trustplane audit query --user alice --decision forbid -o jsonl
  trustplane audit query --count-by user,verb,resource,code --since 24h
  trustplane audit query --resource secrets --follow`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAuditQuery(cmd, args, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "dir", f.dir, "data directory whose audit log is read without arguments")
	fl.StringVar(&f.filter.User, "user", "", "the requesting user's name")
	fl.StringVar(&f.filter.Group, "group", "", "a group of the requesting user")
	fl.StringVar(&f.filter.Verb, "verb", "", "the verb: get, list, watch, create, update, patch, delete, ...")
	fl.StringVar(&f.filter.Resource, "resource", "", "the resource, plural: secrets, pods, ...")
	fl.StringVar(&f.filter.Subresource, "subresource", "", "the subresource: status, token, ...")
	fl.StringVarP(&f.filter.Namespace, "namespace", "n", "", "the namespace")
	fl.StringVar(&f.filter.Name, "name", "", "the object's name")
	fl.StringVar(&f.filter.Stage, "stage", "", "the event's stage: RequestReceived, ResponseStarted, ResponseComplete or Panic")
	fl.StringVar(&f.filter.Decision, "decision", "", "the authorization decision: allow or forbid")
	fl.IntVar(&f.code, "code", 0, "the response code")
	fl.StringVar(&f.filter.SourceIP, "source-ip", "", "a source IP of the request")
	fl.StringVar(&f.filter.UserAgent, "user-agent", "", "the user agent, whole")
	fl.StringVar(&f.filter.AuditID, "audit-id", "", "the audit ID (the Audit-Id response header)")
	fl.DurationVar(&f.since, "since", 0, "only events received within this long before now: 1h, 30m")
	fl.StringVar(&f.from, "from", "", "only events received at or after this time (RFC 3339)")
	fl.StringVar(&f.to, "to", "", "only events received before this time (RFC 3339)")
	fl.StringVarP(&f.output, "output", "o", f.output, "output: table, json, jsonl")
	fl.StringSliceVar(&f.countBy, "count-by", nil, "count matching requests by these fields, comma-separated")
	fl.BoolVarP(&f.follow, "follow", "f", false, "after the end of the log, print new events as they are written")
	return cmd
}

func (f *auditQueryFlags) validate() error {
	var errs []error
	if !slices.Contains([]string{"table", "json", "jsonl"}, f.output) {
		errs = append(errs, fmt.Errorf("-o %q: want table, json or jsonl", f.output))
	}
	if st := f.filter.Stage; st != "" && !slices.Contains(auditStages, st) {
		errs = append(errs, fmt.Errorf("--stage %q: want one of %s", st, strings.Join(auditStages, ", ")))
	}
	if d := f.filter.Decision; d != "" && d != "allow" && d != "forbid" {
		errs = append(errs, fmt.Errorf("--decision %q: want allow or forbid", d))
	}
	f.filter.Code = int32(f.code)
	for _, c := range f.countBy {
		if countByFields[c] == nil {
			errs = append(errs, fmt.Errorf("--count-by %q: want some of %s", c, strings.Join(slices.Sorted(maps.Keys(countByFields)), ", ")))
		}
	}
	if len(f.countBy) > 0 && f.follow {
		errs = append(errs, errors.New("--count-by and --follow do not go together"))
	}
	if f.since < 0 {
		errs = append(errs, fmt.Errorf("--since %s is negative", f.since))
	}
	if f.since > 0 && f.from != "" {
		errs = append(errs, errors.New("--since and --from do not go together"))
	}
	if f.since > 0 {
		f.filter.From = f.now().Add(-f.since)
	}
	for _, t := range []struct {
		flag, value string
		into        *time.Time
	}{{"--from", f.from, &f.filter.From}, {"--to", f.to, &f.filter.To}} {
		if t.value == "" {
			continue
		}
		v, err := time.Parse(time.RFC3339Nano, t.value)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %q: want an RFC 3339 time, as 2006-01-02T15:04:05Z", t.flag, t.value))
		}
		*t.into = v
	}
	return errors.Join(errs...)
}

func runAuditQuery(cmd *cobra.Command, args []string, f *auditQueryFlags) error {
	if err := f.validate(); err != nil {
		return badInput(err)
	}
	files, err := auditFiles(args, f.dir)
	if err != nil {
		return err
	}
	out := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
	defer out.Flush()
	if len(f.countBy) > 0 {
		return countEvents(out, files, f)
	}
	p := newEventPrinter(out, f.output)
	if err := audit.Query(files, &f.filter, p.print); err != nil {
		return badInput(err)
	}
	if f.follow {
		if err := out.Flush(); err != nil {
			return err
		}
		if err := followLog(cmd.Context(), files[len(files)-1], f, func(line []byte, e *audit.Event) error {
			if err := p.print(line, e); err != nil {
				return err
			}
			return out.Flush()
		}); err != nil {
			return err
		}
	}
	return p.end()
}

// followLog reads what is appended to path from its current end until
// ctx is done. When the log is rotated, it reads on from the rotated files
// (gzipped or not) that hold events it has not seen, however many
// rotations came between two polls, then from the start of the new file:
// the chain's numbers say where it stands.
func followLog(ctx context.Context, path string, f *auditQueryFlags, fn func([]byte, *audit.Event) error) error {
	file, err := os.Open(path)
	if err != nil {
		return badInput(err)
	}
	defer func() { file.Close() }()
	if _, err := file.Seek(0, io.SeekEnd); err != nil {
		return err
	}
	fl := &follower{filter: &f.filter, fn: fn}
	// A partial last line waits in pending for its end.
	var pending []byte
	buf := make([]byte, 1<<20)
	// emit passes on the whole lines of pending.
	emit := func() error {
		i := bytes.LastIndexByte(pending, '\n')
		if i < 0 {
			return nil
		}
		err := fl.lines(pending[:i+1])
		pending = append(pending[:0], pending[i+1:]...)
		return err
	}
	tick := time.NewTicker(f.pollEvery)
	defer tick.Stop()
	for {
		n, err := file.Read(buf)
		if n > 0 {
			pending = append(pending, buf[:n]...)
			if err := emit(); err != nil {
				return err
			}
			continue
		}
		if err != nil && err != io.EOF {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		st, err := os.Stat(path)
		if err != nil {
			continue // between the rename and the new file
		}
		if cur, err := file.Stat(); err != nil || os.SameFile(st, cur) {
			continue
		}
		// Rotated: the rest of the old file, the files rotated since,
		// then the new file from its start.
		rest, err := io.ReadAll(file)
		if err != nil {
			return err
		}
		if pending = append(pending, rest...); len(pending) > 0 && !bytes.HasSuffix(pending, []byte("\n")) {
			pending = append(pending, '\n') // a torn line; the query skips it
		}
		if err := emit(); err != nil {
			return err
		}
		next, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			// Rotated again, between the stat and the open: the
			// next tick opens the file that replaced it.
			continue
		}
		if err != nil {
			return err
		}
		file.Close()
		file = next
		if err := fl.catchUp(filepath.Dir(path)); err != nil {
			return err
		}
	}
}

// follower passes on the lines of events after the last it passed on,
// by their numbers in the chain.
type follower struct {
	filter *audit.Filter
	fn     func([]byte, *audit.Event) error
	last   int64 // the number of the last event passed on
}

// lines passes on the events of whole lines that come after last.
func (fl *follower) lines(data []byte) error {
	var keep []byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		line := data[:i+1]
		data = data[i+1:]
		if seq, ok := audit.SeqOf(line[:i]); ok {
			if seq <= fl.last {
				continue
			}
			fl.last = seq
		}
		keep = append(keep, line...)
	}
	return audit.QueryReader(bytes.NewReader(keep), fl.filter, fl.fn)
}

// catchUp passes on the events after last in the rotated files of dir.
func (fl *follower) catchUp(dir string) error {
	files, err := audit.LogFiles([]string{dir})
	if err != nil {
		return err
	}
	rotated := files
	if len(files) > 0 && filepath.Base(files[len(files)-1]) == "audit.log" {
		rotated = files[:len(files)-1]
	}
	since, err := audit.Since(rotated, fl.last)
	if err != nil {
		return err
	}
	for _, name := range since {
		r, err := audit.OpenLog(name)
		if err != nil {
			return err
		}
		br := bufio.NewReaderSize(r, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 && line[len(line)-1] == '\n' {
				if err := fl.lines(line); err != nil {
					r.Close()
					return err
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				r.Close()
				return err
			}
		}
		r.Close()
	}
	return nil
}

// eventPrinter writes events in one output format, one at a time.
type eventPrinter struct {
	w      *bufio.Writer
	format string
	n      int
}

func newEventPrinter(w *bufio.Writer, format string) *eventPrinter {
	return &eventPrinter{w: w, format: format}
}

// The table's columns, of fixed widths, so that nothing is held back to
// measure them.
const tableHeader = "%-24s %-16s %-28s %-8s %-26s %-16s %-24s %4s %-8s %s\n"

func (p *eventPrinter) print(line []byte, e *audit.Event) error {
	defer func() { p.n++ }()
	switch p.format {
	case "jsonl":
		p.w.Write(line)
		return p.w.WriteByte('\n')
	case "json":
		if p.n == 0 {
			p.w.WriteString(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[` + "\n")
		} else {
			p.w.WriteString(",\n")
		}
		_, err := p.w.Write(line)
		return err
	}
	if p.n == 0 {
		fmt.Fprintf(p.w, tableHeader, "TIME", "STAGE", "USER", "VERB", "RESOURCE", "NAMESPACE", "NAME", "CODE", "DECISION", "SOURCE")
	}
	resource := e.Resource()
	if s := e.Subresource(); s != "" {
		resource += "/" + s
	}
	if resource == "" {
		resource = e.RequestURI
	}
	user := e.User.Username
	if e.ImpersonatedUser != nil {
		user += " as " + e.ImpersonatedUser.Username
	}
	source := ""
	if len(e.SourceIPs) > 0 {
		source = e.SourceIPs[0]
	}
	code := "-"
	if e.ResponseStatus != nil {
		code = strconv.Itoa(int(e.Code()))
	}
	_, err := fmt.Fprintf(p.w, tableHeader, e.RequestReceivedTimestamp.UTC().Format(time.RFC3339Nano), e.Stage, user, e.Verb, resource,
		orDash(e.Namespace()), orDash(e.Name()), code, orDash(e.Annotations[audit.DecisionAnnotation]), source)
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// end closes the output: the json list, or says that nothing matched.
func (p *eventPrinter) end() error {
	switch {
	case p.format == "json" && p.n == 0:
		_, err := p.w.WriteString(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[]}` + "\n")
		return err
	case p.format == "json":
		_, err := p.w.WriteString("\n]}\n")
		return err
	case p.format == "table" && p.n == 0:
		_, err := p.w.WriteString("No events found.\n")
		return err
	}
	return nil
}

// countEvents prints how many matching requests there are of each
// combination of the count-by fields, the most frequent first: each
// request once, by the event that audit.Requests picks, unless events of
// one stage are selected or the stage is counted by, where each event
// counts. Memory grows with the number of combinations, and the watches
// open at the log's end, not with the number of events.
func countEvents(w io.Writer, files []string, f *auditQueryFlags) error {
	counts := map[string]int{}
	perEvent := f.filter.Stage != "" || slices.Contains(f.countBy, "stage")
	var requests audit.Requests
	err := audit.Query(files, &f.filter, func(_ []byte, e *audit.Event) error {
		if !perEvent && !requests.Pick(e) {
			return nil
		}
		key := make([]string, len(f.countBy))
		for i, c := range f.countBy {
			key[i] = orDash(countByFields[c](e))
		}
		counts[strings.Join(key, "\x00")]++
		return nil
	})
	if err != nil {
		return badInput(err)
	}
	keys := slices.Collect(maps.Keys(counts))
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b))
	})
	header := append([]string{"COUNT"}, f.countBy...)
	for i := range header {
		header[i] = strings.ToUpper(header[i])
	}
	fmt.Fprintln(w, strings.Join(header, "\t"))
	for _, k := range keys {
		fmt.Fprintf(w, "%d\t%s\n", counts[k], strings.ReplaceAll(k, "\x00", "\t"))
	}
	return nil
}
