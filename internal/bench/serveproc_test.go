package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/pgstore"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/durable"
	"github.com/agenthost/agenthost/host/serve"
)

// serveClientEnv, in a process of the benchmark binary, makes it the HTTP
// client of BenchmarkServeProcess (TestMain runs runServeClient instead
// of the tests): the server's URL.
const serveClientEnv = "AGENTHOST_BENCH_SERVE_CLIENT"

// serveSessionsEnv tells a client process how many sessions to run
// (serveSessions when unset).
const serveSessionsEnv = "AGENTHOST_BENCH_SERVE_SESSIONS"

// BenchmarkServeProcess: serve's own CPU per turn, counted fairly. The
// client (1,000 sessions × 3 turns at once, each turn's SSE stream read to
// session_end) runs in another process, so this process's CPU is the
// server's alone. One op is three rounds, each with its own client
// process:
//
//   - library: the same turns through Session.Turn in this process (the
//     host's work, no HTTP);
//   - serve: through `agenthost serve`'s handler (the same host);
//   - floor: through a minimal net/http handler that authenticates the
//     bearer token, decodes the body and writes the SSE events of a
//     served turn (the bytes serve wrote for one), flushed one by one:
//     the least an HTTP front to the library costs.
//
// Reported: this process's CPU per turn in each round, serve's own
// (serve − library − floor, target ≤ 40 µs) and (library + floor) ÷ serve
// (target ≥ 0.85).
func BenchmarkServeProcess(b *testing.B) {
	f := newServeFixture(b)
	events := servedTurnEvents(b, f)
	floor := newFloorServer(events)
	defer floor.Close()
	var lib, srv, flr time.Duration
	var lat latencies
	b.ResetTimer()
	for range b.N {
		_, cpu := libraryRound(b, f.host, &lat)
		lib += cpu
		srv += clientRound(b, f.ts.URL, serveSessions)
		flr += clientRound(b, floor.URL, serveSessions)
	}
	b.StopTimer()
	turns := float64(b.N * serveSessions * serveTurnsPerSess)
	perTurn := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / turns }
	b.ReportMetric(perTurn(lib), "library-cpu-µs/turn")
	b.ReportMetric(perTurn(srv), "serve-cpu-µs/turn")
	b.ReportMetric(perTurn(flr), "floor-cpu-µs/turn")
	b.ReportMetric(perTurn(srv)-perTurn(lib)-perTurn(flr), "serve-own-µs/turn")
	b.ReportMetric((perTurn(lib)+perTurn(flr))/perTurn(srv), "(library+floor)/serve")
}

// serveDurableSessions is how many sessions (of serveTurnsPerSess turns,
// all at once) a round of BenchmarkServeDurable runs.
const serveDurableSessions = 100

