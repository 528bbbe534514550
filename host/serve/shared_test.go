package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/durable"
	"github.com/agenthost/agenthost/internal/dbscan"
	"github.com/agenthost/agenthost/internal/pgtest"
)

// sharedReplica opens a fixture in the shared mode on dsn, as replica id,
// sealing session values with key (nil: none).
func sharedReplica(t *testing.T, dsn, id string, key []byte, mod func(*config.Serve)) *fixture {
	t.Helper()
	return sharedReplicaWith(t, dsn, id, key, mod, nil)
}

// sharedReplicaWith is sharedReplica whose host runs turns on wrap(its
// engine) (nil: the engine itself).
func sharedReplicaWith(t *testing.T, dsn, id string, key []byte, mod func(*config.Serve), wrap func(*durable.Engine) host.Durability) *fixture {
	t.Helper()
	sh := &sharedFixture{open: func(t testing.TB) (host.Durability, *Shared, func()) {
		e, err := durable.Open(context.Background(), dsn, durable.Options{ExecutorID: id, ShutdownTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var d host.Durability = e
		if wrap != nil {
			d = wrap(e)
		}
		return d, &Shared{Pool: e.Pool(), SealKey: key, Forget: e.DeleteSession, ForgetUnknown: durable.ErrUnknownSession}, func() { _ = e.Close() }
	}}
	return newFixtureShared(t, func(c *config.Serve) {
		c.Replica.ID = id
		c.Identities = append(c.Identities, config.Identity{Name: "mallory", TokenSHA256: hashHex(malloryToken), Roles: []string{config.RoleAPI}})
		if mod != nil {
			mod(c)
		}
	}, func(c *config.Config) { c.Approvals.Store = dsn }, sh)
}

const malloryToken = "mallory-token-for-tests"

var testSealKey = bytes.Repeat([]byte{7}, 32)

// postTurn starts a turn on f with body and reads its stream to the end.
func (f *fixture) postTurnBody(t *testing.T, sessionID string, body map[string]any) (int, []parsedEvent, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", f.ts.URL+"/v1/sessions/"+sessionID+"/turns", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+apiToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e apiError
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, nil, e.Error.Kind
	}
	return resp.StatusCode, mustSSE(t, resp.Body), resp.Header.Get("Agenthost-Turn-Id")
}

// events reads the turn's events on f after Last-Event-ID last.
func (f *fixture) events(t *testing.T, sessionID, turnID, last string) []parsedEvent {
	t.Helper()
	req, _ := http.NewRequest("GET", f.ts.URL+eventsPath(sessionID, turnID), nil)
	req.Header.Set("Authorization", "Bearer "+apiToken)
	req.Header.Set("Last-Event-ID", last)
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("events: %d", resp.StatusCode)
	}
	return mustSSE(t, resp.Body)
}

// TestSharedSessionOnAnyReplica: a session created on one replica is read,
// run and followed on the others, its owner's alone; its values, sealed,
// reach the server from a replica that never saw them, and no row holds
// them; the per-identity bound counts the sessions of every replica.
func TestSharedSessionOnAnyReplica(t *testing.T) {
	dsn := pgtest.Start(t).NewDatabase(t)
	limit := func(c *config.Serve) { c.MaxSessionsPerIdentity = 2 }
	a := sharedReplica(t, dsn, "a", testSealKey, limit)
	b := sharedReplica(t, dsn, "b", testSealKey, limit)
	const canary = "sealed-canary-5b1e"
	s := a.createSession(map[string]string{"token": canary})

	if status, body, _ := b.do("GET", "/v1/sessions/"+s.ID, apiToken, nil); status != http.StatusOK || !strings.Contains(string(body), `"valueNames":["token"]`) {
		t.Fatalf("replica b: %d %s", status, body)
	}
	for _, path := range []string{"/v1/sessions/" + s.ID, "/v1/sessions/" + s.ID + "/tools", "/v1/audit?sessionId=" + s.ID} {
		if status, _, _ := b.do("GET", path, malloryToken, nil); status != http.StatusNotFound {
			t.Errorf("another owner's GET %s on replica b: %d, want 404", path, status)
		}
	}
	status, evs, turnID := b.postTurnBody(t, s.ID, map[string]any{"message": `call db__lookup {"q":"x"}`})
	if status != http.StatusOK {
		t.Fatalf("turn on b: %d %s", status, turnID)
	}
	if end := decodeEvents(t, evs)[len(evs)-1]; end.Result != "done: lookup ran" {
		t.Fatalf("the turn ended with %+v", end)
	}
	if !strings.Contains(b.calls.String(), "lookup \""+canary+"\"") {
		t.Errorf("the server did not get the sealed value from replica b: %q", b.calls.String())
	}
	// Replayed from the other replica, after the second event.
	replay := a.events(t, s.ID, turnID, "2")
	if len(replay) != len(evs)-2 || replay[0].id != 3 || replay[len(replay)-1].data != evs[len(evs)-1].data {
		t.Errorf("replica a replays %d events from %d, want the last %d of b's", len(replay), replay[0].id, len(evs)-2)
	}
	var info sessionInfo
	_, body, _ := a.do("GET", "/v1/sessions/"+s.ID, apiToken, nil)
	if err := json.Unmarshal(body, &info); err != nil || info.Turn == nil || info.Turn.ID != turnID || info.Turn.Running {
		t.Errorf("replica a shows the turn as %s", body)
	}

	b.createSession(nil)
	if status, body, _ := a.do("POST", "/v1/sessions", apiToken, map[string]any{"subject": "carol"}); status != http.StatusTooManyRequests {
		t.Errorf("a third session of the identity, on the other replica: %d %s, want 429", status, body)
	}
	if status, _, _ := a.do("DELETE", "/v1/sessions/"+s.ID, malloryToken, nil); status != http.StatusNotFound {
		t.Errorf("another owner's DELETE: %d, want 404", status)
	}
	if status, _, _ := b.do("DELETE", "/v1/sessions/"+s.ID, apiToken, nil); status != http.StatusNoContent {
		t.Errorf("DELETE on b: %d", status)
	}
	if status, _, _ := a.do("GET", "/v1/sessions/"+s.ID, apiToken, nil); status != http.StatusNotFound {
		t.Errorf("a deleted session on a: %d, want 404", status)
	}
	if rows := dbscan.MustPostgres(t, dsn); strings.Contains(rows, s.ID) {
		t.Errorf("a row still names the deleted session:\n%s", rows)
	}
	if rows := dbscan.MustPostgres(t, dsn); strings.Contains(rows, canary) {
		t.Error("a row holds the session value")
	}
}

