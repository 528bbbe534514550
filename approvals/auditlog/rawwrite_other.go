//go:build !unix

package auditlog

import (
	"errors"
	"os"
)

// rawFD is -1 here: the sink writes through the *os.File.
func rawFD(*os.File, os.FileInfo) int { return -1 }

// errNoDescriptorWrite is writeFD's error here, where the sink never has
// a descriptor to write (rawFD is -1) and writes through the *os.File.
var errNoDescriptorWrite = errors.New("auditlog: no descriptor write on this system")

// writeFD is never called where rawFD is -1; should it be, the write
// fails (and the sink's failure is sticky) instead of panicking the host.
func writeFD(int, []byte) (int, error) { return 0, errNoDescriptorWrite }
