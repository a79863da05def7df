package audit

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

func testKeys(t testing.TB, name string) (note.Signer, note.Verifiers) {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return s, note.VerifierList(v)
}

func testEvent(i int) *auditv1.Event {
	return &auditv1.Event{
		TypeMeta:   metav1.TypeMeta{Kind: "Event", APIVersion: "audit.k8s.io/v1"},
		Level:      auditv1.LevelMetadata,
		Stage:      auditv1.StageResponseComplete,
		Verb:       "get",
		User:       authenticationv1.UserInfo{Username: fmt.Sprintf("user-%d", i%3)},
		ObjectRef:  &auditv1.ObjectReference{Resource: "secrets", Namespace: "default", Name: fmt.Sprintf("s%d", i)},
		SourceIPs:  []string{"127.0.0.1"},
		RequestURI: "/api/v1/namespaces/default/secrets/s",
		// A nested annotation of the same key comes before the event's own.
		Annotations: map[string]string{"authorization.k8s.io/decision": "allow"},
	}
}

// writeLog writes n events in two runs of the writer, a checkpoint every
// 10 events and at each close.
func writeLog(t *testing.T, path string, signer note.Signer, n int) {
	t.Helper()
	writeRuns(t, path, signer, n, Rotation{})
}

// writeRuns is writeLog with the file rotated as rot says.
func writeRuns(t *testing.T, path string, signer note.Signer, n int, rot Rotation) {
	t.Helper()
	for run, count := range []int{n / 2, n - n/2} {
		w, err := OpenRotatingWriter(path, signer, 10, rot)
		if err != nil {
			t.Fatal(err)
		}
		for i := range count {
			if err := w.Write(testEvent(run*n + i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWriterChainsAcrossRestarts(t *testing.T) {
	signer, verifiers := testKeys(t, KeyName)
	path := filepath.Join(t.TempDir(), "audit.log")
	writeLog(t, path, signer, 25)
	v, err := Verify([]string{path}, verifiers)
	if err != nil {
		t.Fatal(err)
	}
	if v.Finding != nil {
		t.Fatalf("finding in an untouched log: %v", v.Finding)
	}
	// 12 events, checkpoints at 10 and 12 (close); 13 more, checkpoints at
	// 20 and 25.
	if v.Events != 25 || v.Checkpoints != 4 || v.Signed != 25 {
		t.Errorf("got %d events, %d checkpoints, signed %d; want 25, 4, 25", v.Events, v.Checkpoints, v.Signed)
	}
	if _, other := testKeys(t, KeyName); true {
		v, err := Verify([]string{path}, other)
		if err != nil {
			t.Fatal(err)
		}
		if v.Finding == nil || v.Finding.What != Forged || v.Finding.Line != 11 {
			t.Errorf("verified with another key: got %v, want a forged checkpoint at line 11", v.Finding)
		}
	}
}

func TestWriterResumesAfterATornLine(t *testing.T) {
	signer, verifiers := testKeys(t, KeyName)
	path := filepath.Join(t.TempDir(), "audit.log")
	writeLog(t, path, signer, 4)
	// A crash in the middle of a write: no checkpoint, half a line.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Meta`)
	f.Close()
	writeLog(t, path, signer, 2)
	v, err := Verify([]string{path}, verifiers)
	if err != nil {
		t.Fatal(err)
	}
	// 2 events, checkpoint, 2 events, checkpoint, the torn line.
	if v.Finding == nil || v.Finding.Line != 7 || v.Finding.What != Inserted {
		t.Fatalf("got %v, want the torn line 7 reported", v.Finding)
	}
	lines := readLines(t, path)
	lines = append(lines[:6], lines[7:]...)
	os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600)
	v, err = Verify([]string{path}, verifiers)
	if err != nil {
		t.Fatal(err)
	}
	if v.Finding != nil || v.Events != 6 {
		t.Fatalf("without the torn line: got %v, %d events; want no finding, 6 events", v.Finding, v.Events)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(string(data), "\n")[:bytes.Count(data, []byte("\n"))]
}

// TestVerifyCatchesEachEdit makes one edit to a log and asks Verify where
// it is. The log's lines: events 1-10 on lines 1-10, a checkpoint on 11,
// events 11-12 on 12-13, a checkpoint on 14 (the writer closed), events
// 13-20 on 15-22, a checkpoint on 23, events 21-25 on 24-28, a checkpoint
// on 29.
func TestVerifyCatchesEachEdit(t *testing.T) {
	signer, verifiers := testKeys(t, KeyName)
	forger, _ := testKeys(t, KeyName)
	dir := t.TempDir()
	orig := filepath.Join(dir, "orig.log")
	writeLog(t, orig, signer, 25)
	lines := readLines(t, orig)
	if len(lines) != 29 {
		t.Fatalf("the log has %d lines, want 29", len(lines))
	}
	at := func(n int) string { return lines[n-1] }
	without := func(n int) []string {
		return append(append([]string{}, lines[:n-1]...), lines[n:]...)
	}
	with := func(n int, s string) []string {
		l := append([]string{}, lines...)
		l[n-1] = s
		return l
	}
	forged, err := signCheckpoint(checkpoint{origin: KeyName, count: 10, hash: [32]byte{1}}, forger)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		lines []string
		line  int
		what  string
	}{
		{"a field changed", with(5, strings.Replace(at(5), `"get"`, `"put"`, 1)), 5, Edited},
		{"a name changed", with(16, strings.Replace(at(16), `"name":"s`, `"name":"x`, 1)), 16, Edited},
		{"the hash changed", with(5, flipHash(at(5))), 5, Edited},
		{"the sequence number changed", with(5, strings.Replace(at(5), `seq":"5"`, `seq":"6"`, 1)), 5, Edited},
		{"a line removed", without(5), 5, Deleted},
		{"the first line removed", without(1), 1, Deleted},
		{"a line duplicated", append(append(append([]string{}, lines[:5]...), at(5)), lines[5:]...), 6, Inserted},
		{"two lines swapped", append(append(append([]string{}, lines[:4]...), at(6), at(5)), lines[6:]...), 5, Reordered},
		{"a line moved back", append(append(append([]string{}, lines[:7]...), at(3)), lines[7:]...), 8, Reordered},
		{"a foreign line inserted", append(append(append([]string{}, lines[:4]...), `{"kind":"Event"}`+"\n"), lines[4:]...), 5, Inserted},
		{"the tail cut in a line", append(without(29)[:27], at(28)[:40]), 28, CutOff},
		{"the checkpoint cut", append(append([]string{}, lines[:28]...), at(29)[:50]), 29, CutOff},
		{"a checkpoint forged", with(11, string(forged)), 11, Forged},
		{"a checkpoint's count changed", with(11, strings.Replace(at(11), `\n10\n`, `\n11\n`, 1)), 11, Forged},
		{"a checkpoint moved", append(append(append([]string{}, lines[:4]...), at(11)), without(11)[4:]...), 5, Inserted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".log")
			if err := os.WriteFile(path, []byte(strings.Join(tt.lines, "")), 0o600); err != nil {
				t.Fatal(err)
			}
			v, err := Verify([]string{path}, verifiers)
			if err != nil {
				t.Fatal(err)
			}
			if v.Finding == nil {
				t.Fatalf("no finding; want %s at line %d", tt.what, tt.line)
			}
			if v.Finding.Line != tt.line || v.Finding.What != tt.what {
				t.Errorf("got %v; want %s at line %d", v.Finding, tt.what, tt.line)
			}
		})
	}
}

// A log cut at a line boundary ends where it was cut: Verify finds nothing
// wrong, and says how far the last checkpoint goes.
func TestVerifyReportsWhatIsSigned(t *testing.T) {
	signer, verifiers := testKeys(t, KeyName)
	path := filepath.Join(t.TempDir(), "audit.log")
	writeLog(t, path, signer, 25)
	lines := readLines(t, path)
	os.WriteFile(path, []byte(strings.Join(lines[:26], "")), 0o600)
	v, err := Verify([]string{path}, verifiers)
	if err != nil {
		t.Fatal(err)
	}
	if v.Finding != nil || v.Events != 23 || v.Signed != 20 {
		t.Errorf("got %v, %d events, %d signed; want no finding, 23 events, 20 signed", v.Finding, v.Events, v.Signed)
	}
}

func TestEnsureSigningKey(t *testing.T) {
	dir := t.TempDir()
	created, err := EnsureSigningKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(created) != 2 {
		t.Fatalf("created %v, want the key and its public key", created)
	}
	key, _ := os.ReadFile(filepath.Join(dir, SigningKeyFile))
	pub, _ := os.ReadFile(filepath.Join(dir, VerifierKeyFile))
	if st, _ := os.Stat(filepath.Join(dir, SigningKeyFile)); st.Mode().Perm() != 0o600 {
		t.Errorf("the signing key is %v, want 0600", st.Mode().Perm())
	}
	if created, err := EnsureSigningKey(dir); err != nil || len(created) != 0 {
		t.Fatalf("second run created %v, %v; want nothing", created, err)
	}
	os.Remove(filepath.Join(dir, VerifierKeyFile))
	if created, err := EnsureSigningKey(dir); err != nil || len(created) != 1 {
		t.Fatalf("without the public key: created %v, %v; want it", created, err)
	}
	key2, _ := os.ReadFile(filepath.Join(dir, SigningKeyFile))
	pub2, _ := os.ReadFile(filepath.Join(dir, VerifierKeyFile))
	if !bytes.Equal(key, key2) || !bytes.Equal(pub, pub2) {
		t.Errorf("the keys changed")
	}
	s, err := LoadSigner(dir)
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVerifier(filepath.Join(dir, VerifierKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := note.Sign(&note.Note{Text: "x\n"}, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(msg, note.VerifierList(v)); err != nil {
		t.Errorf("the public key does not verify the key's signature: %v", err)
	}
}

// flipHash changes one digit of an event line's chain hash.
func flipHash(line string) string {
	i := strings.LastIndex(line, `chain":"`) + len(`chain":"`)
	d := "0"
	if line[i] == '0' {
		d = "1"
	}
	return line[:i] + d + line[i+1:]
}
