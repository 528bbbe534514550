package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/benchhooks"
)

// catalogFixture is one Host over many mcptest servers on loopback HTTP,
// each serving the same number of realistic tools, plus a bare mcp-go
// client per server for the protocol's own cost of listing them.
type catalogFixture struct {
	host  *host.Host
	cfg   *config.Config
	names []string
	bare  []*client.Client
	// pages are the servers' tools/list results as received, for building
	// the catalog without a transport (build_cold).
	pages []json.RawMessage
}

const (
	catalogServers = 100
	catalogTools   = 100
	// refreshedServer is the one server re-listed by the refresh figure.
	refreshedServer = "srv042"
)

func serverName(i int) string { return fmt.Sprintf("srv%03d", i) }

func newCatalogFixture(servers, tools int, withBare bool) (*catalogFixture, error) {
	f := &catalogFixture{}
	cfg := &config.Config{
		MCPServers: map[string]*config.Server{},
		Bindings:   serverBindings("srv*"),
		Approvals:  readsAllowed("srv*"),
	}
	var urls []string
	for i := range servers {
		listing := serverToolsJSON(i, tools)
		f.pages = append(f.pages, json.RawMessage(`{"tools":`+string(listing)+`}`))
		url, _, err := httpServer(listing)
		if err != nil {
			return nil, err
		}
		name := serverName(i)
		cfg.MCPServers[name] = &config.Server{Type: config.TransportHTTP, URL: url}
		f.names = append(f.names, name)
		urls = append(urls, url)
	}
	f.cfg = cfg
	var err error
	if f.host, err = newHost(cfg, &vault{}); err != nil {
		return nil, err
	}
	onClose(func() { _ = f.host.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f.host.Connect(ctx)
	for _, snap := range f.host.Servers() {
		if snap.Status != host.StatusConnected || len(snap.Tools) != tools {
			return nil, fmt.Errorf("%s: %s with %d tools (%s)", snap.Name, snap.Status, len(snap.Tools), snap.Error)
		}
	}
	if withBare {
		for _, url := range urls {
			tr, err := transport.NewStreamableHTTP(url)
			if err != nil {
				return nil, err
			}
			cl, err := bareClient(ctx, tr)
			if err != nil {
				return nil, err
			}
			f.bare = append(f.bare, cl)
		}
	}
	return f, nil
}

func sharedCatalog(tb testing.TB) *catalogFixture {
	return sharedFixture(tb, "catalog", func() (*catalogFixture, error) {
		return newCatalogFixture(catalogServers, catalogTools, true)
	})
}

// refreshAll re-lists every server concurrently, as Host.Connect lists them.
func (f *catalogFixture) refreshAll(ctx context.Context) error {
	errs := make([]error, len(f.names))
	var wg sync.WaitGroup
	for i, name := range f.names {
		wg.Go(func() { errs[i] = f.host.Refresh(ctx, name) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (f *catalogFixture) bareListAll(ctx context.Context) error {
	errs := make([]error, len(f.bare))
	var wg sync.WaitGroup
	for i, cl := range f.bare {
		wg.Go(func() {
			res, err := cl.ListTools(ctx, mcp.ListToolsRequest{})
			if err == nil && len(res.Tools) != catalogTools {
				err = fmt.Errorf("listed %d tools", len(res.Tools))
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// buildCold builds a fresh Host's whole catalog from the servers' tools/list
// results, already received but never parsed, then a new session's model
// view. Host.New (not timed) starts from nothing: no parsed definition,
// compiled schema, risk verdict or exposed name survives from an earlier
// build.
func (f *catalogFixture) buildCold(b *testing.B, ctx context.Context) {
	b.StopTimer()
	h, err := host.New(host.Options{Config: f.cfg, Sources: map[string]bindings.Source{"vault": &vault{}}})
	if err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	errs := make([]error, len(f.names))
	var wg sync.WaitGroup
	for i, name := range f.names {
		wg.Go(func() { errs[i] = benchhooks.LoadListing(h, name, true, f.pages[i]) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	s := newSession(h)
	if v := s.View(ctx); len(v.Model.Tools()) != len(f.names)*catalogTools {
		b.Fatalf("model view has %d tools, want %d", len(v.Model.Tools()), len(f.names)*catalogTools)
	}
	b.StopTimer()
	s.Close()
	_ = h.Close()
	b.StartTimer()
}

// BenchmarkCatalog: 100 servers x 100 realistic tools (a third with
// secure parameters), every definition distinct.
//
//   - build_cold is the "catalog + model view build" figure: a fresh
//     Host builds all 100 catalogs from tools/list results already
//     received (benchhooks.LoadListing, servers in parallel: splitting, parsing,
//     validation, model parameters) and a new session's model view over
//     the 10,000 tools (verdicts, exposed names, the model's tool list);
//   - rebuild: the same end to end on the live Host: every server re-listed
//     over loopback (transport included; definitions that did not change
//     reuse their analysis) and a new session's view;
//   - bare_list_all: 100 bare mcp-go ListTools calls, the protocol's share
//     of rebuild;
//   - view_cold: a new session's first View of the built catalog;
//   - view_after_refresh_one: one server re-listed (untimed), then the
//     session's View (timed): the "refreshing one server" figure;
//   - refresh_one_and_view: the same with the re-listing timed too;
//   - floor_json_valid and floor_json_decode: encoding/json only checking
//     the same 100 results, and decoding them into Go values, servers in
//     parallel — what any host that reads every definition pays before it
//     does anything with them.
func BenchmarkCatalog(b *testing.B) {
	f := sharedCatalog(b)
	ctx := context.Background()
	eachPage := func(b *testing.B, read func(json.RawMessage) error) {
		b.ReportAllocs()
		for range b.N {
			errs := make([]error, len(f.pages))
			var wg sync.WaitGroup
			for i, page := range f.pages {
				wg.Go(func() { errs[i] = read(page) })
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("floor_json_valid", func(b *testing.B) {
		eachPage(b, func(page json.RawMessage) error {
			if !json.Valid(page) {
				return errors.New("invalid page")
			}
			return nil
		})
	})
	b.Run("floor_json_decode", func(b *testing.B) {
		eachPage(b, func(page json.RawMessage) error {
			var v any
			return json.Unmarshal(page, &v)
		})
	})
	b.Run("build_cold", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			f.buildCold(b, ctx)
		}
	})
	b.Run("rebuild", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if err := f.refreshAll(ctx); err != nil {
				b.Fatal(err)
			}
			s := newSession(f.host)
			if v := s.View(ctx); len(v.Model.Tools()) == 0 {
				b.Fatal("empty model view")
			}
			s.Close()
		}
	})
	b.Run("bare_list_all", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if err := f.bareListAll(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("view_cold", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			s := newSession(f.host)
			if v := s.View(ctx); len(v.Model.Tools()) == 0 {
				b.Fatal("empty model view")
			}
			s.Close()
		}
	})
	b.Run("view_after_refresh_one", func(b *testing.B) {
		s := newSession(f.host)
		defer s.Close()
		s.View(ctx)
		b.ReportAllocs()
		for range b.N {
			b.StopTimer()
			if err := f.host.Refresh(ctx, refreshedServer); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			s.View(ctx)
		}
	})
	b.Run("refresh_one_and_view", func(b *testing.B) {
		s := newSession(f.host)
		defer s.Close()
		s.View(ctx)
		b.ReportAllocs()
		for range b.N {
			if err := f.host.Refresh(ctx, refreshedServer); err != nil {
				b.Fatal(err)
			}
			s.View(ctx)
		}
	})
}

// TestRefreshOneServerLeavesOthersUntouched checks what "the other 99
// untouched" can be seen to mean from outside the host package: after one
// server is re-listed, every other server keeps the very same snapshot and
// catalog entries (pointer identity), the session's next view hands out
// those same entries, and a view with nothing changed is the cached view
// itself. (Whether the session re-evaluated the other servers' verdicts is
// not observable from here: its per-server cache is unexported.)
func TestRefreshOneServerLeavesOthersUntouched(t *testing.T) {
	servers, tools := catalogServers, 10
	if testing.Short() {
		servers = 20
	}
	refreshed := serverName(servers * 42 / 100)
	f, err := newCatalogFixture(servers, tools, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := newSession(f.host)
	defer s.Close()

	before := map[string]*host.ServerSnapshot{}
	for _, snap := range f.host.Servers() {
		before[snap.Name] = snap
	}
	v1 := s.View(ctx)
	if again := s.View(ctx); again != v1 {
		t.Fatal("a view with nothing changed was rebuilt")
	}
	if err := f.host.Refresh(ctx, refreshed); err != nil {
		t.Fatal(err)
	}
	v2 := s.View(ctx)
	if v2 == v1 {
		t.Fatal("the view was not rebuilt after a refresh")
	}
	for _, snap := range f.host.Servers() {
		old := before[snap.Name]
		isRefreshed := snap.Name == refreshed
		if isRefreshed {
			if snap == old || snap.Generation <= old.Generation {
				t.Errorf("%s: not re-listed (generation %d -> %d)", snap.Name, old.Generation, snap.Generation)
			}
		} else if snap != old {
			t.Errorf("%s: snapshot replaced although only %s was refreshed", snap.Name, refreshed)
		}
		got, was := v2.Tools[snap.Name], v1.Tools[snap.Name]
		if len(got) != len(was) || len(got) != tools {
			t.Fatalf("%s: %d tools in the view, %d before, want %d", snap.Name, len(got), len(was), tools)
		}
		for i := range got {
			same := got[i].CatalogTool == was[i].CatalogTool
			switch {
			case isRefreshed && same:
				t.Errorf("%s/%s: catalog entry survived the re-listing", snap.Name, got[i].Tool.Name)
			case !isRefreshed && !same:
				t.Errorf("%s/%s: catalog entry replaced", snap.Name, got[i].Tool.Name)
			}
			if got[i].Status != was[i].Status || got[i].ExposedName != was[i].ExposedName {
				t.Errorf("%s/%s: verdict changed: %s %q -> %s %q", snap.Name, got[i].Tool.Name,
					was[i].Status, was[i].ExposedName, got[i].Status, got[i].ExposedName)
			}
		}
	}
	if len(v2.Model.Tools()) != len(v1.Model.Tools()) {
		t.Errorf("model view has %d tools, %d before", len(v2.Model.Tools()), len(v1.Model.Tools()))
	}
}
