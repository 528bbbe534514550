package serve

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/serve/internal/auth"
	"github.com/agenthost/agenthost/host/serve/internal/connlimit"
	"github.com/agenthost/agenthost/host/serve/internal/eventlog"
	"github.com/agenthost/agenthost/host/serve/internal/sharedstore"
	"github.com/agenthost/agenthost/host/serve/internal/webhook"
	"github.com/agenthost/agenthost/internal/httpredirect"
)

//go:embed openapi.yaml
var openAPIDocument []byte

// OpenAPI returns the API's OpenAPI 3.1 document (served at /openapi.yaml).
func OpenAPI() []byte { return append([]byte(nil), openAPIDocument...) }

// Options configure a Server.
type Options struct {
	// Host runs the sessions. Build it with AuditAlso set to Audit so that
	// the audit routes see its records.
	Host *host.Host
	// Config is the serve section of the config.
	Config config.Serve
	// Audit indexes audit records by session for GET /v1/audit; nil makes
	// an empty one (the audit routes then see nothing).
	Audit *AuditLog
	// Logger receives operator logs (never values: the host's redactor is
	// applied). Nil discards them.
	Logger *slog.Logger
	// HTTPClient sends webhooks and forwards to peers; nil uses a client
	// with the default transport. Either way redirects follow the one
	// policy (internal/httpredirect), whatever its CheckRedirect.
	HTTPClient *http.Client
	// TurnOptions apply to every turn.
	TurnOptions host.TurnOptions
	// Shared, when set, keeps sessions in PostgreSQL so that every replica
	// serves every session (the shared mode; docs/config.md,
	// "serve.replica"). Nil keeps each session in this process's memory.
	Shared *Shared

	// hookBackoff is the first webhook retry delay (tests shorten it).
	hookBackoff time.Duration
}

// Server is the HTTP API. It is safe for concurrent use.
type Server struct {
	host   *host.Host
	cfg    config.Serve
	lim    limits
	auth   *auth.Authenticator
	audit  *AuditLog
	logger *slog.Logger
	// store holds the approval requests served sessions raise: the host's
	// approvals.store when one is configured (shared by every replica),
	// else the memory of this process (queue's store).
	store    approvals.Store
	shared   bool
	queue    *approvals.Queue // nil with a shared store
	approver approvals.Approver
	hooks    *webhook.Notifier
	watch    *broadcaster
	events   *eventlog.Budget
	client   *http.Client
	peers    map[string]string
	turnOp   host.TurnOptions
	// db, in the shared mode, is where sessions and their turns' events
	// are kept; sealer seals session values (nil: never stored); local
	// are the turns running on this replica, by session id.
	db     *sharedstore.Store
	sealer *sharedstore.Sealer
	forget Shared
	local  map[string]*servedTurn

	life   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	sessions map[string]*servedSession
	creators map[string]int // sessions by the name of the identity that created them
	closing  bool

	handler http.Handler
	routes  []route
}