// BenchmarkServeDurable: a served turn's CPU in durable mode against the
// same turn in memory, counted in the server's process alone (the client
// runs in another process, as in BenchmarkServeProcess). One op is three
// rounds of serveDurableSessions sessions × serveTurnsPerSess turns at
// once, through `agenthost serve`'s handler on the same scripted model,
// tool server and events, with the turns
//
//   - memory: in memory;
//   - sqlite: durable on a SQLite file (the engine in this process);
//   - postgres: durable on PostgreSQL in serve's shared mode, as
//     `agenthost serve` runs with a PostgreSQL approvals.store (its
//     session records in the same database). PostgreSQL runs in its own
//     process, as in production: its CPU is not counted.
//
// Two floors run in the same process, in the same rotation, at the same
// concurrency (serveDurableSessions × serveTurnsPerSess turns at once),
// on the same PostgreSQL cluster (a database of their own), so that the durable round is compared
// with what its database work costs at the least, like for like:
//
//   - writeset: the turn's minimal durable write set as bare pgx commits,
//     each one round trip (a batch in one implicit transaction, flushed),
//     one before each external effect: the turn's start with the user's
//     message and its first event; the first model answer with its
//     message, the call's send count and the tool_call event (nothing
//     external happens between them); the call's outcome with its message
//     and event; the second answer, its message, the turn's end and the
//     last event. (memory + writeset) ÷ memory is the ratio a turn
//     checkpointed at its effects alone would reach.
//   - writeset2: the same rows in two commits: nothing outside depends on
//     the start before the model answers, nor on the call's outcome before
//     the next answer, so a turn could fold them into the next commit;
//     two flushed commits (one before the call leaves, one before the
//     client is answered) are the least a turn with a call can make.
//   - roundtrip: one bare round trip (SELECT 1) through a pgx pool, per
//     turn: the CPU this process spends on each round trip, at least.
//
// The rounds' order turns every op. Reported: each round's CPU per turn,
// the durable rounds over the memory one (target ≤ 1.5×), the floors,
// the PostgreSQL transactions per turn (the server's count, the engine's
// background polls included), and, counted once before the rounds on a
// fixture of its own, the round trips of a served turn on PostgreSQL by
// owner (exact: servedRoundTrips).
func BenchmarkServeDurable(b *testing.B) {
	names := []string{"memory", "sqlite", "postgres", "writeset", "writeset2", "roundtrip"}
	urls := map[string]string{
		"memory": newServeFixture(b).ts.URL,
		"sqlite": newServeFixtureOn(b, "sqlite:"+filepath.Join(b.TempDir(), "durable.db")).ts.URL,
	}
	dsn := postgresDSN(b)
	urls["postgres"] = newServeFixtureOn(b, dsn).ts.URL
	floor := newWriteSetFloor(b, postgresDSN(b)) // a database of its own: xacts counts the engine's alone
	wire := servedRoundTrips(b)                  // durablewire_test.go: a fixture and database of their own
	xacts := xactCounter(b, dsn)
	cpu := map[string]time.Duration{}
	var x int64
	b.ResetTimer()
	for i := range b.N {
		for j := range names {
			name := names[(i+j)%len(names)]
			var x0 int64
			if name == "postgres" {
				b.StopTimer()
				x0 = xacts()
				b.StartTimer()
			}
			switch name {
			case "writeset":
				cpu[name] += floor.round(b, serveDurableSessions, floor.writeSet)
			case "writeset2":
				cpu[name] += floor.round(b, serveDurableSessions, floor.writeSetFolded)
			case "roundtrip":
				cpu[name] += floor.round(b, serveDurableSessions, floor.roundTrip)
			default:
				cpu[name] += clientRound(b, urls[name], serveDurableSessions)
			}
			if name == "postgres" {
				b.StopTimer()
				x += xacts() - x0
				b.StartTimer()
			}
		}
	}
	b.StopTimer()
	turns := float64(b.N * serveDurableSessions * serveTurnsPerSess)
	perTurn := func(name string) float64 { return float64(cpu[name].Nanoseconds()) / 1e3 / turns }
	for _, name := range names {
		b.ReportMetric(perTurn(name), name+"-cpu-µs/turn")
	}
	b.ReportMetric(perTurn("sqlite")/perTurn("memory"), "sqlite/memory")
	b.ReportMetric(perTurn("postgres")/perTurn("memory"), "postgres/memory")
	b.ReportMetric((perTurn("memory")+perTurn("writeset"))/perTurn("memory"), "floor/memory")
	b.ReportMetric((perTurn("memory")+perTurn("writeset2"))/perTurn("memory"), "floor2/memory")
	b.ReportMetric(float64(x)/turns, "postgres-xacts/turn")
	for _, owner := range []string{"total", "engine", "adapter", "serve"} {
		b.ReportMetric(wire[owner], owner+"-roundtrips/turn")
	}
}

// writeSetFloor runs BenchmarkServeDurable's floors on their own tables,
// through a pgx pool configured as the engine's (the DSN's).
type writeSetFloor struct {
	pool *pgxpool.Pool
	n    atomic.Int64
}

func newWriteSetFloor(tb testing.TB, dsn string) *writeSetFloor {
	tb.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	for _, q := range []string{
		`CREATE TABLE floor_turns (turn_id TEXT PRIMARY KEY, input TEXT NOT NULL, done BOOLEAN NOT NULL DEFAULT false)`,
		`CREATE TABLE floor_steps (turn_id TEXT NOT NULL, step INT NOT NULL, output TEXT NOT NULL, PRIMARY KEY (turn_id, step))`,
		`CREATE TABLE floor_messages (turn_id TEXT NOT NULL, seq INT NOT NULL, message TEXT NOT NULL, PRIMARY KEY (turn_id, seq))`,
		`CREATE TABLE floor_sends (call_key TEXT PRIMARY KEY, sends BIGINT NOT NULL)`,
		`CREATE TABLE floor_events (turn_id TEXT NOT NULL, seq INT NOT NULL, frame BYTEA NOT NULL, PRIMARY KEY (turn_id, seq))`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			tb.Fatal(err)
		}
	}
	return &writeSetFloor{pool: pool}
}

