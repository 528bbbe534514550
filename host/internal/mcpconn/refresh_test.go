package mcpconn

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/mcptest"
)

// holdingTransport holds the response of one tools/list, once armed, until
// released; it drops tools/list_changed notifications, so that only the
// test starts listings.
type holdingTransport struct {
	transport.Interface
	armed   atomic.Bool
	held    chan struct{}
	release chan struct{}
}

func (h *holdingTransport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := h.Interface.SendRequest(ctx, req)
	if req.Method == string(mcp.MethodToolsList) && h.armed.CompareAndSwap(true, false) {
		h.held <- struct{}{}
		<-h.release
	}
	return resp, err
}

func (h *holdingTransport) SetNotificationHandler(handler func(mcp.JSONRPCNotification)) {
	h.Interface.SetNotificationHandler(func(n mcp.JSONRPCNotification) {
		if n.Method != mcp.MethodNotificationToolsListChanged {
			handler(n)
		}
	})
}

// TestOlderListingNeverReplacesNewer: two listings overlap (a refresh on
// tools/list_changed and one a caller asked for, say); the one that
// started first, and so may hold older tools, finishes last. The catalog
// keeps the newer listing.
func TestOlderListingNeverReplacesNewer(t *testing.T) {
	srv, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(`[{"name": "old_tool", "inputSchema": {"type": "object"}}]`)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	tr := &holdingTransport{held: make(chan struct{}), release: make(chan struct{})}
	c := New(context.Background(), "srv", Options{Config: &config.Server{}, Transport: func() (transport.Interface, error) {
		tr.Interface = srv.InProcessTransport()
		return tr, nil
	}})
	defer c.Close()
	ctx := context.Background()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	tr.armed.Store(true)
	first := make(chan error, 1)
	go func() { first <- c.Refresh(ctx) }()
	<-tr.held // the first listing has the old tools
	if err := srv.SetTools([]byte(`[{"name": "new_tool", "inputSchema": {"type": "object"}}]`)); err != nil {
		t.Fatal(err)
	}
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Snapshot().Tool("new_tool") == nil {
		t.Fatal("the second listing was not installed")
	}
	close(tr.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if snap := c.Snapshot(); snap.Tool("new_tool") == nil || snap.Tool("old_tool") != nil {
		t.Errorf("the catalog went back to the older listing: %d tools, old_tool listed: %v", len(snap.Tools), snap.Tool("old_tool") != nil)
	}
}

// TestConcurrentConnectsDialOnce: callers that connect at the same time
// share one dial; none starts a second server (or stdio child) whose
// client the first would overwrite and leak.
func TestConcurrentConnectsDialOnce(t *testing.T) {
	srv, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(`[{"name": "a_tool", "inputSchema": {"type": "object"}}]`)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var dials atomic.Int32
	entered, release := make(chan struct{}), make(chan struct{})
	c := New(context.Background(), "srv", Options{Config: &config.Server{}, Transport: func() (transport.Interface, error) {
		if dials.Add(1) == 1 {
			close(entered)
			<-release // hold the first dial while the others ask
		}
		return srv.InProcessTransport(), nil
	}})
	defer c.Close()
	const callers = 8
	errs := make(chan error, callers)
	go func() { errs <- c.Connect(context.Background()) }()
	<-entered
	var started sync.WaitGroup
	for range callers - 1 {
		started.Add(1)
		go func() {
			started.Done()
			errs <- c.Connect(context.Background())
		}()
	}
	started.Wait()
	// Give the other callers the chance to reach the factory: without
	// the shared dial they do, and the count below catches it; with it
	// they wait, whatever the machine's speed.
	time.Sleep(50 * time.Millisecond)
	close(release)
	for range callers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d concurrent connects dialled %d times, want once", callers, n)
	}
}

// A connect that waits for another's dial gives up with its own context.
func TestConnectWaitingForADialHonoursItsContext(t *testing.T) {
	srv, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(`[]`)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	c := New(context.Background(), "srv", Options{Config: &config.Server{}, Transport: func() (transport.Interface, error) {
		once.Do(func() { close(entered); <-release })
		return srv.InProcessTransport(), nil
	}})
	defer c.Close()
	first := make(chan error, 1)
	go func() { first <- c.Connect(context.Background()) }()
	<-entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Connect(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("a waiting connect with a cancelled context: %v", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

// TestConnectReturnsWithTheListingInstalled: a connect that waits for
// another's dial returns only once that dial's listing is installed (and
// announced), so a session starting its turn at that moment sees the
// tools. The client used to be published first: a concurrent connect
// returned in between and its session offered the model no tools.
func TestConnectReturnsWithTheListingInstalled(t *testing.T) {
	srv, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(`[{"name": "a_tool", "inputSchema": {"type": "object"}}]`)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	entered, release := make(chan struct{}), make(chan struct{})
	var announced atomic.Bool
	var once sync.Once
	c := New(context.Background(), "srv", Options{Config: &config.Server{},
		Transport: func() (transport.Interface, error) { return srv.InProcessTransport(), nil },
		OnChange: func(s *ServerSnapshot) {
			if len(s.Tools) == 0 {
				return
			}
			once.Do(func() {
				close(entered)
				<-release // hold the first dial between its listing and its end
				announced.Store(true)
			})
		}})
	defer c.Close()
	first := make(chan error, 1)
	go func() { first <- c.Connect(context.Background()) }()
	<-entered
	second := make(chan bool, 1)
	go func() {
		_ = c.Connect(context.Background())
		second <- announced.Load()
	}()
	select {
	case sawIt := <-second: // returned while the first connect was still installing
		close(release)
		<-first
		if !sawIt {
			t.Fatal("a concurrent Connect returned before the listing was installed and announced")
		}
	case <-time.After(100 * time.Millisecond): // it waits, as it should
		close(release)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		if !<-second {
			t.Fatal("a concurrent Connect returned before the listing was announced")
		}
	}
	if snap := c.Snapshot(); len(snap.Tools) != 1 {
		t.Fatalf("snapshot after connect: %d tools", len(snap.Tools))
	}
}
