//go:build !linux

package childproc

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

const spawnerSupported = false

// Spawner is Linux's long-lived supervisor; elsewhere there is none.
type Spawner struct{}

// Spawned is a child a Spawner started.
type Spawned struct{ Pid int }

var errNoSpawner = errors.New("no long-lived supervisor on this system")

// StartCmd fails: there is no Spawner here.
func (s *Spawner) StartCmd(*exec.Cmd, *os.File, *os.File, *os.File) (*Spawned, error) {
	return nil, errNoSpawner
}

// Prestart does nothing: there is no Spawner here.
func (s *Spawner) Prestart() {}

// Wait returns at once.
func (c *Spawned) Wait() int { return -1 }

// Exited is closed.
func (c *Spawned) Exited() <-chan struct{} { ch := make(chan struct{}); close(ch); return ch }

// Signal fails.
func (c *Spawned) Signal(syscall.Signal) error { return errNoSpawner }

// Terminate fails.
func (c *Spawned) Terminate() error { return errNoSpawner }

// NewSpawner is no spawner.
func NewSpawner(string) *Spawner { return nil }
