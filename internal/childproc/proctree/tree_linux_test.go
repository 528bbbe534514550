package proctree

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestReadProcFile: the whole file, whether it fits the buffer given or
// is several times larger, and ReadStat's fields of this process.
func TestReadProcFile(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 200)
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, big, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{16, len(big), 4 * len(big)} {
		got, err := readProcFile(path, make([]byte, size))
		if err != nil || !bytes.Equal(got, big) {
			t.Fatalf("buffer %d: read %d bytes (%v), want %d", size, len(got), err, len(big))
		}
	}
	if _, err := readProcFile(filepath.Join(t.TempDir(), "missing"), make([]byte, 16)); err == nil {
		t.Fatal("a missing file read without an error")
	}
	st, ok := ReadStat(os.Getpid())
	if !ok || st.Pid != os.Getpid() || st.PPid != os.Getppid() || st.State == 0 {
		t.Fatalf("ReadStat(self) = %+v, %v", st, ok)
	}
}
