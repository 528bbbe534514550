package secureparams

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/host/secureparams/internal/guard"
	"github.com/agenthost/agenthost/host/secureparams/internal/schemajson"
	"github.com/agenthost/agenthost/internal/safeschema"
	"github.com/mark3labs/mcp-go/mcp"
)

// Rule names the check that excluded a tool, for callers that branch or
// count; Reason carries the human sentence.
type Rule string

// Exclusion rules.
const (
	// RuleMalformed: a part of the definition the host must read is not
	// well-formed (duplicate keys, inputSchema not an object, a non-schema
	// where a schema belongs).
	RuleMalformed Rule = "malformed"
	// RuleSecureRoot: secureInputSchema is not an object schema with
	// "type": "object" at its root.
	RuleSecureRoot Rule = "secure-root"
	// RuleSecureUndeclared: secureInputSchema requires or mentions a name
	// that is not one of its top-level properties.
	RuleSecureUndeclared Rule = "secure-undeclared"
	// RuleOverlap: a secure parameter name is also reachable from
	// inputSchema.
	RuleOverlap Rule = "overlap"
	// RuleExternalRef: a $ref that does not start with "#".
	RuleExternalRef Rule = "external-ref"
	// RuleDynamicRef: $dynamicRef or $recursiveRef.
	RuleDynamicRef Rule = "dynamic-ref"
	// RuleUnresolvedRef: a local $ref that resolves to nothing, or one whose
	// meaning depends on an embedded $id.
	RuleUnresolvedRef Rule = "unresolved-ref"
	// RuleLimits: depth or size limits exceeded.
	RuleLimits Rule = "limits"
	// RulePattern: a patternProperties pattern Go's regexp cannot compile.
	RulePattern Rule = "pattern"
	// RuleHeader: an invalid x-mcp-header annotation.
	RuleHeader Rule = "header"
	// RuleNumber: a number in a schema that the JSON Schema validator
	// cannot handle (see safeschema.MaxNumberLength and MaxNumberExponent).
	RuleNumber Rule = "number"
	// RuleInvalidSecureSchema: secureInputSchema does not compile as JSON
	// Schema (draft 2020-12 unless it says otherwise).
	RuleInvalidSecureSchema Rule = "invalid-secure-schema"
)

// ExclusionError says why a tool must not be offered. Only the tool is
// excluded, never its server.
type ExclusionError struct {
	Tool   string
	Rule   Rule
	Reason string
}

func (e *ExclusionError) Error() string {
	return fmt.Sprintf("tool %q excluded: %s", e.Tool, e.Reason)
}

// Validate reports whether the tool may be offered: nil, or an
// *ExclusionError. The structural analysis runs once per Tool (ParseTool
// already did it); the first call also compiles secureInputSchema and caches
// the result for ValueSchema, so a host that validates at list time never
// compiles on the call path. Validate is safe for concurrent use.
func Validate(t *Tool) error {
	if t == nil {
		return &ExclusionError{Rule: RuleMalformed, Reason: "no tool definition"}
	}
	t.analyzeOnce.Do(func() { t.exclusion = analyze(t) })
	if t.exclusion != nil {
		return t.exclusion
	}
	if !t.HasSecureSchema {
		return nil
	}
	if err := t.checkValueSchema(); err != nil {
		return &ExclusionError{
			Tool:   t.Name,
			Rule:   RuleInvalidSecureSchema,
			Reason: "secureInputSchema is not a valid JSON Schema: " + oneLine(err.Error()),
		}
	}
	return nil
}

// analyze runs every structural rule and fills the derived fields. It
// extracts the secure names first, best effort, so that an operator sees
// them even for an excluded tool.
func analyze(t *Tool) *ExclusionError {
	if !t.docsDecoded {
		// Errors surface below, from the scans that name the schema.
		t.inputDoc, _ = schemajson.DecodeJSON(t.InputSchema)
		t.secureDoc, _ = schemajson.DecodeJSON(t.SecureInputSchema)
		t.docsDecoded = true
	}
	half := t.secureHalf
	t.secureHalf = nil
	if half != nil {
		half.apply(t)
	} else {
		extractSecureBasics(t, t.secureDoc)
	}
	p := analyzeProblem(t, t.secureDoc, half)
	// The decoded schemas serve this analysis only (it runs once); a
	// catalog of thousands of tools would otherwise keep them all.
	t.inputDoc, t.secureDoc = nil, nil
	if p == nil {
		return nil
	}
	return &ExclusionError{Tool: t.Name, Rule: p.rule, Reason: p.reason}
}

