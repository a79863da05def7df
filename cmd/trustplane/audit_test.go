package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/trustplane/trustplane/audit"
	"github.com/trustplane/trustplane/datadir"
)

func auditRun(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runRoot(t, append([]string{"audit"}, args...)...)
}

// auditDataDir writes a data directory with an audit key and a log of
// events: alice reads the Secret db twice, bob is refused once, and the
// controller lists ConfigMaps.
func auditDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	l := datadir.Layout{Dir: dir}
	signer := auditKey(t, l)
	w, err := audit.OpenWriter(l.AuditLog(), signer, 2)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC)
	for i, e := range []struct {
		user, verb, resource, name, decision string
		code                                 int32
	}{
		{"alice", "get", "secrets", "db", "allow", 200},
		{"bob", "get", "secrets", "db", "forbid", 403},
		{"system:serviceaccount:kube-system:c", "list", "configmaps", "", "allow", 200},
		{"alice", "get", "secrets", "db", "allow", 200},
		{"alice", "delete", "secrets", "other", "allow", 200},
	} {
		ev := &auditv1.Event{
			TypeMeta:                 metav1.TypeMeta{Kind: "Event", APIVersion: "audit.k8s.io/v1"},
			Level:                    auditv1.LevelMetadata,
			AuditID:                  types.UID(fmt.Sprint("id-", i)),
			Stage:                    auditv1.StageResponseComplete,
			Verb:                     e.verb,
			User:                     authenticationv1.UserInfo{Username: e.user, Groups: []string{"dev"}},
			SourceIPs:                []string{"10.0.0.1"},
			UserAgent:                "kubectl/v1.33.0",
			ObjectRef:                &auditv1.ObjectReference{Resource: e.resource, Namespace: "default", Name: e.name},
			ResponseStatus:           &metav1.Status{Code: e.code},
			RequestReceivedTimestamp: metav1.NewMicroTime(at.Add(time.Duration(i) * time.Minute)),
			Annotations:              map[string]string{audit.DecisionAnnotation: e.decision},
		}
		if err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// auditKey creates the data directory's audit key and loads it.
func auditKey(t *testing.T, l datadir.Layout) note.Signer {
	t.Helper()
	if _, err := audit.EnsureSigningKey(l.PKI()); err != nil {
		t.Fatal(err)
	}
	signer, err := audit.LoadSigner(l.PKI())
	if err != nil {
		t.Fatal(err)
	}
	return signer
}

func TestAuditVerify(t *testing.T) {
	dir := auditDataDir(t)
	log := datadir.Layout{Dir: dir}.AuditLog()
	stdout, stderr, code := auditRun(t, "verify", "--dir", dir)
	if code != 0 || !strings.Contains(stdout, "OK: 5 events, 3 checkpoints") {
		t.Fatalf("untouched log: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	// bob's refusal, line 2, made an allow.
	edited := bytes.Replace(data, []byte(`"forbid"`), []byte(`"allow"`), 1)
	if err := os.WriteFile(log, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = auditRun(t, "verify", filepath.Dir(log), "--key", filepath.Join(dir, "pki", audit.VerifierKeyFile))
	if code != 1 || !strings.Contains(stdout, log+":2: edited: event 2 does not match its hash") {
		t.Errorf("edited log: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	_, stderr, code = auditRun(t, "verify", log, "--key", filepath.Join(dir, "missing.pub"))
	if code != 2 || !strings.Contains(stderr, "missing.pub") {
		t.Errorf("a missing key: exit %d, want 2\nstderr:\n%s", code, stderr)
	}
}

func TestAuditQuery(t *testing.T) {
	dir := auditDataDir(t)
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		want     []string
		notWant  []string
	}{
		{name: "who read the Secret", args: []string{"--resource", "secrets", "--name", "db", "--verb", "get", "--decision", "allow"},
			want: []string{"alice", "2025-01-01T10:00:00Z", "2025-01-01T10:03:00Z", "get", "secrets", "default", "db", "200", "allow", "10.0.0.1"}, notWant: []string{"bob"}},
		{name: "refusals", args: []string{"--code", "403", "-o", "jsonl"}, want: []string{`"username":"bob"`, audit.ChainAnnotation}, notWant: []string{"alice"}},
		{name: "by time", args: []string{"--from", "2025-01-01T10:02:00Z", "--to", "2025-01-01T10:04:00Z"}, want: []string{"configmaps", "10:03:00"}, notWant: []string{"10:04:00", "bob"}},
		{name: "by group, user agent, source and ID", args: []string{"--group", "dev", "--user-agent", "kubectl/v1.33.0", "--source-ip", "10.0.0.1", "--audit-id", "id-4", "-o", "json"},
			want: []string{`"kind":"EventList"`, `"auditID":"id-4"`}, notWant: []string{`"auditID":"id-3"`}},
		{name: "nothing", args: []string{"--user", "carol"}, want: []string{"No events found."}},
		{name: "since, all older", args: []string{"--since", "1h"}, want: []string{"No events found."}},
		{name: "count by", args: []string{"--count-by", "user,verb,code"}, want: []string{"COUNT\tUSER\tVERB\tCODE", "2\talice\tget\t200", "1\tbob\tget\t403"}},
		{name: "a bad decision", args: []string{"--decision", "maybe"}, wantCode: 2},
		{name: "a bad time", args: []string{"--from", "yesterday"}, wantCode: 2},
		{name: "a bad count", args: []string{"--count-by", "color"}, wantCode: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := auditRun(t, append([]string{"query", "--dir", dir}, tc.args...)...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout does not contain %q:\n%s", w, stdout)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(stdout, w) {
					t.Errorf("stdout contains %q:\n%s", w, stdout)
				}
			}
		})
	}
}

// verify reads a rotated log as one chain; with the oldest files pruned it
// says where the log starts, and a file removed from the middle is found.
func TestAuditVerifyAcrossRotations(t *testing.T) {
	dir := t.TempDir()
	l := datadir.Layout{Dir: dir}
	signer := auditKey(t, l)
	w, err := audit.OpenRotatingWriter(l.AuditLog(), signer, 5, audit.Rotation{MaxSize: 1500, MaxBackups: 4, Compress: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		ev := &auditv1.Event{
			TypeMeta:  metav1.TypeMeta{Kind: "Event", APIVersion: "audit.k8s.io/v1"},
			Level:     auditv1.LevelMetadata,
			AuditID:   types.UID(fmt.Sprint("id-", i)),
			Stage:     auditv1.StageResponseComplete,
			Verb:      "get",
			User:      authenticationv1.UserInfo{Username: "alice"},
			ObjectRef: &auditv1.ObjectReference{Resource: "secrets", Namespace: "default", Name: "db"},
		}
		if err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := auditRun(t, "verify", "--dir", dir)
	if code != 0 || !regexp.MustCompile(`OK: events \d+ to 40,`).MatchString(stdout) {
		t.Fatalf("rotated log, the oldest files pruned: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	files, err := audit.LogFiles([]string{filepath.Dir(l.AuditLog())})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 5 {
		t.Fatalf("files %v, want 4 rotated and audit.log", files)
	}
	if err := os.Remove(files[2]); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = auditRun(t, "verify", "--dir", dir)
	if code != 1 || !strings.Contains(stdout, files[3]+":1: deleted") {
		t.Errorf("a rotated file removed: exit %d, want 1 and a deletion at %s:1\nstdout:\n%s\nstderr:\n%s", code, files[3], stdout, stderr)
	}
}

// up and apiserver take kube-apiserver's audit flags, and refuse bad
// values, each named, before they start anything.
func TestAuditFlagsRefused(t *testing.T) {
	for _, command := range []string{"apiserver", "up"} {
		t.Run(command, func(t *testing.T) {
			cmd := newRootCommand()
			var out, errOut bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&errOut)
			dir := filepath.Join(t.TempDir(), "data")
			cmd.SetArgs([]string{command, "--dir", dir, "--audit-log-maxsize", "0", "--audit-log-maxbackup", "-1", "--audit-log-maxage", "-2",
				"--audit-log-compress=false", "--audit-webhook-config-file", "hook.conf", "--audit-webhook-batch-buffer-size", "0",
				"--audit-webhook-mode", "sync", "--audit-webhook-batch-throttle-qps", "0"})
			err := cmd.ExecuteContext(t.Context())
			for _, want := range []string{"--audit-log-maxsize 0", "--audit-log-maxbackup -1", "--audit-log-maxage -2", "audit webhook buffer size 0",
				`audit webhook mode "sync"`, "audit webhook throttle of 0 a second"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v, want one naming %s", err, want)
				}
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("%s created its data directory before refusing: %v", command, err)
			}
		})
	}
}

// --follow goes on into the new file when the log rotates, and misses none
// of the events written to the old one before it was renamed.
func TestAuditFollowAcrossRotations(t *testing.T) {
	l := datadir.Layout{Dir: t.TempDir()}
	w, err := audit.OpenRotatingWriter(l.AuditLog(), auditKey(t, l), 0, audit.Rotation{MaxSize: 1500})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	event := func(name string) *auditv1.Event {
		return &auditv1.Event{
			TypeMeta:  metav1.TypeMeta{Kind: "Event", APIVersion: "audit.k8s.io/v1"},
			Level:     auditv1.LevelMetadata,
			Stage:     auditv1.StageResponseComplete,
			Verb:      "get",
			User:      authenticationv1.UserInfo{Username: "alice"},
			ObjectRef: &auditv1.ObjectReference{Resource: "secrets", Namespace: "default", Name: name},
		}
	}
	if err := w.Write(event("first")); err != nil {
		t.Fatal(err)
	}
	seen := make(chan string, 100)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- followLog(ctx, l.AuditLog(), &auditQueryFlags{pollEvery: time.Millisecond}, func(_ []byte, e *audit.Event) error {
			seen <- e.Name()
			return nil
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	// Following starts at the end of the file: probes until one is seen.
	deadline := time.After(20 * time.Second)
	for following := false; !following; {
		if err := w.Write(event("probe")); err != nil {
			t.Fatal(err)
		}
		select {
		case <-seen:
			following = true
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatal("follow saw no probe")
		}
	}
	for len(seen) > 0 {
		<-seen
	}
	for i := range 30 {
		if err := w.Write(event(fmt.Sprint("e", i))); err != nil {
			t.Fatal(err)
		}
	}
	files, err := audit.LogFiles([]string{filepath.Dir(l.AuditLog())})
	if err != nil || len(files) < 4 {
		t.Fatalf("files %v, %v: want the log rotated three times or more", files, err)
	}
	for i := range 30 {
		select {
		case got := <-seen:
			if want := fmt.Sprint("e", i); got != want {
				t.Fatalf("followed %s, want %s", got, want)
			}
		case <-deadline:
			t.Fatalf("follow stopped before e%d", i)
		}
	}
}

// A request has an event per stage its policy records: the table names
// each event's stage, --stage selects one, and --count-by counts each
// request once (events, when the stage is counted by or selected).
func TestAuditQueryStages(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.log")
	ev := func(id, stage, verb string, code int) string {
		s := `{"auditID":"` + id + `","stage":"` + stage + `","verb":"` + verb + `","user":{"username":"alice"},"objectRef":{"resource":"pods","namespace":"a"}`
		if stage != "RequestReceived" {
			s += fmt.Sprintf(`,"responseStatus":{"code":%d},"annotations":{"authorization.k8s.io/decision":"allow"}`, code)
		}
		return s + "}"
	}
	lines := []string{
		ev("w", "RequestReceived", "watch", 0),
		ev("w", "ResponseStarted", "watch", 200),
		ev("g", "RequestReceived", "get", 0),
		ev("g", "ResponseComplete", "get", 200),
		ev("w", "ResponseComplete", "watch", 200),
		ev("p", "RequestReceived", "watch", 0),
		ev("p", "ResponseStarted", "watch", 200),
		ev("p", "Panic", "watch", 500),
		ev("l", "Panic", "list", 500),
	}
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{name: "by verb and code", args: []string{"--count-by", "verb,code"},
			want: []string{"COUNT\tVERB\tCODE", "2\twatch\t200", "1\tget\t200", "1\tlist\t500"}},
		{name: "by stage", args: []string{"--count-by", "stage"},
			want: []string{"COUNT\tSTAGE", "3\tRequestReceived", "2\tPanic", "2\tResponseComplete", "2\tResponseStarted"}},
		{name: "of one stage", args: []string{"--count-by", "verb", "--stage", "ResponseComplete"},
			want: []string{"COUNT\tVERB", "1\tget", "1\twatch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := auditRun(t, append([]string{"query", log}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
			}
			if got := strings.Split(strings.TrimSpace(stdout), "\n"); !slices.Equal(got, tc.want) {
				t.Errorf("stdout:\n%s\nwant:\n%s", stdout, strings.Join(tc.want, "\n"))
			}
		})
	}
	stdout, stderr, code := auditRun(t, "query", log, "--stage", "RequestReceived")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	rows := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(rows) != 4 || !strings.Contains(rows[0], "STAGE") {
		t.Fatalf("--stage RequestReceived: want a header and 3 rows:\n%s", stdout)
	}
	for _, row := range rows[1:] {
		// No response yet: no code, no decision.
		if f := strings.Fields(row); f[1] != "RequestReceived" || f[7] != "-" || f[8] != "-" {
			t.Errorf("row %q: want stage RequestReceived, code and decision -", row)
		}
	}
	if _, _, code := auditRun(t, "query", log, "--stage", "Started"); code != 2 {
		t.Errorf("--stage Started: exit %d, want 2", code)
	}
}
