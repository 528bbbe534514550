package mcptest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agenthost/agenthost/host/mcptest/internal/toolset"
	"github.com/agenthost/agenthost/host/mcptest/internal/wire"
)

type callParams struct {
	Name            string                     `json:"name"`
	Arguments       json.RawMessage            `json:"arguments"`
	SecureArguments json.RawMessage            `json:"secureArguments"`
	InputResponses  map[string]json.RawMessage `json:"inputResponses"`
	RequestState    string                     `json:"requestState"`
}

// callTool resolves and validates a tools/call, then plays the tool's x-test
// behaviour. Validation comes first, as a real server validates before it
// executes; behaviours run in the order sleep, die, hang, input rounds,
// list change, error, result.
func (s *Server) callTool(x *exchange, negotiatedHere bool) reply {
	var p callParams
	if err := json.Unmarshal(x.msg.Params, &p); err != nil {
		return reply{err: wire.Errorf(CodeInvalidParams, "invalid tools/call params: %v", err), toolError: true}
	}
	if p.Name == "" {
		return reply{err: wire.Errorf(CodeInvalidParams, "missing tool name"), toolError: true}
	}
	ts := s.currentTools()
	t := ts.Find(p.Name)
	if t == nil {
		return reply{err: s.unknownToolError(p.Name), toolError: true}
	}
	args, rpcErr := wire.DecodeObject(p.Arguments, "arguments")
	if rpcErr != nil {
		return reply{err: rpcErr, toolError: true}
	}
	secureArgs, rpcErr := wire.DecodeObject(p.SecureArguments, "secureArguments")
	if rpcErr != nil {
		return reply{err: rpcErr, toolError: true}
	}
	if t.Secure != nil && s.opts.Toolbox {
		if rep, done := toolboxCall(x, t, negotiatedHere, args, secureArgs, s.opts.Extensions); done {
			return rep
		}
	} else if t.Secure != nil {
		if !negotiatedHere {
			return reply{err: toolset.MissingCapability(s.opts.Extensions), toolError: true}
		}
		if err := toolset.ValidateCall(t.Secure, args, secureArgs); err != nil {
			return reply{err: err, toolError: true}
		}
	}
	if x.modern && x.header != nil {
		if err := toolset.ValidateParamHeaders(t, x.header, args, secureArgs); err != nil {
			return errorReply(err)
		}
	}

	b := t.Test
	if toolset.Sleep(b) > 0 {
		parts := max(len(b.Progress), 1)
		token := progressToken(x.msg.Params)
		for i := range parts {
			if i < len(b.Progress) && token != nil && x.send != nil {
				_ = x.send(wire.NewNotification(methodProgress, progressParams(token, b.Progress[i])))
			}
			timer := time.NewTimer(toolset.Sleep(b) / time.Duration(parts))
			select {
			case <-timer.C:
			case <-x.ctx.Done():
				timer.Stop()
				return reply{silent: true}
			case <-s.died:
				timer.Stop()
				return reply{silent: true}
			}
		}
	}
	if b.Die {
		s.die()
		return reply{silent: true}
	}
	if b.Hang {
		select {
		case <-x.ctx.Done():
		case <-x.abandoned:
		case <-s.closed:
		case <-s.died:
		}
		return reply{silent: true}
	}
	if b.InputRequired > 0 {
		if rep, pending := s.inputRound(t, p, secureArgs); pending {
			return rep
		}
	}
	if b.Task != nil {
		return s.createTask(x, t, args, secureArgs)
	}
	var before []wire.Notification
	if b.ListChanged != "" {
		if err := s.switchTools(ts, b.ListChanged); err != nil {
			return errorReply(wire.Errorf(CodeInternalError, "%v", err))
		}
		s.broadcastToolsChanged()
		if x.transport == "http" && !x.modern && x.sess != nil && x.sess.openGetStreams() == 0 {
			before = append(before, wire.NewNotification(methodToolsListChanged, nil))
		}
	}
	if b.Garbage != "" {
		return reply{garbage: []byte(b.Garbage)}
	}
	if b.ErrorCode != 0 {
		return reply{err: behaviourError(b), before: before}
	}
	if b.Probe != "" {
		return probeReply(x.ctx, b, args, before)
	}
	if s.opts.Handler != nil {
		text, isError := s.opts.Handler(x.ctx, t.Name, args, secureArgs)
		result := map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}
		if isError {
			result["isError"] = true
		}
		return reply{result: result, before: before}
	}
	return reply{result: toolResult(t, args, secureArgs), before: before}
}