func extractSecureBasics(t *Tool, secureRoot any) {
	obj, _ := secureRoot.(map[string]any)
	props, _ := obj["properties"].(map[string]any)
	t.SecureParams = sortedKeys(props)
	if req, ok := stringList(obj["required"]); ok {
		t.SecureRequired = guard.SortedUnique(req)
	}
	t.SecureHeaders = nil
	for _, name := range t.SecureParams {
		prop, _ := props[name].(map[string]any)
		if h, ok := prop["x-mcp-header"].(string); ok && isHeaderToken(h) {
			t.SecureHeaders = append(t.SecureHeaders, HeaderBinding{Param: name, Header: headerName(h)})
		}
	}
}

// analyzeProblem finds the first problem of t, in the rules' order. half,
// when set, is t's secureInputSchema analysed before (secureRoot is then
// nil: ParseTool did not decode it).
func analyzeProblem(t *Tool, secureRoot any, half *secureHalf) *problem {
	if len(t.Raw) > 0 {
		if p := checkDuplicateKeys(t.Raw, "the tool definition", t.rawValid); p != nil {
			return p
		}
	}
	trimmed := bytes.TrimSpace(t.InputSchema)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return newProblem(RuleMalformed, "inputSchema is not a JSON object")
	}
	budget := MaxSchemaNodes
	inputScan, p := scanSchema(t.InputSchema, "inputSchema", &budget, t.rawValid)
	if p != nil {
		return p
	}
	if p := checkSchemaNumbers("inputSchema", t.inputDoc); p != nil {
		return p
	}
	// mcp-go re-decodes the schema; skip it when the scan saw no annotation.
	if len(inputScan.headerOwners) > 0 {
		headerTool := &mcp.Tool{Name: t.Name, RawInputSchema: t.InputSchema}
		if err := mcp.ValidateParamHeaderAnnotations(headerTool); err != nil {
			return newProblem(RuleHeader, "inputSchema has an invalid x-mcp-header annotation: %v", err)
		}
		t.inputHeaderTool = headerTool
	}
	if !t.HasSecureSchema {
		// No overlap to find, but a schema the host cannot reason about
		// (an in-place $ref loop, a $ref to nothing) is excluded all the
		// same: validators reject every instance of it.
		// A pattern Go cannot compile only matters for overlap.
		iw := newWalker("inputSchema", t.inputDoc, inputScan.anchors, true)
		if p := iw.walk(t.inputDoc, "", 0, true, true); p != nil && p.rule != RulePattern {
			return p
		}
		return inputExpansion(t, inputScan)
	}

	if half != nil {
		if budget >= half.nodes {
			return analyzeWithSecureHalf(t, half, inputScan)
		}
		// Too little budget left: the full analysis reports the limit.
		secureRoot, _ = schemajson.DecodeValid(t.SecureInputSchema)
	}
	rootRequired := t.SecureRequired
	if p := checkSecureRoot(secureRoot); p != nil {
		return p
	}
	before := budget
	secureScan, p := scanSchema(t.SecureInputSchema, "secureInputSchema", &budget, t.rawValid)
	if p != nil {
		return p
	}
	if p := checkSchemaNumbers("secureInputSchema", secureRoot); p != nil {
		return p
	}

	sw := newWalker("secureInputSchema", secureRoot, secureScan.anchors, false)
	if p := sw.walk(secureRoot, "", 0, true, true); p != nil {
		return p
	}
	declared := declaredSet(t.SecureParams)
	for _, n := range sw.names {
		if declared[n.name] {
			continue
		}
		if n.required {
			return newProblem(RuleSecureUndeclared, "secureInputSchema requires %q but does not declare it in its top-level properties, so the host cannot type or bind it", n.name)
		}
		return newProblem(RuleSecureUndeclared, "secureInputSchema mentions %q at %s outside its top-level properties; the host binds only top-level properties", n.name, n.where())
	}
	for _, n := range sw.required {
		t.SecureRequired = append(t.SecureRequired, n.name)
	}
	t.SecureRequired = guard.SortedUnique(t.SecureRequired)

	return analyzeWithInput(t, inputScan, sw, declared, func() ([]secureHeaderName, *problem, *problem) {
		if _, p := schemaExpansion("secureInputSchema", t.SecureInputSchema, secureRoot, secureScan); p != nil {
			return nil, nil, p
		}
		headerNames, headerProblem := secureHeaderNames(secureRoot, secureScan)
		if headerProblem == nil {
			// Every step that reads secureInputSchema alone passed.
			secureMemo.put(t.SecureInputSchema, newSecureHalf(t, rootRequired, before-budget, sw, headerNames))
		}
		return headerNames, headerProblem, nil
	})
}

