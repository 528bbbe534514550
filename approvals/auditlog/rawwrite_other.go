//go:build !unix

package auditlog

import "os"

// rawFD is -1 here: the sink writes through the *os.File.
func rawFD(*os.File) int { return -1 }

// writeFD is not called when rawFD is -1.
func writeFD(int, []byte) (int, error) { panic("auditlog: writeFD without a descriptor") }
