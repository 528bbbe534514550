package secureparams

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/secureparams/internal/guard"
	"github.com/google/go-cmp/cmp"
)

func TestFindSecureNames(t *testing.T) {
	secure := []string{"tenant_id", "api_key", "region"}
	tests := []struct {
		name string
		args string
		want []string
	}{
		{"none", `{"query":"select 1","limit":5}`, nil},
		{"empty", ``, nil},
		{"whitespace", "  \n", nil},
		{"null", `null`, nil},
		{"empty object", `{}`, nil},
		{"top level", `{"query":"x","tenant_id":"t-1"}`, []string{"tenant_id"}},
		{"nested", `{"filter":{"where":{"region":"eu"}}}`, []string{"region"}},
		{"inside array", `{"rows":[{"a":1},{"b":[{"tenant_id":2}]}]}`, []string{"tenant_id"}},
		{"top-level array", `[{"region":1}]`, []string{"region"}},
		{"upper case", `{"TENANT_ID":1}`, []string{"tenant_id"}},
		{"dash and case", `{"Tenant-ID":1}`, []string{"tenant_id"}},
		{"space", `{"tenant id":1}`, []string{"tenant_id"}},
		{"no separator", `{"tenantid":1}`, []string{"tenant_id"}},
		{"camel case", `{"apiKey":1}`, []string{"api_key"}},
		{"double separators", `{"re--gi__on":1}`, []string{"region"}},
		{"escaped key", `{"tenant\u005fid":1}`, []string{"tenant_id"}},
		{"kelvin sign folds to k", `{"api_\u212aey":1}`, []string{"api_key"}},
		{"full-width letters", `{"ｔｅｎａｎｔ＿ｉｄ":1}`, []string{"tenant_id"}},
		{"zero-width space", `{"tenant\u200b_id":1}`, []string{"tenant_id"}},
		{"soft hyphen", `{"re\u00adgion":1}`, []string{"region"}},
		{"unicode dash", `{"tenant\u2011id":1}`, []string{"tenant_id"}},
		{"combining mark", `{"tena\u0301nt_id":1}`, []string{"tenant_id"}},
		{"dotted capital I", `{"REG\u0130ON":1}`, []string{"region"}},
		{"dotless i", `{"reg\u0131on":1}`, []string{"region"}},
		{"several, sorted and deduplicated", `{"region":1,"x":{"Region":2,"tenant_id":3},"REGION":4}`, []string{"region", "tenant_id"}},
		{"name as value only", `{"field":"tenant_id","list":["region"]}`, nil},
		{"name inside string value that looks like JSON", `{"q":"{\"tenant_id\":1}"}`, nil},
		{"prefix is not a match", `{"tenant":1,"tenant_ids":2,"my_region":3}`, nil},
		{"duplicate keys both read", `{"q":1,"q":2,"region":3}`, []string{"region"}},
		{"NUL after", `{"tenant_id\u0000":1}`, []string{"tenant_id"}},
		{"SOH inside", `{"ten\u0001ant_id":1}`, []string{"tenant_id"}},
		{"DEL escaped", `{"region\u007f":1}`, []string{"region"}},
		{"DEL raw", "{\"region\x7f\":1}", []string{"region"}},
		{"controls around", `{"\u001fre\u0008gion\u000b":1}`, []string{"region"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := FindSecureNames(json.RawMessage(tc.args), secure)
			want := tc.want
			if len(want) == 0 {
				want = nil
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
			err := CheckArguments(json.RawMessage(tc.args), secure)
			if (err != nil) != (len(want) > 0) {
				t.Fatalf("CheckArguments = %v, want error %v", err, len(want) > 0)
			}
		})
	}
}

func TestLongSFolding(t *testing.T) {
	// Unicode simple folding maps ſ (long s) to s; the guard must too.
	if got := FindSecureNames(json.RawMessage(`{"\u017fecret":1}`), []string{"secret"}); !cmp.Equal(got, []string{"secret"}) {
		t.Fatalf("got %v", got)
	}
}

func TestFindSecureNamesFailsClosed(t *testing.T) {
	secure := []string{"tenant_id", "region"}
	deep := strings.Repeat(`{"a":`, MaxArgumentDepth+1) + `1` + strings.Repeat(`}`, MaxArgumentDepth+1)
	deepArrays := strings.Repeat(`[`, MaxArgumentDepth+1) + strings.Repeat(`]`, MaxArgumentDepth+1)
	okDepth := strings.Repeat(`{"a":`, MaxArgumentDepth) + `1` + strings.Repeat(`}`, MaxArgumentDepth)
	hostile := strings.Repeat(`[`, 100_000)
	veryDeep := strings.Repeat(`[`, 5_000) + strings.Repeat(`]`, 5_000)
	tests := []struct {
		name     string
		args     string
		notJSON  bool
		tooDeep  bool
		wantNone bool
	}{
		{name: "too deep objects", args: deep, tooDeep: true},
		{name: "too deep arrays", args: deepArrays, tooDeep: true},
		{name: "very deep but valid", args: veryDeep, tooDeep: true},
		{name: "hostile unterminated nesting", args: hostile, notJSON: true},
		{name: "at the depth limit", args: okDepth, wantNone: true},
		{name: "truncated", args: `{"query":"x"`, notJSON: true},
		{name: "garbage", args: `{query}`, notJSON: true},
		{name: "trailing second document", args: `{"q":1} {"tenant_id":2}`, notJSON: true},
		{name: "trailing garbage after scalar", args: `1 x`, notJSON: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			found := FindSecureNames(json.RawMessage(tc.args), secure)
			err := CheckArguments(json.RawMessage(tc.args), secure)
			if tc.wantNone {
				if found != nil || err != nil {
					t.Fatalf("found %v, err %v", found, err)
				}
				return
			}
			if diff := cmp.Diff([]string{"region", "tenant_id"}, found); diff != "" {
				t.Fatalf("fail-closed result (-want +got):\n%s", diff)
			}
			var sn *SecureNameError
			switch {
			case tc.notJSON:
				if !errors.Is(err, ErrArgumentsNotJSON) || errors.Is(err, ErrSecureNameInArguments) {
					t.Fatalf("want ErrArgumentsNotJSON, got %v", err)
				}
			case tc.tooDeep:
				if !errors.As(err, &sn) || !sn.DepthExceeded || !errors.Is(err, ErrSecureNameInArguments) {
					t.Fatalf("want depth-exceeded SecureNameError, got %#v", err)
				}
			}
		})
	}
}