// analyzeWithSecureHalf is the rest of analyzeProblem for a tool whose
// secureInputSchema was analysed before (half): what reads inputSchema too.
func analyzeWithSecureHalf(t *Tool, half *secureHalf, inputScan *scanResult) *problem {
	t.SecureRequired = guard.SortedUnique(append(t.SecureRequired, half.walkRequired...))
	return analyzeWithInput(t, inputScan, half.walker(), declaredSet(t.SecureParams), func() ([]secureHeaderName, *problem, *problem) {
		return half.headerNames, nil, nil
	})
}

// analyzeWithInput ends analyzeProblem for a tool with a secure schema
// (sw its walk, declared its top-level names) with the steps that read
// inputSchema, in the rules' order; secureRest runs what is left of the
// secure schema's own steps after the overlap check (its expansion, the
// x-mcp-header rules that read it alone), returning the annotated secure
// parameters, the header problem they stopped at, and any other problem.
func analyzeWithInput(t *Tool, inputScan *scanResult, sw *schemaWalker, declared map[string]bool, secureRest func() ([]secureHeaderName, *problem, *problem)) *problem {
	iw := newWalker("inputSchema", t.inputDoc, inputScan.anchors, true)
	if p := iw.walk(t.inputDoc, "", 0, true, true); p != nil {
		return p
	}
	if p := checkOverlap(t.SecureParams, declared, iw, sw); p != nil {
		return p
	}
	headerNames, headerProblem, p := secureRest()
	if p != nil {
		return p
	}
	if p := inputExpansion(t, inputScan); p != nil {
		return p
	}
	if p := checkSecureHeaders(t, headerNames, headerProblem, len(inputScan.headerOwners) > 0); p != nil {
		return p
	}
	t.Warnings = append(t.Warnings, nameVariantWarnings(t.SecureParams, iw.names)...)
	t.Warnings = append(t.Warnings, secretHeaderWarnings(t)...)
	return nil
}

// declaredSet is the set of the secure schema's top-level names.
func declaredSet(names []string) map[string]bool {
	declared := make(map[string]bool, len(names))
	for _, n := range names {
		declared[n] = true
	}
	return declared
}

// checkSchemaNumbers excludes a schema holding a number the validator
// cannot handle: compiling it could panic (the metaschema checks multipleOf
// and the like with the same arithmetic), or the keyword would be dropped
// without a word (a maximum of 1e100000000 would check nothing).
func checkSchemaNumbers(label string, doc any) *problem {
	if _, err := safeschema.CheckNumbers(doc); err != nil {
		var ne *safeschema.NumberError
		if errors.As(err, &ne) {
			return newProblem(RuleNumber, "%s has a number at %s with more than %d characters or an exponent beyond ±%d, which the validator cannot handle", label, schemajson.At(ne.Location), safeschema.MaxNumberLength, safeschema.MaxNumberExponent)
		}
		return newProblem(RuleNumber, "%s: %v", label, err)
	}
	return nil
}

// inputExpansion bounds inputSchema's validation cost and records it.
func inputExpansion(t *Tool, scan *scanResult) *problem {
	cost, p := schemaExpansion("inputSchema", t.InputSchema, t.inputDoc, scan)
	if p != nil {
		return p
	}
	t.inputCost = cost
	return nil
}

