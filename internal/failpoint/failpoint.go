//go:build !failpoints || !unix

package failpoint

// Enabled reports whether this binary was built with failpoints.
const Enabled = false

// Hit is the crash point name: a no-op in this build.
func Hit(name string) {}
