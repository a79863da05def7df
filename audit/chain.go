package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// The hash chain. Every event the Writer writes carries two annotations:
//
//   - SeqAnnotation, its number in the chain, from 1, in decimal;
//   - ChainAnnotation, hex(SHA-256(previous hash || canonical bytes)),
//     where the previous hash is the raw 32 bytes of the event before
//     (32 zero bytes before the first event).
//
// The canonical bytes of an event are its line as written, without the
// newline, with the value of its ChainAnnotation blanked: every byte
// of the line but the hash itself is covered, the sequence number
// included, and a verifier needs no JSON encoder that agrees with the
// writer's. The annotations are the last field of an event and their keys
// are sorted, so the annotation is found as the last occurrence of
// `"audit.trustplane.io/chain":"` in the line; a JSON string cannot hold
// that sequence unescaped, so a nested object's annotation can only come
// before it.
const (
	ChainAnnotation = "audit.trustplane.io/chain"
	SeqAnnotation   = "audit.trustplane.io/seq"
)

var (
	chainKey = []byte(`"` + ChainAnnotation + `":"`)
	seqKey   = []byte(`"` + SeqAnnotation + `":"`)
)

// hashLen is the length of a hash in hex.
const hashLen = 2 * sha256.Size

// chainFields finds an event line's chain annotation: its sequence number
// and hash, and where the hash's value starts in line.
func chainFields(line []byte) (seq int64, hash [sha256.Size]byte, at int, ok bool) {
	i := bytes.LastIndex(line, chainKey)
	if i < 0 {
		return 0, hash, 0, false
	}
	at = i + len(chainKey)
	if len(line) < at+hashLen+1 || line[at+hashLen] != '"' {
		return 0, hash, 0, false
	}
	if _, err := hex.Decode(hash[:], line[at:at+hashLen]); err != nil {
		return 0, hash, 0, false
	}
	j := bytes.LastIndex(line, seqKey)
	if j < 0 {
		return 0, hash, 0, false
	}
	rest := line[j+len(seqKey):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return 0, hash, 0, false
	}
	seq, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	if err != nil || seq < 1 {
		return 0, hash, 0, false
	}
	return seq, hash, at, true
}

// chainHash is the hash of the event line whose chain value starts at at,
// following prev.
func chainHash(prev [sha256.Size]byte, line []byte, at int) [sha256.Size]byte {
	h := sha256.New()
	h.Write(prev[:])
	h.Write(line[:at])
	h.Write(line[at+hashLen:])
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// Checkpoints. Every so many events, and when it closes, the Writer
// writes a line of its own kind holding a signed note
// (https://github.com/C2SP/C2SP/blob/main/signed-note.md) whose text is
// the origin (the signing key's name), the number of events chained so far
// and the hash of the last of them, in base64, each on its own line:
//
//	{"kind":"Checkpoint","apiVersion":"audit.trustplane.io/v1","note":"trustplane-audit\n1000\n<base64>\n\n— trustplane-audit <signature>\n"}
const (
	checkpointKind       = "Checkpoint"
	checkpointAPIVersion = "audit.trustplane.io/v1"
)

var checkpointPrefix = []byte(`{"kind":"` + checkpointKind + `","apiVersion":"` + checkpointAPIVersion + `",`)

type checkpointLine struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Note       string `json:"note"`
}

func isCheckpoint(line []byte) bool { return bytes.HasPrefix(line, checkpointPrefix) }

// IsCheckpoint reports whether a line of the log is a signed checkpoint
// rather than an event: readers of events skip it.
func IsCheckpoint(line []byte) bool { return isCheckpoint(line) }

// checkpoint is what a checkpoint states.
type checkpoint struct {
	origin string
	count  int64
	hash   [sha256.Size]byte
}

func (c checkpoint) text() string {
	return fmt.Sprintf("%s\n%d\n%s\n", c.origin, c.count, base64.StdEncoding.EncodeToString(c.hash[:]))
}

// signCheckpoint is the line of c signed by signer, with its newline.
func signCheckpoint(c checkpoint, signer note.Signer) ([]byte, error) {
	msg, err := note.Sign(&note.Note{Text: c.text()}, signer)
	if err != nil {
		return nil, fmt.Errorf("sign audit checkpoint: %w", err)
	}
	line, err := json.Marshal(checkpointLine{Kind: checkpointKind, APIVersion: checkpointAPIVersion, Note: string(msg)})
	if err != nil {
		return nil, err
	}
	return append(line, '\n'), nil
}

// noteOf is the signed note a checkpoint line holds.
func noteOf(line []byte) ([]byte, error) {
	var cl checkpointLine
	if err := json.Unmarshal(line, &cl); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return []byte(cl.Note), nil
}

// parseCheckpoint reads a checkpoint's text.
func parseCheckpoint(text string) (checkpoint, error) {
	var c checkpoint
	lines := strings.Split(text, "\n")
	if len(lines) != 4 || lines[3] != "" {
		return c, errors.New("checkpoint: not origin, count and hash")
	}
	c.origin = lines[0]
	n, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || n < 0 {
		return c, fmt.Errorf("checkpoint: bad count %q", lines[1])
	}
	c.count = n
	h, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(h) != sha256.Size {
		return c, fmt.Errorf("checkpoint: bad hash %q", lines[2])
	}
	copy(c.hash[:], h)
	return c, nil
}

// openCheckpoint verifies a checkpoint line's signature with verifiers
// and reads what it states.
func openCheckpoint(line []byte, verifiers note.Verifiers) (checkpoint, error) {
	msg, err := noteOf(line)
	if err != nil {
		return checkpoint{}, err
	}
	n, err := note.Open(msg, verifiers)
	if err != nil {
		return checkpoint{}, err
	}
	c, err := parseCheckpoint(n.Text)
	if err != nil {
		return c, err
	}
	if c.origin != n.Sigs[0].Name {
		return c, fmt.Errorf("checkpoint of origin %q signed by %q", c.origin, n.Sigs[0].Name)
	}
	return c, nil
}
