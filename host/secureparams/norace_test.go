//go:build !race

package secureparams

// raceEnabled: see race_test.go.
const raceEnabled = false