// round runs sessions × serveTurnsPerSess turns of fn at once and returns
// this process's CPU.
func (f *writeSetFloor) round(tb testing.TB, sessions int, fn func(ctx context.Context, turn string) error) time.Duration {
	tb.Helper()
	ctx := context.Background()
	var failed atomic.Value
	var wg sync.WaitGroup
	cpu0 := cpuTime()
	for range sessions {
		wg.Go(func() {
			for range serveTurnsPerSess {
				if err := fn(ctx, fmt.Sprintf("floor-%d", f.n.Add(1))); err != nil {
					failed.CompareAndSwap(nil, err)
				}
			}
		})
	}
	wg.Wait()
	cpu := cpuTime() - cpu0
	if err, _ := failed.Load().(error); err != nil {
		tb.Fatal(err)
	}
	return cpu
}

// writeSet commits a turn's minimal durable write set: four batches, each
// one round trip and one flushed transaction.
func (f *writeSetFloor) writeSet(ctx context.Context, turn string) error {
	return f.commitWriteSet(ctx, turn, false)
}

// writeSetFolded commits the same rows in two batches: the start with the
// first answer, the call's outcome with the second.
func (f *writeSetFloor) writeSetFolded(ctx context.Context, turn string) error {
	return f.commitWriteSet(ctx, turn, true)
}

func (f *writeSetFloor) commitWriteSet(ctx context.Context, turn string, fold bool) error {
	frame := func(seq int, typ string) []byte {
		return fmt.Appendf(nil, "id: %d\nevent: %s\ndata: {\"type\":%q,\"sessionId\":\"ses_0123456789abcdef01234567\"}\n\n", seq, typ, typ)
	}
	step := `INSERT INTO floor_steps (turn_id, step, output) VALUES ($1, $2, $3)`
	msg := `INSERT INTO floor_messages (turn_id, seq, message) VALUES ($1, $2, $3)`
	event := `INSERT INTO floor_events (turn_id, seq, frame) VALUES ($1, $2, $3)`
	batches := []func(b *pgx.Batch){
		func(b *pgx.Batch) {
			b.Queue(`INSERT INTO floor_turns (turn_id, input) VALUES ($1, $2)`, turn, `{"sessionId":"ses_0123456789abcdef01234567","subject":"bench","trustLevel":1,"prompt":"look it up"}`)
			b.Queue(msg, turn, 0, `{"role":"user","content":"look it up"}`)
			b.Queue(event, turn, 1, frame(1, "session_start"))
		},
		func(b *pgx.Batch) {
			b.Queue(step, turn, 0, `{"message":{"role":"assistant","toolCalls":[{"id":"c1","name":"db__lookup","arguments":"{\"q\":\"x\"}"}]},"usage":{"totalTokens":1}}`)
			b.Queue(msg, turn, 1, `{"role":"assistant","toolCalls":[{"id":"c1","name":"db__lookup","arguments":"{\"q\":\"x\"}"}]}`)
			b.Queue(`INSERT INTO floor_sends (call_key, sends) VALUES ($1, 1)`, turn+"/c1")
			b.Queue(event, turn, 2, frame(2, "tool_call"))
		},
		func(b *pgx.Batch) {
			b.Queue(step, turn, 1, `{"text":"found t=1796195354835873104"}`)
			b.Queue(msg, turn, 2, `{"role":"tool","content":"found t=1796195354835873104","toolCallId":"c1"}`)
			b.Queue(event, turn, 3, frame(3, "tool_result"))
		},
		func(b *pgx.Batch) {
			b.Queue(step, turn, 2, `{"message":{"role":"assistant","content":"answer t=1796195354838169434"},"usage":{"totalTokens":1}}`)
			b.Queue(msg, turn, 3, `{"role":"assistant","content":"answer t=1796195354838169434"}`)
			b.Queue(`UPDATE floor_turns SET done = true WHERE turn_id = $1`, turn)
			b.Queue(event, turn, 4, frame(4, "session_end"))
		},
	}
	per := 1
	if fold {
		per = 2
	}
	for i := 0; i < len(batches); i += per {
		b := &pgx.Batch{}
		for _, fill := range batches[i : i+per] {
			fill(b)
		}
		if err := f.pool.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
	}
	return nil
}

// roundTrip is one bare round trip.
func (f *writeSetFloor) roundTrip(ctx context.Context, _ string) error {
	_, err := f.pool.Exec(ctx, `SELECT 1`)
	return err
}