// checkSecureRoot enforces SEP-3221 §3.2: an object schema whose root type
// is "object" (a list is accepted only when "object" is its only member).
func checkSecureRoot(root any) *problem {
	const must = `it must be an object schema with "type": "object"`
	var obj map[string]any
	switch v := root.(type) {
	case nil:
		return newProblem(RuleSecureRoot, "secureInputSchema is null; %s", must)
	case bool:
		return newProblem(RuleSecureRoot, "secureInputSchema is the boolean schema %t; %s", v, must)
	case []any:
		return newProblem(RuleSecureRoot, "secureInputSchema is an array; %s", must)
	case map[string]any:
		obj = v
	default:
		return newProblem(RuleSecureRoot, "secureInputSchema is not an object; %s", must)
	}
	typ, ok := obj["type"]
	if !ok {
		return newProblem(RuleSecureRoot, "secureInputSchema has no root \"type\"; %s", must)
	}
	if s, isString := typ.(string); isString && s == "object" {
		return nil
	}
	if list, isList := stringList(typ); isList && len(list) > 0 {
		onlyObject := true
		for _, s := range list {
			onlyObject = onlyObject && s == "object"
		}
		if onlyObject {
			return nil
		}
	}
	rendered, _ := json.Marshal(typ)
	return newProblem(RuleSecureRoot, "secureInputSchema root type is %s; %s", rendered, must)
}

// checkOverlap enforces SEP-3221 §3.3/3.4 conservatively: a secure name that
// inputSchema declares or requires anywhere, or that one of its
// patternProperties admits, or an inputSchema name that a secure pattern
// admits. Names compare case-sensitively, as JSON does.
func checkOverlap(secure []string, declared map[string]bool, input, sec *schemaWalker) *problem {
	for _, n := range input.names {
		if declared[n.name] {
			return newProblem(RuleOverlap, "inputSchema also declares the secure parameter %q (at %s)", n.name, n.where())
		}
	}
	for _, pat := range input.patterns {
		for _, s := range secure {
			if pat.re.MatchString(s) {
				return newProblem(RuleOverlap, "inputSchema pattern %q (at %s) admits the secure parameter %q", pat.source, pat.at, s)
			}
		}
	}
	for _, pat := range sec.patterns {
		for _, n := range input.names {
			if pat.re.MatchString(n.name) {
				return newProblem(RuleOverlap, "secureInputSchema pattern %q (at %s) admits the inputSchema property %q", pat.source, pat.at, n.name)
			}
		}
	}
	return nil
}

// secureHeaderNames applies the x-mcp-header rules of the 2026-07-28
// transport (mcp-go's ValidateParamHeaderAnnotations) that read
// secureInputSchema alone, and one of the host's own: the host binds only
// top-level secure parameters, so an annotation anywhere else could never
// be honoured. It returns the annotated parameters in the order the rules
// take them, up to the first that breaks one, and that problem.
func secureHeaderNames(secureRoot any, scan *scanResult) ([]secureHeaderName, *problem) {
	props, _ := secureRoot.(map[string]any)["properties"].(map[string]any)
	allowed := make(map[string]bool, len(props))
	for name := range props {
		allowed[pointer([]string{"properties", name})] = true
	}
	for _, owner := range scan.headerOwners {
		if !allowed[owner] {
			return nil, newProblem(RuleHeader, "secureInputSchema has x-mcp-header at %s, which is not a top-level secure property", schemajson.At(owner))
		}
	}

	if len(scan.headerOwners) == 0 {
		return nil, nil
	}
	var names []secureHeaderName
	secureHeaders := map[string]string{}
	for _, name := range sortedKeys(props) {
		prop, isObject := props[name].(map[string]any)
		if !isObject {
			continue
		}
		raw, ok := prop["x-mcp-header"]
		if !ok {
			continue
		}
		header, isString := raw.(string)
		if !isString || header == "" {
			return names, newProblem(RuleHeader, "secure parameter %q has an x-mcp-header that is not a non-empty string", name)
		}
		if !isHeaderToken(header) {
			return names, newProblem(RuleHeader, "secure parameter %q has x-mcp-header %q, which is not a valid HTTP header name", name, header)
		}
		if !isHeaderPrimitive(prop["type"]) {
			return names, newProblem(RuleHeader, "secure parameter %q has x-mcp-header but its type is not string, integer or boolean", name)
		}
		lower := strings.ToLower(header)
		if other, dup := secureHeaders[lower]; dup {
			return names, newProblem(RuleHeader, "secure parameters %q and %q use the same x-mcp-header %q (names compare case-insensitively)", other, name, header)
		}
		secureHeaders[lower] = name
		names = append(names, secureHeaderName{name: name, header: header, lower: lower})
	}
	return names, nil
}

