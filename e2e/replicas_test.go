package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
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

	"github.com/agenthost/agenthost/internal/dbscan"
	"github.com/agenthost/agenthost/internal/pgtest"
)

// replicaModel is an OpenAI-compatible model that answers from the
// request alone, so that any replica asking for any session gets the same
// answer: a user message "order N read|delete" asks for the tool call
// get_order or delete_order with id N; a tool result is answered with the
// text "done N: RESULT".
func replicaModel(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		text := func(i int) string {
			var s string
			_ = json.Unmarshal(req.Messages[i].Content, &s)
			return s
		}
		order, kind := "", ""
		for i := range req.Messages {
			if req.Messages[i].Role == "user" {
				f := strings.Fields(text(i))
				if len(f) == 3 && f[0] == "order" {
					order, kind = f[1], f[2]
				}
			}
		}
		last := req.Messages[len(req.Messages)-1]
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish string) {
			fin := "null"
			if finish != "" {
				fin = `"` + finish + `"`
			}
			fmt.Fprintf(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", delta, fin)
		}
		if last.Role == "tool" {
			msg, _ := json.Marshal("done " + order + ": " + text(len(req.Messages)-1))
			chunk(`{"role":"assistant","content":`+string(msg)+`}`, "")
			chunk(`{}`, "stop")
		} else {
			tool := "shop__get_order"
			if kind == "delete" {
				tool = "shop__delete_order"
			}
			args, _ := json.Marshal(`{"id":"` + order + `"}`)
			chunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_`+order+`","type":"function","function":{"name":"`+tool+`","arguments":`+string(args)+`}}]}`, "")
			chunk(`{}`, "tool_calls")
		}
		fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// replica is one `agenthost serve` process of the cluster, restarted with
// the same config (the same executor identity) after a SIGKILL.
type replica struct {
	name, cfg, record string
	addr              string
	env               []string

	mu   sync.Mutex
	base string
	cmd  *exec.Cmd
	sp   *spawned
	errs *syncBuffer
}

func (r *replica) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(agenthostBin, "--config", r.cfg, "--log-level", "info", "serve", "--listen", r.addr)
	cmd.Env = append(baseEnv(t), r.env...)
	r.mu.Lock()
	if r.errs == nil {
		r.errs = &syncBuffer{}
	}
	errs := r.errs
	r.mu.Unlock()
	found := make(chan string, 1)
	cmd.Stderr = &lineWatcher{out: errs, prefix: "agenthost: serving on ", found: found}
	sp := spawn(t, "agenthost serve "+r.name, cmd, true)
	select {
	case a := <-found:
		r.mu.Lock()
		r.base, r.cmd, r.sp, r.errs = "http://"+a, cmd, sp, errs
		r.mu.Unlock()
	case <-sp.done:
		t.Fatalf("replica %s exited: %s", r.name, errs.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("replica %s did not start: %s", r.name, errs.String())
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (r *replica) kill(t *testing.T) {
	t.Helper()
	r.stop(t, func(cmd *exec.Cmd) { _ = cmd.Process.Kill() })
}

// stop ends the process with signal and waits for it to be gone.
func (r *replica) stop(t *testing.T, signal func(*exec.Cmd)) {
	t.Helper()
	r.mu.Lock()
	cmd, sp := r.cmd, r.sp
	r.base = ""
	r.mu.Unlock()
	signal(cmd)
	select {
	case <-sp.done:
	case <-time.After(time.Minute):
		t.Fatalf("replica %s did not stop", r.name)
	}
}

func (r *replica) url() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.base
}

// rrClient sends every request to the next live replica in turn: no
// routing by session.
type rrClient struct {
	replicas []*replica
	next     atomic.Uint64
	client   *http.Client
}

// pick returns the next live replica's base URL.
func (c *rrClient) pick() string {
	for {
		r := c.replicas[c.next.Add(1)%uint64(len(c.replicas))]
		if u := r.url(); u != "" {
			return u
		}
	}
}

func (c *rrClient) do(t *testing.T, base, method, path, token string, body any, hdr map[string]string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s%s: %v", method, base, path, err)
	}
	return resp
}

func (c *rrClient) json(t *testing.T, method, path, token string, body, out any, want int) {
	t.Helper()
	base := c.pick()
	resp := c.do(t, base, method, path, token, body, nil)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s%s: %d %s", method, base, path, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

type sseEvent struct {
	id   int64
	typ  string
	data string
}

// readSSE reads events until stop says so or the stream ends.
func readSSE(body io.Reader, stop func(sseEvent) bool) []sseEvent {
	var out []sseEvent
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 1<<16), 16<<20)
	var cur sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.typ != "" || cur.data != "" {
				out = append(out, cur)
				if stop(cur) {
					return out
				}
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			cur.id, _ = strconv.ParseInt(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			cur.typ = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		}
	}
	return out
}