func TestCheckArgumentsErrorNamesNoField(t *testing.T) {
	secure := []string{"zz_payroll_instance", "qq_session_material"}
	err := CheckArguments(json.RawMessage(`{"ZZ-Payroll-Instance":"db","nested":[{"qq_session_material":1}]}`), secure)
	if !errors.Is(err, ErrSecureNameInArguments) {
		t.Fatalf("want ErrSecureNameInArguments, got %v", err)
	}
	var sn *SecureNameError
	if !errors.As(err, &sn) {
		t.Fatalf("want *SecureNameError, got %T", err)
	}
	if diff := cmp.Diff([]string{"qq_session_material", "zz_payroll_instance"}, sn.Names); diff != "" {
		t.Fatalf("Names (-want +got):\n%s", diff)
	}
	for _, text := range []string{err.Error(), ErrSecureNameInArguments.Error()} {
		lower := strings.ToLower(text)
		for _, name := range append(secure, "payroll", "session", "instance") {
			if strings.Contains(lower, name) {
				t.Fatalf("model-visible error %q names %q", text, name)
			}
		}
	}
	if err := CheckArguments(json.RawMessage(`{"query":"x"}`), secure); err != nil {
		t.Fatalf("clean arguments refused: %v", err)
	}
	if err := CheckArguments(json.RawMessage(`{"tenant_id":1}`), nil); err != nil {
		t.Fatalf("no secure names, yet refused: %v", err)
	}
}

