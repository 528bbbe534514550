//go:build !race

package host

// raceEnabled: see race_test.go.
const raceEnabled = false