// New builds a Server over opts.Host.
func New(opts Options) (*Server, error) {
	if opts.Host == nil {
		return nil, errors.New("serve: no host")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	audit := opts.Audit
	if audit == nil {
		audit = NewAuditLog(0)
	}
	// Webhooks and peers get redirects within their origin only
	// (docs/config.md, "Redirects"): a delivery's signed payload, a
	// forwarded caller's Authorization, go nowhere else.
	client := httpredirect.Apply(opts.HTTPClient, httpredirect.Policy{})
	authn, err := auth.New(&opts.Config)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	life, cancel := context.WithCancel(context.Background())
	lim := resolveLimits(&opts.Config, opts.Host.Config().Limits.MaxModelResultBytes)
	s := &Server{
		host:     opts.Host,
		cfg:      opts.Config,
		lim:      lim,
		auth:     authn,
		audit:    audit,
		logger:   logger,
		client:   client,
		peers:    opts.Config.Replica.Peers,
		turnOp:   opts.TurnOptions,
		life:     life,
		cancel:   cancel,
		sessions: map[string]*servedSession{},
		creators: map[string]int{},
		watch:    newBroadcaster(lim.maxApprovalStreams),
		events:   eventlog.NewBudget(lim.events),
	}
	if opts.Shared != nil {
		if err := s.openShared(opts.Shared); err != nil {
			cancel()
			return nil, err
		}
	}
	s.hooks = webhook.New(life, &s.wg, opts.Config.Webhooks, client, logger, opts.hookBackoff)
	raised := func(a approvals.Approval) {
		s.watch.publish("pending", a.ID)
		s.notifyHooks(s.approvalView(a, nil))
	}
	if st := opts.Host.ApprovalStore(); st != nil {
		// Every replica raises in, lists from and votes on the one store;
		// a waiting call wakes up whichever replica the vote reached.
		s.store, s.shared = st, true
		// A request taken up again (a durable call resumed after a
		// restart) was announced when it was raised: the page's watchers
		// refresh, the webhooks are not sent twice.
		s.approver = approvals.StoreApprover{Store: st, OnRaised: raised,
			OnResumed: func(a approvals.Approval) { s.watch.publish("pending", a.ID) }}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.watchStore(life, storePoll)
		}()
	} else {
		s.queue = approvals.NewQueue(approvals.QueueOptions{
			OnPending: func(p approvals.Pending) { raised(approvals.Approval{Pending: p, State: approvals.StatePending}) },
			OnSettled: func(id string, _ approvals.Verdict) { s.watch.publish("settled", id) },
		})
		s.store = s.queue.Store()
		s.approver = replicaApprover{q: s.queue, prefix: s.approvalPrefix()}
	}
	s.handler = s.buildRoutes()
	if s.db != nil {
		opts.Host.OnUnattachedTurn(func(id string, rec host.TurnRecord) {
			if !s.isClosing() {
				s.takeUp(id, rec)
			}
		})
	}
	return s, nil
}

// openShared sets up the shared mode.
func (s *Server) openShared(sh *Shared) error {
	switch {
	case sh.Pool == nil:
		return errors.New("serve: the shared mode needs the durable engine's PostgreSQL pool")
	case !s.host.Durable():
		return errors.New("serve: the shared mode needs a host that runs turns durably (host.Options.Durability)")
	case s.host.ApprovalStore() == nil:
		return errors.New("serve: the shared mode needs the shared approvals store (approvals.store)")
	}
	if sh.SealKey != nil {
		sl, err := sharedstore.NewSealer(sh.SealKey)
		if err != nil {
			return err
		}
		s.sealer = sl
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := sharedstore.Open(ctx, sh.Pool)
	if err != nil {
		return err
	}
	s.db, s.local, s.peers = db, map[string]*servedTurn{}, nil
	s.forget = Shared{Forget: sh.Forget, ForgetUnknown: sh.ForgetUnknown}
	return nil
}

// Handler is the server's HTTP handler (every route of openapi.yaml).
func (s *Server) Handler() http.Handler { return s.handler }

// Store is where served sessions' approval requests are kept: the host's
// approvals store when it has one, else this server's memory.
func (s *Server) Store() approvals.Store { return s.store }

// Close ends every running turn and stream, waits for them and for webhook
// deliveries to stop, and closes the served sessions. It does not close the
// Host.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closing = true
	sessions := s.sessions
	s.sessions = map[string]*servedSession{}
	s.creators = map[string]int{}
	s.mu.Unlock()
	s.cancel()
	s.watch.close()
	s.wg.Wait()
	for _, ss := range sessions {
		ss.sess.Close()
	}
	if s.db != nil {
		// Turns running here are not ended: they stop with the durable
		// engine, unfinished, and are taken up again.
		s.db.Close()
	}
	return nil
}

