package serve

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	"github.com/agenthost/agenthost/host/serve/internal/sse"
)

// Many replicas: every id a replica hands out (sessions, approvals) starts
// with its replica id and "-". A request for an id of another replica is
// forwarded to that replica (serve.replica.peers), so any replica serves
// any request; listing approvals asks every peer. Sessions live in their
// replica's memory (with their session values, which are never written to
// a store); see README "agenthost serve" for why routing was chosen over
// restoring.

// forwardedHeader marks a request one replica forwarded to another, so it
// is never forwarded again (and a list is not fanned out twice).
const forwardedHeader = "Agenthost-Forwarded"

// owner returns the peer URL of the replica that owns id, or "" when this
// replica owns it (or nobody known does).
func (s *Server) owner(id string) string {
	prefix, _, ok := strings.Cut(id, "-")
	if !ok || prefix == s.cfg.Replica.ID {
		return ""
	}
	return s.peers[prefix]
}

// forwardSession forwards r to the replica owning id; false means this
// replica answers it.
func (s *Server) forwardSession(w http.ResponseWriter, r *http.Request, id string) bool {
	peer := s.owner(id)
	if peer == "" || r.Header.Get(forwardedHeader) != "" {
		return false
	}
	target, err := url.Parse(peer)
	if err != nil {
		writeError(w, http.StatusBadGateway, "unavailable", "the replica that owns this id has no valid URL")
		return true
	}
	// The body is read here, whole and bounded, before anything is sent on.
	// Streamed through, it races the HTTP/1 server: when the owner answers
	// (the turn's event stream starts) before the transport has seen the
	// body's end, this server consumes the unread body as the response
	// headers go out, the transport's write fails, and it closes the
	// upstream connection in the middle of the stream.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "invalid_request", "the request body is too large or could not be read")
		return true
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Set(forwardedHeader, s.cfg.Replica.ID)
		},
		Transport:     s.client.Transport,
		FlushInterval: -1, // event streams pass through as they come
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) {
			writeError(w, http.StatusBadGateway, "unavailable", "the replica that owns this id cannot be reached")
		},
	}
	rp.ServeHTTP(sse.StreamThrough(w, r), r)
	return true
}

func (s *Server) routed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.forwardSession(w, r, r.PathValue("sessionId")) {
			h(w, r)
		}
	}
}

func (s *Server) routedApproval(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.forwardSession(w, r, r.PathValue("approvalId")) {
			h(w, r)
		}
	}
}

// peerApprovals lists the pending approvals of every peer; a peer that
// cannot be reached is left out (and logged).
func (s *Server) peerApprovals(r *http.Request) []approvalView {
	var out []approvalView
	for name, peer := range s.peers {
		if name == s.cfg.Replica.ID {
			continue
		}
		req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, strings.TrimRight(peer, "/")+"/v1/approvals", nil)
		if err != nil {
			continue
		}
		req.Header.Set("Authorization", r.Header.Get("Authorization"))
		req.Header.Set(forwardedHeader, s.cfg.Replica.ID)
		resp, err := s.client.Do(req)
		if err != nil {
			s.logger.Warn("serve: a peer replica did not answer the approvals list", "replica", name, "error", err)
			continue
		}
		var list approvalList
		err = json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&list)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil {
			s.logger.Warn("serve: a peer replica answered the approvals list with an error", "replica", name, "status", resp.StatusCode)
			continue
		}
		out = append(out, list.Approvals...)
	}
	return out
}
