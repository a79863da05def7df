package audit

import (
	"path/filepath"
	"testing"
)

// BenchmarkWriterWrite measures one event written and chained, from
// concurrent writers.
//
//	go test ./audit -run '^$' -bench WriterWrite
func BenchmarkWriterWrite(b *testing.B) {
	signer, _ := testKeys(b, KeyName)
	w, err := OpenWriter(filepath.Join(b.TempDir(), "audit.log"), signer, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	ev := testEvent(1)
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := w.Write(ev); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
