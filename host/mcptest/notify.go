package mcptest

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/agenthost/agenthost/host/mcptest/internal/toolset"
	"github.com/agenthost/agenthost/host/mcptest/internal/wire"
)

const (
	methodToolsListChanged = "notifications/tools/list_changed"
	methodSubscriptionsAck = "notifications/subscriptions/acknowledged"
)

// subscriber is a stream that receives notifications/tools/list_changed: a
// legacy stdio connection, a legacy HTTP GET stream, or a modern
// subscriptions/listen stream (then subscriptionID tags every notification).
type subscriber struct {
	send           func(wire.Notification) error
	subscriptionID json.RawMessage
}

func (s *Server) subscribe(sub *subscriber) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subs[sub] = struct{}{}
}

func (s *Server) unsubscribe(sub *subscriber) {
	if sub == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.subs, sub)
}

// broadcastToolsChanged notifies every subscriber synchronously, so a stdio
// client reads the notification before the response of the call that caused
// it. A stream that fails to take it is its owner's problem.
func (s *Server) broadcastToolsChanged() {
	s.mu.Lock()
	subs := make([]*subscriber, 0, len(s.subs))
	for sub := range s.subs {
		subs = append(subs, sub)
	}
	s.mu.Unlock()
	for _, sub := range subs {
		var params map[string]any
		if sub.subscriptionID != nil {
			params = map[string]any{"_meta": map[string]any{wire.MetaSubscriptionID: sub.subscriptionID}}
		}
		_ = sub.send(wire.NewNotification(methodToolsListChanged, params))
	}
}

// switchTools replaces the served tool set with another file; relative paths
// resolve against the directory of the current tools file.
func (s *Server) switchTools(current *toolset.Set, path string) error {
	if !filepath.IsAbs(path) && current.BaseDir != "" {
		path = filepath.Join(current.BaseDir, path)
	}
	next, err := toolset.Load(path)
	if err != nil {
		return fmt.Errorf("switching tool list: %w", err)
	}
	s.mu.Lock()
	next.Generation = s.tools.Generation + 1
	s.tools = next
	s.mu.Unlock()
	return nil
}

// listenRequest is an accepted subscriptions/listen; the transport streams it.
type listenRequest struct {
	id               json.RawMessage
	toolsListChanged bool
	taskIDs          []string
}

func (s *Server) listen(x *exchange) reply {
	var p struct {
		Notifications struct {
			ToolsListChanged bool     `json:"toolsListChanged"`
			TaskIDs          []string `json:"taskIds"`
		} `json:"notifications"`
	}
	if json.Unmarshal(x.msg.Params, &p) != nil {
		return errorReply(wire.Errorf(CodeInvalidParams, "subscriptions/listen params must be an object"))
	}
	if len(p.Notifications.TaskIDs) > 0 && !declaresTasks(x.meta) {
		return errorReply(missingTasksError())
	}
	return reply{listen: &listenRequest{id: x.msg.ID, toolsListChanged: p.Notifications.ToolsListChanged, taskIDs: p.Notifications.TaskIDs}}
}

// runListen acknowledges a subscription and holds it open until the client
// cancels (ctx), abandons the stream, or the server closes or dies. It
// returns the final result, and false when nothing more may be written.
func (s *Server) runListen(x *exchange, l *listenRequest, send func(wire.Notification) error) (map[string]any, bool) {
	allowed := map[string]any{}
	if l.toolsListChanged {
		allowed["toolsListChanged"] = true
	}
	ack := wire.NewNotification(methodSubscriptionsAck, map[string]any{
		"_meta":         map[string]any{wire.MetaSubscriptionID: l.id},
		"notifications": allowed,
	})
	// Subscribe before acknowledging: a client that acts on the ack must
	// not miss a change made right after it.
	sub := &subscriber{send: send, subscriptionID: l.id}
	if l.toolsListChanged {
		s.subscribe(sub)
		defer s.unsubscribe(sub)
	}
	tasks := s.notifyingTasks(l.taskIDs)
	if len(tasks) > 0 {
		ids := make([]string, 0, len(tasks))
		for _, st := range tasks {
			ids = append(ids, st.ID())
			st.Listen(sub, func(state map[string]any) {
				state["_meta"] = map[string]any{wire.MetaSubscriptionID: sub.subscriptionID}
				_ = sub.send(wire.NewNotification("notifications/tasks", state))
			})
			defer st.Unlisten(sub)
		}
		allowed["taskIds"] = ids
	}
	if err := send(ack); err != nil {
		return nil, false
	}
	for _, st := range tasks {
		st.Lock()
		st.Drive()
		st.Unlock()
	}
	if l.toolsListChanged || len(tasks) > 0 {
		select {
		case <-x.ctx.Done():
			return nil, false
		case <-x.abandoned:
			return nil, false
		case <-s.died:
			return nil, false
		case <-s.closed:
		}
	}
	result := map[string]any{"_meta": map[string]any{wire.MetaSubscriptionID: l.id}}
	decorateModern(result, s.serverInfo())
	return result, true
}

// SetTools replaces the served tools (the format of Options.ToolsJSON) and
// tells subscribed clients that the list changed.
func (s *Server) SetTools(toolsJSON []byte) error {
	next, err := toolset.Parse(toolsJSON, "")
	if err != nil {
		return fmt.Errorf("tools JSON: %w", err)
	}
	s.mu.Lock()
	next.Generation = s.tools.Generation + 1
	s.tools = next
	s.mu.Unlock()
	s.broadcastToolsChanged()
	return nil
}