// TestServeReplicasShareSessions: three `agenthost serve` replicas on one
// PostgreSQL behind a client that sends every request to the next replica
// in turn. Sessions (a fifth of them waiting for approval) are created,
// run and followed on different replicas; each replica is killed with
// SIGKILL in turn and restarted with its executor identity; every pending
// request is approved from a replica other than the one that listed it.
// Then a replica is killed for good, and a survivor takes over its waiting
// turns once its lease expires. Every turn completes, once: each tool call
// ran exactly once (counted by the MCP test server), with the session's
// sealed value; every event stream, replayed from any replica, ends with
// the turn's answer; every transcript holds its four messages; the audit
// chain verifies; no table holds a session value.
//
// It runs 100 sessions (20 waiting; about 20 s on two cores);
// AGENTHOST_E2E_REPLICA_SESSIONS=N runs N (a fifth of them waiting).
func TestServeReplicasShareSessions(t *testing.T) {
	n := 100
	if v := os.Getenv("AGENTHOST_E2E_REPLICA_SESSIONS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 5 {
			t.Fatalf("AGENTHOST_E2E_REPLICA_SESSIONS=%q: want a number of at least 5", v)
		}
	}
	waiting := n / 5
	const extra = 2 // waiting turns of the replica killed for good
	cluster := pgtest.Start(t)
	dsn := cluster.NewDatabase(t)
	modelURL := replicaModel(t)
	apiToken, bobToken := "e2e-replicas-api", "e2e-replicas-bob"
	hash := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	var keyBytes [32]byte
	_, _ = rand.Read(keyBytes[:])
	key := hex.EncodeToString(keyBytes[:])

	dir := t.TempDir()
	secure := obj{"type": "object", "properties": obj{"token": obj{"type": "string"}}, "required": []string{"token"}}
	tools := writeJSON(t, dir, "tools.json", []obj{
		{"name": "delete_order", "inputSchema": obj{"type": "object", "properties": obj{"id": obj{"type": "string"}}},
			"secureInputSchema": secure, "annotations": rtRisk("delete", "high", "item", "manual", "single"), "x-test": obj{"text": "order deleted"}},
		{"name": "get_order", "inputSchema": obj{"type": "object", "properties": obj{"id": obj{"type": "string"}}},
			"secureInputSchema": secure, "annotations": rtRisk("read", "low", "item", "auto", "none"), "x-test": obj{"text": "order shown"}},
	})
	replicas := make([]*replica, 3)
	for i := range replicas {
		name := fmt.Sprintf("r%d", i)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		record := filepath.Join(dir, name+"-record.jsonl")
		entry := stdioServer(tools, record)
		entry["trustAnnotations"] = true
		cfg := writeConfig(t, obj{
			"llm":        obj{"baseURL": modelURL, "model": "m", "apiKey": "none"},
			"mcpServers": obj{"shop": entry},
			"bindings":   []obj{{"server": "shop", "params": obj{"token": obj{"session": "token"}}}},
			"approvals": obj{
				"store": dsn,
				"rules": []obj{
					{"id": "deletes", "when": obj{"category": []string{"delete"}}, "decide": "ask", "approvers": 1, "timeout": "30m"},
					{"id": "reads", "when": obj{"category": []string{"read"}}, "decide": "allow"},
				},
			},
			"audit": obj{"path": filepath.Join(dir, name+"-audit.jsonl"), "store": dsn},
			"serve": obj{
				"identities": []obj{
					{"name": "backend", "tokenSHA256": hash(apiToken), "roles": []string{"api"}},
					{"name": "bob", "tokenSHA256": hash(bobToken), "roles": []string{"approver"}},
				},
				"replica": obj{"id": name, "leaseTimeout": "3s"},
			},
		})
		replicas[i] = &replica{name: name, cfg: cfg, record: record, addr: addr, env: []string{"AGENTHOST_SESSION_KEY=" + key}}
	}
	for _, r := range replicas {
		r.start(t)
	}
	c := &rrClient{replicas: replicas, client: &http.Client{Timeout: 5 * time.Minute}}
	logs := func() string {
		var b strings.Builder
		for _, r := range replicas {
			r.mu.Lock()
			if r.errs != nil {
				fmt.Fprintf(&b, "\n--- %s ---\n%s", r.name, r.errs.String())
			}
			r.mu.Unlock()
		}
		return b.String()
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("the replicas' logs:" + logs())
		}
	})
	failed := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(format, args...)
	}

	type sess struct {
		id, order, kind, token string
	}
	newSessions := func(from, count int, kind func(i int) string) []sess {
		out := make([]sess, count)
		for k := range out {
			i := from + k
			s := sess{order: strconv.Itoa(i), kind: kind(i), token: fmt.Sprintf("sealed-token-%d-%s", i, key[:8])}
			var info struct {
				ID string `json:"id"`
			}
			c.json(t, "POST", "/v1/sessions", apiToken, obj{"subject": "backend", "values": obj{"token": s.token}}, &info, http.StatusCreated)
			s.id = info.ID
			out[k] = s
		}
		return out
	}
	// startTurn posts the session's turn to base and reads its stream
	// until the turn ends or asks for approval.
	startTurn := func(base string, s sess) []sseEvent {
		resp := c.do(t, base, "POST", "/v1/sessions/"+s.id+"/turns", apiToken, obj{"message": "order " + s.order + " " + s.kind}, nil)
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			failed("POST turn of %s: %d %s", s.id, resp.StatusCode, b)
		}
		return readSSE(resp.Body, func(e sseEvent) bool {
			return e.typ == "session_end" || e.typ == "approval_requested"
		})
	}
	sessions := newSessions(0, n, func(i int) string {
		if i < waiting {
			return "delete"
		}
		return "read"
	})
	var wg sync.WaitGroup
	sem := make(chan struct{}, 6)
	for _, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			evs := startTurn(c.pick(), s)
			if len(evs) == 0 {
				t.Errorf("session %s: the turn's stream ended without events", s.id)
			}
		}()
	}
	wg.Wait()

	type pending struct {
		ID        string `json:"id"`
		SessionID string `json:"sessionId"`
	}
	listPending := func(want int) []pending {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			var list struct {
				Approvals []pending `json:"approvals"`
			}
			c.json(t, "GET", "/v1/approvals", bobToken, nil, &list, http.StatusOK)
			if len(list.Approvals) == want {
				return list.Approvals
			}
			if time.Now().After(deadline) {
				failed("%d approvals pending, want %d", len(list.Approvals), want)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	listPending(waiting)

	// SIGKILL each replica in turn; it restarts with its executor id and
	// takes up the turns it left (or another replica's queue runner does).
	for _, r := range replicas {
		r.kill(t)
		r.start(t)
		listPending(waiting)
	}

	approve := func(list []pending) {
		for i, p := range list {
			// Listed from one replica, voted on another.
			base := replicas[(i+1)%len(replicas)].url()
			if base == "" {
				base = c.pick()
			}
			resp := c.do(t, base, "POST", "/v1/approvals/"+p.ID+"/votes", bobToken, obj{"decision": "allow"}, nil)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				failed("vote on %s: %d %s", p.ID, resp.StatusCode, b)
			}
		}
	}
	approve(listPending(waiting))

	// follow reads a session's latest turn from the start, on whichever
	// replica comes next, until its session_end.
	follow := func(s sess) []sseEvent {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for {
			var info struct {
				Turn *struct {
					ID      string `json:"id"`
					Running bool   `json:"running"`
					Events  string `json:"events"`
				} `json:"turn"`
			}
			c.json(t, "GET", "/v1/sessions/"+s.id, apiToken, nil, &info, http.StatusOK)
			if info.Turn == nil {
				failed("session %s has no turn", s.id)
			}
			resp := c.do(t, c.pick(), "GET", info.Turn.Events, apiToken, nil, map[string]string{"Last-Event-ID": "0"})
			evs := readSSE(resp.Body, func(e sseEvent) bool { return e.typ == "session_end" })
			resp.Body.Close()
			if len(evs) > 0 && evs[len(evs)-1].typ == "session_end" {
				return evs
			}
			if time.Now().After(deadline) {
				failed("session %s: the turn did not end (events %v)", s.id, evs)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	checkDone := func(s sess, evs []sseEvent) {
		t.Helper()
		want := "done " + s.order + ": order shown"
		if s.kind == "delete" {
			want = "done " + s.order + ": order deleted"
		}
		answered, last := false, int64(0)
		for _, e := range evs {
			if e.id <= last {
				t.Errorf("session %s: event ids out of order: %d after %d", s.id, e.id, last)
			}
			last = e.id
			if e.typ == "assistant" && strings.Contains(e.data, want) {
				answered = true
			}
		}
		if !answered {
			t.Errorf("session %s: no answer %q in its events:\n%v", s.id, want, evs)
		}
	}
	for _, s := range sessions {
		checkDone(s, follow(s))
	}

	// A replica stopped with SIGTERM (a deploy) leaves its waiting turn
	// unfinished, not ended; restarted, the turn goes on.
	graceful := newSessions(n, 1, func(int) string { return "delete" })
	startTurn(replicas[0].url(), graceful[0])
	listPending(1)
	replicas[0].stop(t, terminate)
	replicas[0].start(t)
	approve(listPending(1))
	checkDone(graceful[0], follow(graceful[0]))

	// A replica killed for good: a survivor takes its waiting turns over
	// once its lease (3 s) expires.
	victim := replicas[2]
	lost := newSessions(n+1, extra, func(int) string { return "delete" })
	for _, s := range lost {
		startTurn(victim.url(), s)
	}
	listPending(extra)
	victim.kill(t)
	time.Sleep(4 * time.Second)
	approve(listPending(extra))
	for _, s := range lost {
		checkDone(s, follow(s))
	}
	all := append(append(sessions, graceful...), lost...)

	// Each call ran exactly once, with the session's sealed value.
	runs := map[string]int{}
	for _, r := range replicas {
		for _, rec := range withMethod(readRecord(t, r.record), "tools/call") {
			var m struct {
				Params struct {
					Arguments struct {
						ID string `json:"id"`
					} `json:"arguments"`
					Secure struct {
						Token string `json:"token"`
					} `json:"secureArguments"`
				} `json:"params"`
			}
			_ = json.Unmarshal(rec.Message, &m)
			runs[m.Params.Arguments.ID+"/"+m.Params.Secure.Token]++
		}
	}
	for _, s := range all {
		if got := runs[s.order+"/"+s.token]; got != 1 {
			t.Errorf("session %s (order %s, %s): its call ran %d times, want 1", s.id, s.order, s.kind, got)
		}
	}
	if len(runs) != len(all) {
		t.Errorf("the MCP server ran %d distinct calls, want %d: %v", len(runs), len(all), runs)
	}

	// Every transcript is whole; no row holds a session value.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, s := range all {
		var msgs int
		if err := conn.QueryRow(ctx, `SELECT COUNT(*) FROM agenthost_messages WHERE session_id = $1`, s.id).Scan(&msgs); err != nil {
			t.Fatal(err)
		}
		if msgs != 4 {
			t.Errorf("session %s: %d messages stored, want 4 (prompt, call, result, answer)", s.id, msgs)
		}
	}
	dump := dbscan.MustPostgres(t, dsn)
	if strings.Contains(dump, "sealed-token-") {
		t.Errorf("a session value was stored in the clear")
	}

	// The audit chain in the database verifies.
	if res := run(t, nil, "--config", replicas[0].cfg, "audit", "verify"); res.code != 0 {
		t.Errorf("audit verify: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}