// ListenAndServe serves on cfg.Listen (default 127.0.0.1:8080), with TLS
// (and client certificates) when configured, until ctx ends; then it stops
// accepting, lets requests in flight finish for up to 10 s and closes the
// server. ready, when not nil, is called with the bound address first.
//
// The connections are bounded (in all and per client address, connlimit)
// and so is the time a request may take to arrive, an answer to leave and
// a connection to sit idle (serve.readTimeout, writeTimeout, idleTimeout);
// event streams extend their deadlines as they go (internal/sse).
func (s *Server) ListenAndServe(ctx context.Context, ready func(addr net.Addr)) error {
	addr := s.cfg.Listen
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	tlsConf, err := s.tlsConfig()
	if err != nil {
		return err
	}
	raw, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve.listen: %w", err)
	}
	// Counted below TLS: a handshake that never ends holds a slot only
	// until the handshake timeout.
	limited := connlimit.New(raw, s.lim.maxConns, s.lim.maxConnsPerClient)
	var ln net.Listener = limited
	if tlsConf != nil {
		ln = tls.NewListener(ln, tlsConf)
	}
	hs := &http.Server{Handler: s.handler, ReadHeaderTimeout: min(readHeaderTimeout, s.lim.readTimeout),
		ReadTimeout: s.lim.readTimeout, WriteTimeout: s.lim.writeTimeout, IdleTimeout: s.lim.idleTimeout,
		ConnState: limited.ConnState, ErrorLog: slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn)}
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		_ = s.Close()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	// Streams end first (Close cancels them), then in-flight requests.
	_ = s.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
	}
	<-errc
	return nil
}

func (s *Server) tlsConfig() (*tls.Config, error) {
	t := s.cfg.TLS
	if t.Cert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(t.Cert, t.Key)
	if err != nil {
		return nil, fmt.Errorf("serve.tls: %w", err)
	}
	conf := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if t.ClientCA != "" {
		pem, err := os.ReadFile(t.ClientCA)
		if err != nil {
			return nil, fmt.Errorf("serve.tls.clientCA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("serve.tls.clientCA: %s holds no PEM certificate", t.ClientCA)
		}
		conf.ClientCAs = pool
		// Tokens still work: a certificate is verified when given.
		conf.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return conf, nil
}

// apiError is the body of every error answer.
type apiError struct {
	Error apiErrorBody `json:"error"`
}

type apiErrorBody struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, kind, msg string) {
	writeJSON(w, status, apiError{Error: apiErrorBody{Kind: kind, Message: msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"kind":"internal","message":"cannot encode the answer"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// maxBody bounds request bodies.
const maxBody = 1 << 20

// readJSON decodes the request body into v, strictly; false means an
// error answer was written.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if p := decodeJSON(w, r, v); p != nil {
		p.write(w)
		return false
	}
	return true
}

// problem is an error answer not written yet.
type problem struct {
	status    int
	kind, msg string
}

func (p *problem) write(w http.ResponseWriter) { writeError(w, p.status, p.kind, p.msg) }

// decodeJSON is readJSON's decoding, its error answer returned unwritten.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) *problem {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &problem{http.StatusRequestEntityTooLarge, "invalid_request", "the body is larger than 1 MiB"}
		}
		// The decoder's message names fields and types, never values.
		return &problem{http.StatusBadRequest, "invalid_request", "the body is not the expected JSON: " + jsonProblem(err)}
	}
	if dec.More() {
		return &problem{http.StatusBadRequest, "invalid_request", "the body holds more than one JSON value"}
	}
	return nil
}

// jsonProblem describes a decoding error without quoting the input.
func jsonProblem(err error) string {
	var ute *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &ute):
		return fmt.Sprintf("%s must be %s", ute.Field, ute.Type)
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	case errors.Is(err, io.EOF):
		return "empty body"
	}
	msg := err.Error()
	if len(msg) > 120 {
		msg = msg[:120]
	}
	return msg
}