// TestSharedValuesWithoutKey: without a sealing key no replica keeps a
// session's values, so a turn must carry them: without them it is
// refused (409 values_required), with other names too (400), and with
// them it runs with them.
func TestSharedValuesWithoutKey(t *testing.T) {
	dsn := pgtest.Start(t).NewDatabase(t)
	a := sharedReplica(t, dsn, "a", nil, nil)
	b := sharedReplica(t, dsn, "b", nil, nil)
	s := a.createSession(map[string]string{"token": "unsealed-canary"})
	msg := `call db__lookup {"q":"x"}`
	if status, _, kind := b.postTurnBody(t, s.ID, map[string]any{"message": msg}); status != http.StatusConflict || kind != "values_required" {
		t.Errorf("a turn without the values: %d %s, want 409 values_required", status, kind)
	}
	if status, _, _ := b.postTurnBody(t, s.ID, map[string]any{"message": msg, "values": map[string]string{"other": "x"}}); status != http.StatusBadRequest {
		t.Errorf("a turn with other values: %d, want 400", status)
	}
	status, evs, _ := b.postTurnBody(t, s.ID, map[string]any{"message": msg, "values": map[string]string{"token": "given-again"}})
	if status != http.StatusOK || decodeEvents(t, evs)[len(evs)-1].Result != "done: lookup ran" {
		t.Fatalf("a turn with the values: %d", status)
	}
	if !strings.Contains(b.calls.String(), `lookup "given-again"`) {
		t.Errorf("the server got %q", b.calls.String())
	}
	if rows := dbscan.MustPostgres(t, dsn); strings.Contains(rows, "unsealed-canary") || strings.Contains(rows, "given-again") {
		t.Error("a row holds a session value")
	}
	// The memory mode refuses values in a turn: they are given once.
	m := newFixture(t, nil)
	ms := m.createSession(map[string]string{"token": "t"})
	if status, _, _ := m.postTurnBody(t, ms.ID, map[string]any{"message": msg, "values": map[string]string{"token": "t"}}); status != http.StatusBadRequest {
		t.Errorf("values in a memory-mode turn: %d, want 400", status)
	}
}

// TestSharedTurnAcrossReplicas: while a session's turn waits for approval
// on one replica, another refuses a second turn (409); the approval voted
// on the other replica lets the turn finish, and a stream opened there
// follows it live to its end.
func TestSharedTurnAcrossReplicas(t *testing.T) {
	dsn := pgtest.Start(t).NewDatabase(t)
	a := sharedReplica(t, dsn, "a", testSealKey, nil)
	b := sharedReplica(t, dsn, "b", testSealKey, nil)
	s := a.createSession(map[string]string{"token": "t"})
	resp := a.startTurn(s.ID, `call db__delete_rows {"where":"id = 1"}`)
	defer resp.Body.Close()
	turnID := resp.Header.Get("Agenthost-Turn-Id")
	p := a.waitPending()
	if status, _, kind := b.postTurnBody(t, s.ID, map[string]any{"message": "hello"}); status != http.StatusConflict || kind != "turn_running" {
		t.Errorf("a second turn on b: %d %s, want 409 turn_running", status, kind)
	}
	followed := make(chan []parsedEvent, 1)
	go func() { followed <- b.events(t, s.ID, turnID, "0") }()
	if status, body, _ := b.do("POST", "/v1/approvals/"+p.ID+"/votes", aliceToken, map[string]any{"decision": "allow"}); status != http.StatusOK {
		t.Fatalf("vote on b: %d %s", status, body)
	}
	own := mustSSE(t, resp.Body)
	other := <-followed
	if len(other) != len(own) || other[len(other)-1].data != own[len(own)-1].data {
		t.Errorf("b followed %d events, a streamed %d", len(other), len(own))
	}
	if end := decodeEvents(t, own)[len(own)-1]; end.Result != "done: delete_rows ran" {
		t.Errorf("the turn ended with %+v", end)
	}
}

// TestSharedStaleTurn: a record that says a turn runs while the engine
// holds no unfinished turn of the session (its replica stopped between
// writing the one and starting the other) does not block the session: the
// next turn runs.
func TestSharedStaleTurn(t *testing.T) {
	dsn := pgtest.Start(t).NewDatabase(t)
	a := sharedReplica(t, dsn, "a", testSealKey, nil)
	s := a.createSession(map[string]string{"token": "t"})
	if err := a.srv.db.StartTurn(context.Background(), s.ID, "turn_gone", "backend"); err != nil {
		t.Fatal(err)
	}
	status, evs, _ := a.postTurnBody(t, s.ID, map[string]any{"message": "hello"})
	if status != http.StatusOK || decodeEvents(t, evs)[len(evs)-1].Result != "hello" {
		t.Fatalf("the next turn: %d", status)
	}
}