// mayBlock reports whether a request can take long: subscriptions/listen, or
// a tools/call of a tool that sleeps or hangs.
func (s *Server) mayBlock(msg *wire.Message) bool {
	switch msg.Method {
	case "subscriptions/listen", "tasks/result":
		return true // tasks/result may ask the client (2025-11-25 tasks)
	case "tools/call":
		var p struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		t := s.currentTools().Find(p.Name)
		return t != nil && (toolset.Sleep(t.Test) > 0 || t.Test.Hang)
	}
	return false
}

func (s *session) openGetStreams() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.getStreams
}

func (s *Server) unknownToolError(name string) *RPCError {
	if s.opts.UnknownToolCode == CodeInvalidParams {
		return wire.Errorf(CodeInvalidParams, "invalid tool name: tool with name %q does not exist", name)
	}
	return wire.Errorf(CodeMethodNotFound, "Tool not found")
}

func behaviourError(b Behaviour) *RPCError {
	msg := b.ErrorMessage
	if msg == "" {
		switch b.ErrorCode {
		case CodeMissingCapability:
			msg = "Missing required client capability: " + SecureParamsExtension
		case CodeInvalidParams:
			msg = "Invalid params"
		default:
			msg = "Internal error"
		}
	}
	err := &RPCError{Code: b.ErrorCode, Message: msg, Data: b.ErrorData}
	if b.ErrorCode == CodeMissingCapability && len(b.ErrorData) == 0 {
		err = toolset.MissingCapability(nil)
		err.Message = msg
	}
	return err
}

// toolResult builds the CallToolResult. The default text names the secure
// arguments but never carries their values unless echoSecure asks for it.
func toolResult(t *toolset.Tool, args, secureArgs map[string]json.RawMessage) map[string]any {
	b := t.Test
	result := map[string]any{}
	if len(b.Content) > 0 {
		result["content"] = b.Content
	} else {
		var text string
		if b.Text != nil {
			text = *b.Text
			if b.EchoSecure {
				echo, _ := json.Marshal(secureArgs)
				text += "\nsecureArguments: " + string(echo)
			}
		} else {
			summary := map[string]any{
				"tool":                t.Name,
				"arguments":           args,
				"secureArgumentNames": wire.SortedKeys(secureArgs),
			}
			if b.EchoSecure {
				summary["secureArguments"] = secureArgs
			}
			encoded, _ := json.Marshal(summary)
			text = string(encoded)
		}
		result["content"] = []any{map[string]any{"type": "text", "text": text}}
	}
	if len(b.Structured) > 0 {
		result["structuredContent"] = b.Structured
	}
	if b.IsError {
		result["isError"] = true
	}
	if len(b.Meta) > 0 {
		// A map, so that the modern era's serverInfo joins it.
		var meta map[string]any
		if json.Unmarshal(b.Meta, &meta) == nil {
			result["_meta"] = meta
		}
	}
	return result
}

// Input rounds. requestState = base64url(payload) "." base64url(MAC): the
// payload names the tool, the round and a MAC of the secure arguments, so the
// server stays stateless yet notices a retry that dropped or changed them.
type roundState struct {
	Tool   string `json:"t"`
	Round  int    `json:"r"`
	Secure string `json:"s"`
}

func (s *Server) mac(parts ...[]byte) []byte {
	h := hmac.New(sha256.New, s.stateKey)
	for _, p := range parts {
		fmt.Fprintf(h, "%d:", len(p))
		h.Write(p)
	}
	return h.Sum(nil)
}

func (s *Server) secureDigest(secureArgs map[string]json.RawMessage) string {
	encoded, _ := json.Marshal(secureArgs)
	return base64.RawURLEncoding.EncodeToString(s.mac([]byte("secure"), wire.Canonical(encoded)))
}

func (s *Server) sealState(st roundState) string {
	payload, _ := json.Marshal(st)
	return base64.RawURLEncoding.EncodeToString(payload) + "." +
		base64.RawURLEncoding.EncodeToString(s.mac([]byte("state"), payload))
}

func (s *Server) openState(state string) (roundState, error) {
	var st roundState
	payloadPart, macPart, ok := strings.Cut(state, ".")
	payload, err1 := base64.RawURLEncoding.DecodeString(payloadPart)
	mac, err2 := base64.RawURLEncoding.DecodeString(macPart)
	if !ok || err1 != nil || err2 != nil || !hmac.Equal(mac, s.mac([]byte("state"), payload)) {
		return st, errors.New("requestState was not issued by this server")
	}
	if err := json.Unmarshal(payload, &st); err != nil {
		return st, fmt.Errorf("requestState payload: %w", err)
	}
	return st, nil
}

