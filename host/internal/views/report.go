package views

import (
	"encoding/json"
	"slices"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/host/internal/mcpconn"
	"github.com/agenthost/agenthost/host/internal/verdicts"
	"github.com/agenthost/agenthost/internal/childproc"
	"github.com/agenthost/agenthost/llmview"
)

// CatalogReport is the `tools --json` document (docs/cli.md): every key is
// always present, null or empty when unknown.
type CatalogReport struct {
	Servers []ServerReport `json:"servers"`
}

// ServerReport is one server in a CatalogReport.
type ServerReport struct {
	Name            string               `json:"name"`
	Status          mcpconn.ServerStatus `json:"status"`
	Error           *string              `json:"error"`
	ProtocolVersion *string              `json:"protocolVersion"`
	SecureParams    bool                 `json:"secureParams"`
	// Warnings are operator notes about the server ([] when none).
	Warnings []string `json:"warnings"`
	// Sandbox is what the kernel enforces for a stdio server (null for a
	// server reached by url).
	Sandbox *childproc.Enforcement `json:"sandbox"`
	Tools   []ToolReport           `json:"tools"`
}

// ToolReport is one tool in a CatalogReport. InputSchema is exactly what the
// model is sent; secure parameters appear by name only.
type ToolReport struct {
	Name           string             `json:"name"`
	ExposedName    *string            `json:"exposedName"`
	Status         mcpconn.ToolStatus `json:"status"`
	Reason         *string            `json:"reason"`
	Description    string             `json:"description"`
	InputSchema    json.RawMessage    `json:"inputSchema"`
	SecureParams   []string           `json:"secureParams"`
	SecureRequired []string           `json:"secureRequired"`
	Warnings       []string           `json:"warnings"`
	Risk           json.RawMessage    `json:"risk"`
	Decision       *string            `json:"decision"`
	Approvers      int                `json:"approvers"`
	Rules          []string           `json:"rules"`
	// ArgumentRules are the rules whose expression reads the arguments:
	// Decision is for a call without arguments, and a call with some may
	// be decided otherwise.
	ArgumentRules []string `json:"argumentRules"`
}

// Report builds the catalog report of a session's view; server limits it
// to one server when not empty. red masks protected values; decorate
// fills a tool's approval keys (see [Decorate]).
func Report(view *SessionView, server string, red *bindings.Redactor, decorate func(snap *mcpconn.ServerSnapshot, tv *ToolView, tr *ToolReport)) *CatalogReport {
	out := &CatalogReport{Servers: []ServerReport{}}
	for _, snap := range view.Servers {
		if server != "" && snap.Name != server {
			continue
		}
		sr := ServerReport{Name: snap.Name, Status: snap.Status, SecureParams: snap.SecureParams, Sandbox: snap.Sandbox, Tools: []ToolReport{}, Warnings: []string{}}
		for _, w := range snap.Warnings {
			sr.Warnings = append(sr.Warnings, red.Redact(w))
		}
		sr.Error = orNull(red.Redact(snap.Error))
		sr.ProtocolVersion = orNull(snap.ProtocolVersion)
		for _, tv := range view.Tools[snap.Name] {
			// A definition can hold a protected value (such a tool is
			// excluded, see taint.Reason): the report masks it.
			tr := ToolReport{
				Name:           red.Redact(tv.Tool.Name),
				Status:         tv.Status,
				Description:    red.Redact(tv.Tool.Description),
				InputSchema:    red.RedactJSON(tv.inputSchemaSent()),
				SecureParams:   NonNil(tv.Tool.SecureParams),
				SecureRequired: NonNil(tv.Tool.SecureRequired),
				Warnings:       redactAll(red, NonNil(tv.Tool.Warnings)),
				Risk:           json.RawMessage("null"),
				Rules:          []string{},
				ArgumentRules:  []string{},
			}
			tr.ExposedName = orNull(red.Redact(tv.ExposedName))
			tr.Reason = orNull(tv.Reason)
			decorate(snap, tv, &tr)
			sr.Tools = append(sr.Tools, tr)
		}
		out.Servers = append(out.Servers, sr)
	}
	return out
}

// Decorate fills the approval keys (risk, decision, approvers, rules) of a
// tool report of a tool not excluded: the decision of p for call (a call with empty arguments by
// the session) under the tool's effective risk metadata eff.
func Decorate(p *rules.Policy, eff risk.Effective, call rules.Call, tr *ToolReport) {
	if b, err := json.Marshal(eff); err == nil {
		tr.Risk = b
	}
	d := p.Decide(eff, call)
	decision := string(d.Action)
	tr.Decision = &decision
	tr.Approvers = d.Approvers
	tr.Rules = NonNil(d.Rules)
	tr.ArgumentRules = NonNil(p.ArgumentRules(call.Server, call.Tool, eff, call.TrustLevel))
}

// ToolInfos are the risk inputs of a snapshot's tools, excluded tools
// left out (for the approvals catalogue and `policy init`).
func ToolInfos(snap *mcpconn.ServerSnapshot) []risk.ToolInfo {
	infos := make([]risk.ToolInfo, 0, len(snap.Tools))
	for _, ct := range snap.Tools {
		if ct.Status != mcpconn.ToolExcluded {
			infos = append(infos, verdicts.ToolInfo(ct))
		}
	}
	return infos
}

// redactAll masks protected values in list, copying it only when one is
// found.
func redactAll(r *bindings.Redactor, list []string) []string {
	out := list
	for i, s := range list {
		if red := r.Redact(s); red != s {
			if &out[0] == &list[0] {
				out = slices.Clone(list)
			}
			out[i] = red
		}
	}
	return out
}

// orNull is s, or nil (a JSON null) for "".
func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// NonNil is s, or an empty list for nil (a JSON [] rather than null).
func NonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// inputSchemaSent is what the model is (or would be) sent for the tool.
func (tv *ToolView) inputSchemaSent() json.RawMessage {
	if tv.Parameters != nil {
		return tv.Parameters
	}
	return llmview.Parameters(tv.Tool.InputSchema)
}
