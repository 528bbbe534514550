//go:build !linux

package auditlog

// watchFile: no file watch here; the sink checks the file before every
// decision record.
func watchFile(string) *fileWatch { return nil }

func (w *fileWatch) close() {}
