//go:build race

package secureparams

// raceEnabled: under the race detector sync.Pool drops items at random,
// so encoding/json's pooled scanner is now and then allocated again and an
// allocation count means nothing; `make test` runs the allocation checks
// once more without it (Makefile, target test).
const raceEnabled = true