// TestToolCheckArguments: the guard of a parsed definition, whose secure
// names are prepared once, gives CheckArguments' verdicts (the names it
// reports included) for any number of secure names, and a clean call
// allocates nothing.
func TestToolCheckArguments(t *testing.T) {
	var many []string
	for i := range 20 {
		many = append(many, fmt.Sprintf("secret_%02d", i))
	}
	tests := []struct {
		name   string
		secure []string
		args   string
		want   []string // the names reported; nil: no secure name
	}{
		{"clean", []string{"instance", "region", "tenant_id"}, `{"order_id":"A-1042","fields":["status","total"]}`, nil},
		{"no secure names", nil, `{"tenant_id":1}`, nil},
		{"one spelled differently", []string{"instance", "region", "tenant_id"}, `{"q":{"Tenant-ID":1}}`, []string{"tenant_id"}},
		{"non-ASCII spelling", []string{"region", "tenant_id"}, `{"ｔｅｎａｎｔ＿ｉｄ":1,"REG\u0130ON":2}`, []string{"region", "tenant_id"}},
		{"more names than the stack buffer, last matched", many, `{"Secret-19":1,"x":2}`, []string{"secret_19"}},
		{"more names than the stack buffer, clean", many, `{"secret":1}`, nil},
		{"too deep", []string{"b", "a"}, strings.Repeat(`[`, MaxArgumentDepth+1) + strings.Repeat(`]`, MaxArgumentDepth+1), []string{"a", "b"}},
		{"duplicate key", []string{"instance"}, `{"q":1,"q":2}`, nil},
		{"not JSON", []string{"instance"}, `{"q":`, nil},
		{"empty", []string{"instance"}, ``, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tool := &Tool{SecureParams: tc.secure}
			for range 2 { // prepared on first use, reused after
				err := tool.CheckArguments(json.RawMessage(tc.args))
				want := CheckArguments(json.RawMessage(tc.args), tc.secure)
				if !sameVerdict(err, want) || errors.Is(err, ErrArgumentsNotJSON) != errors.Is(want, ErrArgumentsNotJSON) {
					t.Fatalf("Tool.CheckArguments = %v, CheckArguments = %v", err, want)
				}
				var sn *SecureNameError
				if errors.As(err, &sn) != (tc.want != nil) || (sn != nil && !slices.Equal(sn.Names, tc.want)) {
					t.Fatalf("Tool.CheckArguments = %v (%+v), want names %v", err, sn, tc.want)
				}
			}
		})
	}
	tool := &Tool{SecureParams: []string{"instance", "region", "tenant_id"}}
	args := json.RawMessage(`{"order_id":"A-1042","fields":["status","total"]}`)
	if raceEnabled {
		return // counted without the race detector (race_test.go)
	}
	if n := testing.AllocsPerRun(100, func() { _ = tool.CheckArguments(args) }); n != 0 {
		t.Errorf("a clean call's guard allocates %v times", n)
	}
}

func TestEquivalentNamesEdgeCases(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"_", "_", true},
		{"_", "-", false},
		{"-", "-", true},
		{"id", "ID", true},
		{"id", "i_d", true},
		{"tenant_id", "tenant_idx", false},
		{"straße", "STRASSE", false},
	}
	for _, tc := range tests {
		if got := guard.EquivalentNames(tc.a, tc.b); got != tc.want {
			t.Errorf("guard.EquivalentNames(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// referenceKeys collects every object key with encoding/json's own tokenizer,
// as an independent check on the lexer and the ASCII fast path.
func referenceKeys(t *testing.T, args string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(args))
	var keys []string
	var inObject []bool
	wantKey := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return keys
		}
		if wantKey && tok != json.Delim('}') {
			keys = append(keys, tok.(string))
			wantKey = false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			inObject = append(inObject, tok == json.Delim('{'))
			wantKey = tok == json.Delim('{')
			continue
		case json.Delim('}'), json.Delim(']'):
			inObject = inObject[:len(inObject)-1]
		}
		wantKey = len(inObject) > 0 && inObject[len(inObject)-1]
	}
}

func TestFindSecureNamesMatchesReference(t *testing.T) {
	secure := []string{"tenant_id", "API-Key", "région", "ﬁle_id", "x", "_", "Kelvin"}
	docs := []string{
		`{"tenant_id":1,"a":{"b":[{"c":"tenant_id"}]}}`,
		`{"TENANT-ID":{"api key":[1,{"ApiKey":null}]}}`,
		`{"region":1,"REGION":2,"re\u0301gion":3}`,
		`{"file_id":true,"FILE ID":false,"ｆｉｌｅ_ｉｄ":0}`,
		`{"X":1,"__":2,"-":3,"":4}`,
		`{"\u212aelvin":1,"kelvin":2,"k_e_l_v_i_n":3}`,
		`{"s":"{\"tenant_id\":1}","arr":[[[{"deep":{"tenant\u005fid":1}}]]]}`,
		`{"a" : {"b"	:	1}, "c" :[ "d" , {"e":"f"} ] }`,
		`[1,"x",{"y":[{"api_key":1}]}]`,
		`"tenant_id"`,
	}
	total := 0
	for _, doc := range docs {
		keys := referenceKeys(t, doc)
		var want []string
		for _, s := range secure {
			for _, k := range keys {
				if guard.EquivalentNames(k, s) {
					want = append(want, s)
					break
				}
			}
		}
		want = guard.SortedUnique(want)
		total += len(want)
		if diff := cmp.Diff(want, FindSecureNames(json.RawMessage(doc), secure)); diff != "" {
			t.Errorf("%s (-reference +got):\n%s", doc, diff)
		}
	}
	t.Logf("%d matches across %d documents", total, len(docs))
	if total < 8 {
		t.Fatalf("corpus exercises too few matches (%d)", total)
	}
}
