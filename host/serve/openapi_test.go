package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// openAPIDoc is the embedded document as a JSON tree.
func openAPIDoc(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	if doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi = %v, want 3.1.0", doc["openapi"])
	}
	return doc
}

var httpMethods = []string{"get", "put", "post", "delete", "patch", "head", "options"}

// TestOpenAPIListsEveryRoute: the document and the server's route table
// hold the same operations.
func TestOpenAPIListsEveryRoute(t *testing.T) {
	doc := openAPIDoc(t)
	var documented []string
	for path, item := range doc["paths"].(map[string]any) {
		for method := range item.(map[string]any) {
			if slices.Contains(httpMethods, method) {
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	var served []string
	for _, rt := range (&Server{}).routeTable() {
		served = append(served, rt.method+" "+rt.path)
	}
	sort.Strings(documented)
	sort.Strings(served)
	for _, op := range served {
		if !slices.Contains(documented, op) {
			t.Errorf("the server serves %s, which openapi.yaml does not describe", op)
		}
	}
	for _, op := range documented {
		if !slices.Contains(served, op) {
			t.Errorf("openapi.yaml describes %s, which the server does not serve", op)
		}
	}
}

// responseValidator checks answers against the document's schemas.
type responseValidator struct {
	doc      map[string]any
	compiler *jsonschema.Compiler
	paths    []pathMatcher
}

type pathMatcher struct {
	template string
	re       *regexp.Regexp
}

func newResponseValidator(t *testing.T) *responseValidator {
	t.Helper()
	v, err := compileResponseValidator()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func compileResponseValidator() (*responseValidator, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(openAPIDocument, &doc); err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("openapi.json", inst); err != nil {
		return nil, err
	}
	v := &responseValidator{doc: doc, compiler: c}
	for path := range doc["paths"].(map[string]any) {
		re := regexp.MustCompile("^" + regexp.MustCompile(`\\\{[^}]+\\\}`).ReplaceAllString(regexp.QuoteMeta(path), "[^/]+") + "$")
		v.paths = append(v.paths, pathMatcher{path, re})
	}
	return v, nil
}

// TestMain checks, after every test has run, every answer any test
// recorded against the document (not only those of
// TestOpenAPIResponsesMatchSchemas, which runs before the replica tests
// and would miss their answers).
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if errs := checkRecordedAnswers(); len(errs) > 0 {
			for _, err := range errs {
				fmt.Fprintln(os.Stderr, "openapi:", err)
			}
			fmt.Fprintf(os.Stderr, "FAIL: %d answers recorded by the tests do not match openapi.yaml\n", len(errs))
			code = 1
		}
	}
	os.Exit(code)
}

// checkRecordedAnswers validates every recorded answer.
func checkRecordedAnswers() []error {
	v, err := compileResponseValidator()
	if err != nil {
		return []error{err}
	}
	seenMu.Lock()
	defer seenMu.Unlock()
	var errs []error
	for _, r := range seen {
		if strings.HasPrefix(r.path, "/v2/") {
			continue // the unknown-route probe of TestAuthentication
		}
		if err := v.check(r); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// schemaFor returns the JSON pointer of the schema documented for the
// answer, or an error naming what is missing.
func (v *responseValidator) schemaFor(method, path string, status int, contentType string) (string, error) {
	path, _, _ = strings.Cut(path, "?")
	var tmpl string
	for _, m := range v.paths {
		if m.re.MatchString(path) && (tmpl == "" || strings.Count(m.template, "{") < strings.Count(tmpl, "{")) {
			tmpl = m.template
		}
	}
	if tmpl == "" {
		return "", fmt.Errorf("no documented path matches %s", path)
	}
	op, ok := v.doc["paths"].(map[string]any)[tmpl].(map[string]any)[strings.ToLower(method)].(map[string]any)
	if !ok {
		return "", fmt.Errorf("%s %s is not documented", method, tmpl)
	}
	code := fmt.Sprint(status)
	resp, ok := op["responses"].(map[string]any)[code].(map[string]any)
	if !ok {
		return "", fmt.Errorf("%s %s: status %d is not documented", method, tmpl, status)
	}
	ptr := "#/paths/" + pointerEscape(tmpl) + "/" + strings.ToLower(method) + "/responses/" + code
	if ref, ok := resp["$ref"].(string); ok {
		ptr = ref
		resp = v.doc["components"].(map[string]any)["responses"].(map[string]any)[strings.TrimPrefix(ref, "#/components/responses/")].(map[string]any)
	}
	media, _, _ := strings.Cut(contentType, ";")
	content, _ := resp["content"].(map[string]any)
	if _, ok := content[media]; !ok {
		return "", fmt.Errorf("%s %s: status %d with content type %q is not documented", method, tmpl, status, media)
	}
	return ptr + "/content/" + pointerEscape(media) + "/schema", nil
}

func (v *responseValidator) check(r seenResponse) error {
	if r.status == http.StatusNoContent {
		if _, err := v.schemaFor(r.method, r.path, r.status, "application/json"); err != nil && !strings.Contains(err.Error(), "content type") {
			return err
		}
		return nil
	}
	ptr, err := v.schemaFor(r.method, r.path, r.status, r.contentType)
	if err != nil {
		return err
	}
	media, _, _ := strings.Cut(r.contentType, ";")
	if media != "application/json" {
		return nil // event streams, YAML and HTML: the content type is what is checked
	}
	sch, err := v.compiler.Compile("openapi.json" + ptr)
	if err != nil {
		return fmt.Errorf("compile %s: %w", ptr, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.body))
	if err != nil {
		return fmt.Errorf("%s %s: the body is not JSON: %w", r.method, r.path, err)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("%s %s (%d) does not match %s: %v\nbody: %s", r.method, r.path, r.status, ptr, err, r.body)
	}
	return nil
}

// TestOpenAPIResponsesMatchSchemas drives the main routes and checks every
// answer (status, content type and body) against the document.
func TestOpenAPIResponsesMatchSchemas(t *testing.T) {
	v := newResponseValidator(t)
	f := newFixture(t, nil)
	f.do("GET", "/healthz", "", nil)
	f.do("GET", "/readyz", "", nil)
	f.do("GET", "/openapi.yaml", "", nil)
	f.do("GET", "/approvals", "", nil)
	f.do("POST", "/v1/sessions", "", map[string]any{})
	f.do("POST", "/v1/sessions", apiToken, map[string]any{"trustLevel": 7})
	s := f.createSession(map[string]string{"token": "t"})
	f.do("GET", "/v1/sessions/"+s.ID, apiToken, nil)
	f.do("GET", "/v1/sessions/"+s.ID+"/tools", apiToken, nil)
	f.do("GET", "/v1/sessions/nope", apiToken, nil)
	resp := f.startTurn(s.ID, `call db__delete_rows {"where":"id = 2"}`)
	f.record("POST", "/v1/sessions/"+s.ID+"/turns", resp.StatusCode, resp.Header.Get("Content-Type"), nil)
	p := f.waitPending()
	f.do("GET", "/v1/sessions/"+s.ID, apiToken, nil) // with a running turn
	f.do("POST", "/v1/sessions/"+s.ID+"/turns", apiToken, map[string]any{"message": "x"})
	f.do("GET", "/v1/approvals", aliceToken, nil)
	f.do("GET", "/v1/approvals", apiToken, nil)
	f.do("GET", "/v1/approvals/"+p.ID, aliceToken, nil)
	f.do("POST", "/v1/approvals/"+p.ID+"/votes", aliceToken, map[string]any{"decision": "allow"})
	f.do("POST", "/v1/approvals/"+p.ID+"/votes", bobToken, map[string]any{"decision": "allow"})
	mustSSE(t, resp.Body)
	resp.Body.Close()
	f.do("GET", "/v1/approvals/"+p.ID, aliceToken, nil)
	f.do("GET", "/v1/audit?sessionId="+s.ID, apiToken, nil)
	f.do("GET", "/v1/audit", apiToken, nil)
	f.do("DELETE", "/v1/sessions/"+s.ID, apiToken, nil)

	seenMu.Lock()
	defer seenMu.Unlock()
	if len(seen) < 20 {
		t.Fatalf("only %d answers were recorded", len(seen))
	}
	for _, r := range seen {
		if strings.HasPrefix(r.path, "/v2/") {
			continue // the unknown-route probe of TestAuthentication
		}
		if err := v.check(r); err != nil {
			t.Error(err)
		}
	}
}

// TestResponseValidatorCatchesMismatches: the checker fails answers that
// break the document, so the test above cannot pass by accident.
func TestResponseValidatorCatchesMismatches(t *testing.T) {
	v := newResponseValidator(t)
	bad := []seenResponse{
		{"GET", "/v1/sessions/x", "application/json", 200, []byte(`{"id":"x"}`)},
		{"GET", "/v1/sessions/x", "application/json", 200, []byte(`{"id":"x","subject":"s","trustLevel":2,"valueNames":[],"createdAt":"2026-01-01T00:00:00Z","turn":null,"values":{"a":"b"}}`)},
		{"GET", "/v1/sessions/x", "application/json", 418, []byte(`{}`)},
		{"GET", "/v1/sessions/x", "text/plain", 200, []byte(`x`)},
		{"GET", "/v1/nothing", "application/json", 200, []byte(`{}`)},
		{"POST", "/v1/approvals/a/votes", "application/json", 200, []byte(`{"approvalId":"a","approver":"x","decision":"maybe","counted":true,"settled":true}`)},
	}
	for _, r := range bad {
		if err := v.check(r); err == nil {
			t.Errorf("%s %s %d %s passed", r.method, r.path, r.status, r.body)
		}
	}
	good := seenResponse{"GET", "/v1/sessions/x", "application/json", 200, []byte(`{"id":"x","subject":"s","trustLevel":2,"valueNames":[],"createdAt":"2026-01-01T00:00:00Z","turn":null}`)}
	if err := v.check(good); err != nil {
		t.Error(err)
	}
}
