package compose

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config"
)

// alwaysIn is the answers "always" of a config file in a new folder.
func alwaysIn(t *testing.T) (*AlwaysAnswers, string) {
	t.Helper()
	cfgFile := filepath.Join(t.TempDir(), "agenthost.yaml")
	if err := os.WriteFile(cfgFile, []byte("mcpServers: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return NewAlwaysAnswers(&config.Config{File: cfgFile}), config.LocalPath(cfgFile)
}

// TestAlwaysAnswersNoConfigFile: with no config file there is nowhere to
// keep an answer, and none is offered, saved or removed.
func TestAlwaysAnswersNoConfigFile(t *testing.T) {
	a := NewAlwaysAnswers(&config.Config{})
	var none *NoAnswerError
	if a.Offered() || a.Path() != "" || a.Entries() != nil {
		t.Errorf("offered with no config file: %+v", a)
	}
	if _, err := a.Save("shop", "delete", time.Now()); err == nil {
		t.Error("saved with no config file")
	}
	if _, err := a.Remove("1"); !errors.As(err, &none) {
		t.Errorf("remove: %v", err)
	}
	if got := a.Reused("shop", "delete", "allow", ""); got != ReuseNone {
		t.Errorf("reused: %d", got)
	}
}

// TestAlwaysAnswers: an answer is saved once beside the config file (and
// loads from there as its allow rule), listed in order, and removed by
// number or rule id.
func TestAlwaysAnswers(t *testing.T) {
	a, path := alwaysIn(t)
	if !a.Offered() || a.Path() != path {
		t.Fatalf("offered %t at %q, want %q", a.Offered(), a.Path(), path)
	}
	for _, tool := range []string{"delete", "refund", "delete"} {
		id, err := a.Save("shop", tool, time.Now())
		if err != nil || id != config.LocalRulePrefix+"shop/"+tool {
			t.Fatalf("save %s: %q, %v", tool, id, err)
		}
	}
	if got := a.Entries(); len(got) != 2 || got[0].Tool != "delete" || got[1].Tool != "refund" {
		t.Fatalf("entries %+v", got)
	}
	l, err := config.LoadLocal(path)
	if err != nil || len(l.Approvals.Always) != 2 || l.Approvals.Always[0].Rule().Decide != "allow" {
		t.Fatalf("the file: %+v, %v", l, err)
	}
	// Reloaded from its config, the answers are there.
	cfg := &config.Config{File: filepath.Join(filepath.Dir(path), "agenthost.yaml"), Local: l}
	if got := NewAlwaysAnswers(cfg).Entries(); len(got) != 2 {
		t.Errorf("reloaded: %+v", got)
	}

	for _, tc := range []struct {
		arg, id string
		none    *NoAnswerError
		left    int
	}{
		{"0", "", &NoAnswerError{Arg: "0", Number: true, N: 0}, 2},
		{"3", "", &NoAnswerError{Arg: "3", Number: true, N: 3}, 2},
		{"-1", "", &NoAnswerError{Arg: "-1", Number: true, N: -1}, 2},
		{"nope", "", &NoAnswerError{Arg: "nope"}, 2},
		{"2", config.LocalRulePrefix + "shop/refund", nil, 1},
		{config.LocalRulePrefix + "shop/delete", config.LocalRulePrefix + "shop/delete", nil, 0},
		{"1", "", &NoAnswerError{Arg: "1", Number: true, N: 1}, 0},
	} {
		id, err := a.Remove(tc.arg)
		var none *NoAnswerError
		switch {
		case tc.none != nil && (!errors.As(err, &none) || *none != *tc.none):
			t.Errorf("remove %s: %v, want %v", tc.arg, err, tc.none)
		case tc.none == nil && (err != nil || id != tc.id):
			t.Errorf("remove %s: %q, %v; want %q", tc.arg, id, err, tc.id)
		}
		if l, _ := config.LoadLocal(path); len(a.Entries()) != tc.left || len(l.Approvals.Always) != tc.left {
			t.Errorf("after remove %s: %d kept, %d in the file; want %d", tc.arg, len(a.Entries()), len(l.Approvals.Always), tc.left)
		}
	}
	if got := (&NoAnswerError{Arg: "x"}).Error(); got != `no answer "x"` {
		t.Errorf("message %q", got)
	}
	if got := (&NoAnswerError{Arg: "2", Number: true, N: 2}).Error(); got != "no answer 2" {
		t.Errorf("message %q", got)
	}
}

func TestAlwaysAnswersReused(t *testing.T) {
	a, _ := alwaysIn(t)
	if _, err := a.Save("shop", "delete", time.Now()); err != nil {
		t.Fatal(err)
	}
	granted := string(rules.OutcomeGranted)
	for _, tc := range []struct {
		name                            string
		server, tool, decision, outcome string
		want                            Reuse
	}{
		{"allowed by always", "shop", "delete", "allow", "", ReuseAlways},
		{"a session grant", "shop", "other", "", granted, ReuseSession},
		{"always wins over the grant", "shop", "delete", "allow", granted, ReuseAlways},
		{"asked, not always", "shop", "delete", "ask", "", ReuseNone},
		{"another tool allowed", "shop", "other", "allow", "", ReuseNone},
		{"another server", "bank", "delete", "allow", "", ReuseNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := a.Reused(tc.server, tc.tool, tc.decision, tc.outcome); got != tc.want {
				t.Errorf("Reused = %d, want %d", got, tc.want)
			}
		})
	}
}

// Answers given at once (an approval question and /approvals) are kept
// one by one.
func TestAlwaysAnswersConcurrent(t *testing.T) {
	a, path := alwaysIn(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if _, err := a.Save("shop", "t"+strconv.Itoa(i), time.Now()); err != nil {
				t.Error(err)
			}
			_ = a.Entries()
			_ = a.Reused("shop", "t0", "allow", "")
		})
	}
	wg.Wait()
	if l, err := config.LoadLocal(path); err != nil || len(l.Approvals.Always) != 8 {
		t.Errorf("the file: %v, %v", l, err)
	}
}
