// Command testhost is a minimal host for the plugins package's "host
// killed" test: it starts a plugin through plugins.Source, issues one
// Resolve in the background (which may block forever), writes a ready file
// and then blocks until it is killed.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/plugins"
)

func main() {
	path := flag.String("plugin", "", "plugin executable")
	sum := flag.String("checksum", "", "sha256 of the plugin, hex")
	config := flag.String("config", "{}", "plugin config, JSON")
	ref := flag.String("ref", "", "ref to resolve in the background")
	ready := flag.String("ready", "", "file to create once the Resolve has been issued")
	var pluginArgs stringList
	flag.Var(&pluginArgs, "arg", "plugin argument (repeatable)")
	flag.Parse()

	checksum, err := plugins.ParseChecksum(*sum)
	if err != nil {
		fail(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(*config), &cfg); err != nil {
		fail(fmt.Errorf("config: %w", err))
	}
	src, err := plugins.NewSource(plugins.Options{
		Path:     *path,
		Args:     pluginArgs,
		Env:      []string{"PATH=" + os.Getenv("PATH")},
		Checksum: checksum,
		Config:   cfg,
	})
	if err != nil {
		fail(err)
	}
	go func() {
		_, err := src.Resolve(context.Background(), bindings.Request{Ref: *ref})
		if err != nil {
			fmt.Fprintln(os.Stderr, "resolve:", err)
		}
	}()
	if err := os.WriteFile(*ready, []byte("ready\n"), 0o600); err != nil {
		fail(err)
	}
	select {}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "testhost:", err)
	os.Exit(1)
}

type stringList []string

func (l *stringList) String() string     { return fmt.Sprint([]string(*l)) }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }
