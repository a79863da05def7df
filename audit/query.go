package audit

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Filter selects events. Every field that is set must match; the zero
// Filter selects every event.
type Filter struct {
	User, Group, Verb, Resource, Subresource, Namespace, Name string
	// Stage is the event's: RequestReceived, ResponseStarted,
	// ResponseComplete or Panic.
	Stage string
	// Decision is the authorizer's: allow or forbid.
	Decision        string
	Code            int32
	SourceIP        string
	UserAgent       string
	AuditID         string
	From, To        time.Time // of the request's reception; To excluded
	needles         [][]byte
	needlesPrepared bool
}

// DecisionAnnotation is the annotation in which the authorization filter
// records its decision, as kube-apiserver does.
const DecisionAnnotation = "authorization.k8s.io/decision"

// prepare computes the byte strings that a matching line must contain: each
// wanted value as JSON encodes it. A line without one of them cannot
// match, and is skipped without being decoded; most are, which is what
// makes a query fast.
func (f *Filter) prepare() {
	if f.needlesPrepared {
		return
	}
	f.needlesPrepared = true
	for _, v := range []string{f.User, f.Group, f.Verb, f.Resource, f.Subresource, f.Namespace, f.Name, f.Stage, f.SourceIP, f.UserAgent, f.AuditID} {
		if v != "" {
			q, _ := json.Marshal(v)
			f.needles = append(f.needles, q)
		}
	}
	if f.Decision != "" {
		q, _ := json.Marshal(f.Decision)
		f.needles = append(f.needles, append([]byte(`"`+DecisionAnnotation+`":`), q...))
	}
	if f.Code != 0 {
		f.needles = append(f.needles, []byte(`"code":`+strconv.Itoa(int(f.Code))))
	}
	// The longest first: the rarest, as a rule.
	slices.SortStableFunc(f.needles, func(a, b []byte) int { return len(b) - len(a) })
}

