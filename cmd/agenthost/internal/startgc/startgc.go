// Package startgc owns the garbage collector's setting while the CLI's
// packages initialize: importing it holds the collector back from before
// the large initializers run (the JSON Schema library compiles every
// draft's metaschema, 1.7 MB of allocations of which little stays live),
// and Restore, first thing in main, gives it back its setting. Without it
// every process of the CLI ran one collection during init, some 3 ms of
// CPU, before main had done anything. A GOGC set in the environment is
// left alone.
//
// It imports only os and runtime/debug, so Go initializes it after some
// 25 initializers of the standard library and before the module's and its
// dependencies' own (as internal/childproc/supervisor).
package startgc

import (
	"os"
	"runtime/debug"
)

// initPercent is GOGC while the packages initialize: a heap goal of 16 MB
// instead of 4 MB, more than all initializers allocate together.
const initPercent = 400

// saved is the setting Restore gives back; held is whether init changed it.
var (
	saved int
	held  bool
)

func init() {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	saved, held = debug.SetGCPercent(initPercent), true
}

// Restore gives the collector back the setting it had before init. It is
// called once, at the start of main.
func Restore() {
	if held {
		debug.SetGCPercent(saved)
		held = false
	}
}
