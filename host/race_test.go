//go:build race

package host

// raceEnabled: the race detector slows every event tenfold; flood tests
// send fewer.
const raceEnabled = true