// Event is what a query reads of an audit.k8s.io/v1 event.
type Event struct {
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	User       struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"user"`
	ImpersonatedUser *struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"impersonatedUser"`
	SourceIPs []string `json:"sourceIPs"`
	UserAgent string   `json:"userAgent"`
	ObjectRef *struct {
		APIGroup    string `json:"apiGroup"`
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int32 `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time         `json:"requestReceivedTimestamp"`
	Annotations              map[string]string `json:"annotations"`
}

// APIGroup, Resource, Namespace, Name, Subresource and Code read the event's object
// reference and status, "" or 0 where it has none.
func (e *Event) APIGroup() string {
	if e.ObjectRef == nil {
		return ""
	}
	return e.ObjectRef.APIGroup
}

func (e *Event) Resource() string {
	if e.ObjectRef == nil {
		return ""
	}
	return e.ObjectRef.Resource
}

func (e *Event) Namespace() string {
	if e.ObjectRef == nil {
		return ""
	}
	return e.ObjectRef.Namespace
}

func (e *Event) Name() string {
	if e.ObjectRef == nil {
		return ""
	}
	return e.ObjectRef.Name
}

func (e *Event) Subresource() string {
	if e.ObjectRef == nil {
		return ""
	}
	return e.ObjectRef.Subresource
}

func (e *Event) Code() int32 {
	if e.ResponseStatus == nil {
		return 0
	}
	return e.ResponseStatus.Code
}

func (f *Filter) match(e *Event) bool {
	is := func(want, got string) bool { return want == "" || want == got }
	return is(f.User, e.User.Username) &&
		(f.Group == "" || slices.Contains(e.User.Groups, f.Group)) &&
		is(f.Verb, e.Verb) &&
		is(f.Stage, e.Stage) &&
		is(f.Resource, e.Resource()) &&
		is(f.Subresource, e.Subresource()) &&
		is(f.Namespace, e.Namespace()) &&
		is(f.Name, e.Name()) &&
		is(f.Decision, e.Annotations[DecisionAnnotation]) &&
		(f.Code == 0 || f.Code == e.Code()) &&
		(f.SourceIP == "" || slices.Contains(e.SourceIPs, f.SourceIP)) &&
		is(f.UserAgent, e.UserAgent) &&
		is(f.AuditID, e.AuditID) &&
		(f.From.IsZero() || !e.RequestReceivedTimestamp.Before(f.From)) &&
		(f.To.IsZero() || e.RequestReceivedTimestamp.Before(f.To))
}

// Requests picks, from a log's events read in order, the one event that
// stands for each request, so that a reader that counts requests counts
// each once, whatever stages the policy records: the first of its
// ResponseStarted (a watch), ResponseComplete and Panic events. A
// RequestReceived event is never picked: it comes before the request is
// authorized or answered, and a later stage follows it unless the policy
// omits them all. The zero Requests is ready; it keeps the audit IDs of
// the watches whose ResponseStarted was picked until their end is read.
type Requests struct {
	started map[string]bool
}

// Pick reports whether e is the event that stands for its request.
func (q *Requests) Pick(e *Event) bool {
	switch e.Stage {
	case "RequestReceived":
		return false
	case "ResponseStarted":
		if q.started == nil {
			q.started = map[string]bool{}
		}
		q.started[e.AuditID] = true
	case "ResponseComplete", "Panic":
		if q.started[e.AuditID] {
			delete(q.started, e.AuditID)
			return false
		}
	}
	return true
}

// Query calls fn with each event of files, read in order, that f selects,
// with the line it was read from, valid only during the call. It reads
// one line at a time: its memory does not grow with the log. Checkpoints
// and lines that are not events are skipped.
func Query(files []string, f *Filter, fn func(line []byte, e *Event) error) error {
	for _, name := range files {
		if err := queryFile(name, f, fn); err != nil {
			return err
		}
	}
	return nil
}

func queryFile(name string, f *Filter, fn func([]byte, *Event) error) error {
	r, err := openLog(name)
	if err != nil {
		return err
	}
	defer r.Close()
	return QueryReader(r, f, fn)
}

// QueryReader is Query over one log read from r, up to its end.
func QueryReader(r io.Reader, f *Filter, fn func([]byte, *Event) error) error {
	f.prepare()
	return eachLine(r, func(line []byte) error {
		for _, n := range f.needles {
			if !bytes.Contains(line, n) {
				return nil
			}
		}
		if isCheckpoint(line) {
			return nil
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil
		}
		if !f.match(&e) {
			return nil
		}
		return fn(line, &e)
	})
}

// eachLine calls fn with each line of r, without its newline, including a
// last line without one.
func eachLine(r io.Reader, fn func([]byte) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var long []byte // a line longer than the buffer
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, chunk...)
			continue
		}
		line := chunk
		if long != nil {
			long = append(long, chunk...)
			line = long
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		if len(line) > 0 {
			if err := fn(line); err != nil {
				return err
			}
		}
		long = nil
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// openLog opens a log file, gunzipping a .gz one.
func openLog(name string) (io.ReadCloser, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(name, ".gz") {
		return f, nil
	}
	z, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return gzReadCloser{z, f}, nil
}

type gzReadCloser struct {
	*gzip.Reader
	f *os.File
}

func (g gzReadCloser) Close() error { return errors.Join(g.Reader.Close(), g.f.Close()) }

// OpenLog opens a log file for reading, gunzipping a .gz one.
func OpenLog(name string) (io.ReadCloser, error) { return openLog(name) }

// SeqOf is the number in the chain of an event line, false for a line
// that is not a chained event.
func SeqOf(line []byte) (int64, bool) {
	seq, _, _, ok := chainFields(line)
	return seq, ok
}

// Since is the end of files, a log's files in order, that holds the
// events after number seq: from the newest file that starts at or before
// event seq+1, by its first event or the checkpoint it starts with.
func Since(files []string, seq int64) ([]string, error) {
	for i := len(files) - 1; i >= 0; i-- {
		start, err := firstSeq(files[i])
		if err != nil {
			return nil, err
		}
		if start <= seq+1 {
			return files[i:], nil
		}
	}
	return files, nil
}

// firstSeq is the number of the first event a file holds or would hold:
// the one after the checkpoint it starts with, or its first event's.
func firstSeq(path string) (int64, error) {
	r, err := openLog(path)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		line = bytes.TrimSuffix(line, []byte("\n"))
		if isCheckpoint(line) {
			if s, ok := stateOf(line); ok {
				return s.seq + 1, nil
			}
		} else if seq, ok := SeqOf(line); ok {
			return seq, nil
		}
		if err == io.EOF {
			// Nothing chained yet: it holds what comes next.
			return 1 << 62, nil
		}
		if err != nil {
			return 0, err
		}
	}
}
