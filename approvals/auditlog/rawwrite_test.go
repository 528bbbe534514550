package auditlog

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// plainFile hides the *os.File from the sink, so it writes through the
// file's own Write (fd -1): the path the descriptor's write replaced.
type plainFile struct{ *os.File }

// twoSinks are a sink that writes its file's descriptor and one that
// writes through the *os.File, each on a file of its own.
func twoSinks(t testing.TB) (raw, plain *FileSink, rawPath, plainPath string) {
	dir := t.TempDir()
	rawPath, plainPath = filepath.Join(dir, "raw.jsonl"), filepath.Join(dir, "plain.jsonl")
	raw, err := OpenFileSink(rawPath, FileSinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(plainPath, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	plain = newFileSink(plainFile{f}, plainPath, FileSinkOptions{})
	if raw.fd < 0 || plain.fd >= 0 {
		t.Skipf("descriptors: raw %d, plain %d (not a unix system?)", raw.fd, plain.fd)
	}
	return raw, plain, rawPath, plainPath
}

func sameFiles(t testing.TB, a, b string) {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x, y) {
		t.Fatalf("the descriptor's file\n%q\nthe os.File's\n%q", x, y)
	}
}

// A sink writing its descriptor leaves the file the os.File's Write left,
// record for record, and counts the same records; a write the descriptor
// refuses fails, is sticky and reads as the file's Write's error.
func TestDescriptorWriteIsTheFileWrite(t *testing.T) {
	raw, plain, rawPath, plainPath := twoSinks(t)
	ctx := context.Background()
	for i := range 5 {
		for _, s := range []*FileSink{raw, plain} {
			must(t, s.Write(ctx, sampleRecord(i, 1)))
		}
	}
	if raw.records != plain.records || raw.records != 5 || !raw.dirty {
		t.Fatalf("records: descriptor %d, os.File %d; dirty %v", raw.records, plain.records, raw.dirty)
	}
	must(t, raw.Close())
	must(t, plain.Close())
	sameFiles(t, rawPath, plainPath)

	// A descriptor open for reading only: its write fails (EBADF).
	dir := t.TempDir()
	path := filepath.Join(dir, "readonly.jsonl")
	must(t, os.WriteFile(path, nil, 0o600))
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s := newFileSink(f, path, FileSinkOptions{})
	info, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	s.osf, s.fd = f, rawFD(f, info)
	err = s.writeLocked([]byte("{}\n"))
	if err == nil || s.err == nil {
		t.Fatalf("write to a read-only descriptor: %v (sticky %v)", err, s.err)
	}
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Op != "write" {
		t.Fatalf("the error does not read as the file's Write: %v", err)
	}
	f2, oerr := os.Open(path)
	if oerr != nil {
		t.Fatal(oerr)
	}
	p := newFileSink(plainFile{f2}, path, FileSinkOptions{})
	if perr := p.writeLocked([]byte("{}\n")); perr == nil || perr.Error() != err.Error() {
		t.Fatalf("the descriptor's error %q, the os.File's %v", err, perr)
	}
	s.Close()
	p.Close()
}

// FuzzDescriptorWrite: any line written through the descriptor lands in
// the file as the os.File's Write puts it there.
func FuzzDescriptorWrite(f *testing.F) {
	f.Add([]byte(`{"ts":"x"}`+"\n"), []byte("\n"))
	f.Add([]byte{}, []byte{0xff, 0})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		raw, plain, rawPath, plainPath := twoSinks(t)
		for _, line := range [][]byte{a, b} {
			for _, s := range []*FileSink{raw, plain} {
				s.mu.Lock()
				err := s.writeLocked(line)
				s.mu.Unlock()
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		must(t, raw.Close())
		must(t, plain.Close())
		sameFiles(t, rawPath, plainPath)
	})
}