// durableServe makes opts' host run its turns durably on dsn and returns
// serve's shared mode for PostgreSQL (nil for SQLite): the engine, and on
// PostgreSQL the approvals store in the same database, closed with tb
// after the host.
func durableServe(tb testing.TB, dsn string, opts *host.Options) *serve.Shared {
	tb.Helper()
	ctx := context.Background()
	e, err := durable.Open(ctx, dsn, durable.Options{ExecutorID: "bench"})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = e.Close() })
	opts.Durability = e
	if !strings.HasPrefix(dsn, "postgres") {
		return nil
	}
	store, err := pgstore.Open(ctx, dsn, pgstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = store.Close() })
	opts.ApprovalStore, opts.Approver = store, approvals.StoreApprover{Store: store}
	return &serve.Shared{Pool: e.Pool(), Forget: e.DeleteSession, ForgetUnknown: durable.ErrUnknownSession}
}

// servedTurnEvents is the body serve streams for one turn of the fixture.
func servedTurnEvents(tb testing.TB, f *serveFixture) []byte {
	tb.Helper()
	id, err := f.createSession()
	if err != nil {
		tb.Fatal(err)
	}
	resp, err := f.post("/v1/sessions/"+id+"/turns", map[string]any{"message": "look it up"})
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"reason":"done"`)) {
		tb.Fatalf("a served turn: %d %v: %s", resp.StatusCode, err, body)
	}
	f.deleteSession(id)
	return body
}

// newFloorServer serves the API's two requests the client makes: it
// authenticates each (the token's SHA-256 against the identity's, as
// serve compares them), decodes the body, and answers a session's
// creation with an id and a turn with events, flushed event by event.
func newFloorServer(events []byte) *httptest.Server {
	want := sha256.Sum256([]byte(serveToken))
	chunks := bytes.SplitAfter(events, []byte("\n\n"))
	var ids atomic.Int64
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		got := sha256.Sum256([]byte(token))
		if !ok || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if r.URL.Path == "/v1/sessions" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"id":"floor-%d"}`, ids.Add(1))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		fl := w.(http.Flusher)
		for _, c := range chunks {
			_, _ = w.Write(c)
			fl.Flush()
		}
	}))
}

// clientRound starts a client process against url, lets it create its
// sessions, and returns this process's CPU from the moment the client
// starts its turns until they have all ended.
func clientRound(tb testing.TB, url string, sessions int) time.Duration {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serveClientEnv+"="+url, serveSessionsEnv+"="+strconv.Itoa(sessions))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	expect := func(want string) string {
		if !lines.Scan() || !strings.HasPrefix(lines.Text(), want) {
			_ = cmd.Process.Kill()
			tb.Fatalf("the client process said %q, want %q (%v)", lines.Text(), want, lines.Err())
		}
		return lines.Text()
	}
	expect("ready")
	cpu0 := cpuTime()
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		tb.Fatal(err)
	}
	done := expect("done")
	cpu := cpuTime() - cpu0
	expect("closed") // its sessions deleted, before the next round
	_ = stdin.Close()
	if done != "done 0" {
		tb.Fatalf("the client process: %s", done)
	}
	return cpu
}

// runServeClient is the client process: it creates the sessions, says
// "ready", waits for "go", runs every session's turns at once and says
// "done N" (N turns failed, then the first error).
func runServeClient(url string) int {
	sessions := serveSessions
	if n, err := strconv.Atoi(os.Getenv(serveSessionsEnv)); err == nil && n > 0 {
		sessions = n
	}
	tr := &http.Transport{MaxIdleConns: 2 * sessions, MaxIdleConnsPerHost: 2 * sessions, IdleConnTimeout: time.Minute}
	c := &apiClient{url: url, http: &http.Client{Transport: tr}}
	ids := make([]string, sessions)
	for i := range ids {
		id, err := c.createSession()
		if err != nil {
			fmt.Fprintln(os.Stderr, "serve client:", err)
			return 1
		}
		ids[i] = id
	}
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "go" {
		return 1
	}
	var failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			var ages []time.Duration
			for range serveTurnsPerSess {
				if ok, err := c.turn(id, &ages); !ok {
					failed.Add(1)
					if err != nil {
						firstErr.CompareAndSwap(nil, err)
					}
				}
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		fmt.Printf("done %d %v\n", n, firstErr.Load())
	} else {
		fmt.Println("done 0")
	}
	for _, id := range ids {
		c.deleteSession(id)
	}
	fmt.Println("closed")
	return 0
}

// deleteSession deletes a session (the floor server answers anything).
func (f *apiClient) deleteSession(id string) {
	req, _ := http.NewRequest("DELETE", f.url+"/v1/sessions/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+serveToken)
	if resp, err := f.http.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