// checkSecureHeaders finishes the x-mcp-header rules with the one that
// reads both schemas: no secure parameter (names, from secureHeaderNames)
// may use a header an inputSchema property uses. A parameter's conflict
// comes before secureOnly, the problem secureHeaderNames stopped at, as it
// came before it in the rules' order.
func checkSecureHeaders(t *Tool, names []secureHeaderName, secureOnly *problem, inputHasHeaders bool) *problem {
	if len(names) > 0 && inputHasHeaders {
		inputHeaders := map[string]string{}
		for _, b := range mcp.ExtractParamHeaderBindings(&mcp.Tool{Name: t.Name, RawInputSchema: t.InputSchema}) {
			inputHeaders[strings.ToLower(b.Header)] = strings.Join(b.Path, ".")
		}
		for _, n := range names {
			if other, dup := inputHeaders[n.lower]; dup {
				return newProblem(RuleHeader, "secure parameter %q and inputSchema property %q use the same x-mcp-header %q (names compare case-insensitively)", n.name, other, n.header)
			}
		}
	}
	return secureOnly
}

// isHeaderPrimitive mirrors mcp-go: every declared type must be string,
// integer or boolean, and a type must be declared.
func isHeaderPrimitive(typ any) bool {
	var names []string
	switch v := typ.(type) {
	case string:
		names = []string{v}
	case []any:
		names, _ = stringList(v)
	}
	if len(names) == 0 {
		return false
	}
	for _, n := range names {
		switch n {
		case "string", "integer", "boolean":
		default:
			return false
		}
	}
	return true
}

// isHeaderToken reports whether s is an RFC 9110 token (1*tchar).
func isHeaderToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// nameVariantWarnings flags inputSchema names that differ from a secure name
// only in case or separators: allowed (JSON names are case-sensitive), but
// the call-time guard will refuse any call that uses them.
func nameVariantWarnings(secure []string, input []foundName) []string {
	if len(secure) == 0 {
		return nil
	}
	// Each secure name is prepared once, not once per pair.
	targets := guard.Targets(secure)
	var out []string
	var seen map[string]bool
	for _, n := range input {
		for i, s := range secure {
			if n.name == s || seen[n.name+"\x00"+s] || !targets[i].Matches(n.name) {
				continue
			}
			if seen == nil {
				seen = map[string]bool{}
			}
			seen[n.name+"\x00"+s] = true
			out = append(out, fmt.Sprintf("inputSchema property %q differs from secure parameter %q only in case or separators; calls whose arguments use it will be refused", n.name, s))
		}
	}
	return out
}

// secretHeaderWarnings flags x-mcp-header on a parameter that looks like a
// credential. SEP-3221 §6 forbids that, but a host cannot prove a value is a
// secret, so it warns rather than excludes.
func secretHeaderWarnings(t *Tool) []string {
	var out []string
	for _, b := range t.SecureHeaders {
		if guard.LooksSecret(b.Param) || guard.LooksSecret(strings.TrimPrefix(b.Header, mcp.HeaderParamPrefix)) {
			out = append(out, fmt.Sprintf("secure parameter %q looks like a credential but is sent in the HTTP header %s (SEP-3221 forbids x-mcp-header on secrets); proxies may log it", b.Param, b.Header))
		}
	}
	return out
}

// oneLine folds the validator's indented multi-line messages into one line,
// so a reason stays a single sentence in logs and tables.
func oneLine(s string) string {
	lines := strings.Split(s, "\n")
	parts := lines[:0]
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " ")
}
