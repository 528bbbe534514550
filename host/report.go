package host

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/agenthost/agenthost/bindings"
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
	Name            string       `json:"name"`
	Status          ServerStatus `json:"status"`
	Error           *string      `json:"error"`
	ProtocolVersion *string      `json:"protocolVersion"`
	SecureParams    bool         `json:"secureParams"`
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
	Name           string          `json:"name"`
	ExposedName    *string         `json:"exposedName"`
	Status         ToolStatus      `json:"status"`
	Reason         *string         `json:"reason"`
	Description    string          `json:"description"`
	InputSchema    json.RawMessage `json:"inputSchema"`
	SecureParams   []string        `json:"secureParams"`
	SecureRequired []string        `json:"secureRequired"`
	Warnings       []string        `json:"warnings"`
	Risk           json.RawMessage `json:"risk"`
	Decision       *string         `json:"decision"`
	Approvers      int             `json:"approvers"`
	Rules          []string        `json:"rules"`
	// ArgumentRules are the rules whose expression reads the arguments:
	// Decision is for a call without arguments, and a call with some may
	// be decided otherwise.
	ArgumentRules []string `json:"argumentRules"`
}

// Report builds the catalog report for this session; server limits it to
// one server when not empty.
func (s *Session) Report(ctx context.Context, server string) *CatalogReport {
	view := s.View(ctx)
	out := &CatalogReport{Servers: []ServerReport{}}
	for _, snap := range view.Servers {
		if server != "" && snap.Name != server {
			continue
		}
		sr := ServerReport{Name: snap.Name, Status: snap.Status, SecureParams: snap.SecureParams, Sandbox: snap.Sandbox, Tools: []ToolReport{}, Warnings: []string{}}
		for _, w := range snap.Warnings {
			sr.Warnings = append(sr.Warnings, s.host.redactor.Redact(w))
		}
		if snap.Error != "" {
			e := s.host.redactor.Redact(snap.Error)
			sr.Error = &e
		}
		if snap.ProtocolVersion != "" {
			v := snap.ProtocolVersion
			sr.ProtocolVersion = &v
		}
		red := s.host.redactor
		for _, tv := range view.Tools[snap.Name] {
			// A definition can hold a protected value (such a tool is
			// excluded, see taint.Reason): the report masks it.
			tr := ToolReport{
				Name:           red.Redact(tv.Tool.Name),
				Status:         tv.Status,
				Description:    red.Redact(tv.Tool.Description),
				InputSchema:    red.RedactJSON(tv.inputSchemaSent()),
				SecureParams:   nonNil(tv.Tool.SecureParams),
				SecureRequired: nonNil(tv.Tool.SecureRequired),
				Warnings:       redactAll(red, nonNil(tv.Tool.Warnings)),
				Risk:           json.RawMessage("null"),
				Rules:          []string{},
				ArgumentRules:  []string{},
			}
			if tv.ExposedName != "" {
				n := red.Redact(tv.ExposedName)
				tr.ExposedName = &n
			}
			if tv.Reason != "" {
				r := tv.Reason
				tr.Reason = &r
			}
			s.host.decorate(ctx, s, snap, tv, &tr)
			sr.Tools = append(sr.Tools, tr)
		}
		out.Servers = append(out.Servers, sr)
	}
	return out
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

func nonNil(s []string) []string {
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