// inputRound returns the reply for a call that still needs input (or whose
// retry is invalid or declined), and false once all rounds are answered.
func (s *Server) inputRound(t *toolset.Tool, p callParams, secureArgs map[string]json.RawMessage) (reply, bool) {
	round := 0
	if p.RequestState != "" {
		st, err := s.openState(p.RequestState)
		if err != nil || st.Tool != t.Name {
			return reply{err: wire.Errorf(CodeInvalidParams, "invalid requestState"), toolError: true}, true
		}
		if st.Secure != s.secureDigest(secureArgs) {
			return reply{err: wire.Errorf(CodeInvalidParams, "secureArguments must be re-sent unchanged when retrying with requestState"), toolError: true}, true
		}
		raw, ok := p.InputResponses["confirm"]
		if !ok {
			return reply{err: wire.Errorf(CodeInvalidParams, "missing inputResponses.confirm"), toolError: true}, true
		}
		var answer struct {
			Action string `json:"action"`
		}
		if json.Unmarshal(raw, &answer) != nil || answer.Action != "accept" {
			return reply{result: map[string]any{
				"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("confirmation not given (action %q)", answer.Action)}},
				"isError": true,
			}}, true
		}
		round = st.Round
	}
	if round >= t.Test.InputRequired {
		return reply{}, false
	}
	next := round + 1
	state := s.sealState(roundState{Tool: t.Name, Round: next, Secure: s.secureDigest(secureArgs)})
	return reply{result: map[string]any{
		"resultType": "input_required",
		"inputRequests": map[string]any{
			"confirm": map[string]any{
				"method": "elicitation/create",
				"params": map[string]any{
					"message": fmt.Sprintf("Confirm %s? (round %d of %d)", t.Name, next, t.Test.InputRequired),
					"requestedSchema": map[string]any{
						"type":       "object",
						"properties": map[string]any{"ok": map[string]any{"type": "boolean"}},
					},
				},
			},
		},
		"requestState": state,
	}}, true
}

// toolboxCall applies Toolbox's rules to a call of a tool with secure
// parameters (Options.Toolbox); done reports an answer that ends the call.
func toolboxCall(x *exchange, t *toolset.Tool, negotiatedHere bool, args, secureArgs map[string]json.RawMessage, advertised []string) (reply, bool) {
	switch {
	case !x.modern:
		return reply{err: wire.Errorf(CodeInvalidParams, "invalid tool name: tool with name %q does not exist", t.Name), toolError: true}, true
	case !negotiatedHere:
		// Toolbox names its id in the message and sends no data.
		return reply{err: wire.Errorf(CodeMissingCapability, "missing required client capability: tool %q requires %s extension which is not supported by the client",
			t.Name, strings.Join(advertised, ", ")), toolError: true}, true
	}
	for _, name := range wire.SortedKeys(args) {
		if _, isSecure := t.Secure.Properties[name]; isSecure {
			return reply{err: wire.Errorf(CodeInvalidParams, "parameter %q is secure and must not be passed in standard arguments", name), toolError: true}, true
		}
	}
	for _, name := range wire.SortedKeys(secureArgs) {
		if _, isSecure := t.Secure.Properties[name]; !isSecure {
			return reply{err: wire.Errorf(CodeInvalidParams, "parameter %q is not secure and must not be passed in secureArguments", name), toolError: true}, true
		}
	}
	for _, name := range wire.SortedKeys(t.Secure.Properties) {
		if _, ok := secureArgs[name]; !ok {
			return reply{result: map[string]any{"isError": true, "content": []any{map[string]any{"type": "text",
				"text": fmt.Sprintf("provided parameters were invalid: parameter %q is required", name)}}}}, true
		}
	}
	return reply{}, false
}

const methodProgress = "notifications/progress"

// progressToken is the request's _meta.progressToken, nil without one.
func progressToken(params json.RawMessage) json.RawMessage {
	var p struct {
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.Meta.ProgressToken) == 0 || string(p.Meta.ProgressToken) == "null" {
		return nil
	}
	return p.Meta.ProgressToken
}

func progressParams(token json.RawMessage, step ProgressStep) map[string]any {
	params := map[string]any{"progressToken": token, "progress": step.Progress}
	if step.Total != nil {
		params["total"] = *step.Total
	}
	if step.Message != "" {
		params["message"] = step.Message
	}
	return params
}
