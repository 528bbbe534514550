package risk

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/approvals/internal/norm"
)

// InferenceVersion names the heuristic below. It is recorded with every
// inferred field (Effective.InferenceVersion, catalogue headers) so that an
// operator can tell which rules produced a classification.
const InferenceVersion = "infer/v1"

// ToolInfo is what the host knows of a tool definition, raw where mcp-go
// would lose fields.
type ToolInfo struct {
	Name        string
	Description string
	InputSchema json.RawMessage
	Annotations json.RawMessage
	// Meta is the definition's _meta object (nil when absent), read for
	// the action-metadata vocabulary.
	Meta json.RawMessage
}

// Inference is what the heuristic read from a tool's name, description and
// input schema. When OK is false nothing was inferred and Reason says why;
// the tool then falls into the fail-closed bucket.
//
// Reversibility is only set when a verb or the description implies one;
// the other fields that the heuristic cannot see (approvalRecommendation,
// minTrustLevel, and reversibility otherwise) are derived from category and
// riskLevel, see [Inference.complete].
type Inference struct {
	Version       string        `json:"version"`
	OK            bool          `json:"ok"`
	Reason        string        `json:"reason,omitempty"`
	Category      Category      `json:"category,omitempty"`
	RiskLevel     RiskLevel     `json:"riskLevel,omitempty"`
	BlastRadius   BlastRadius   `json:"blastRadius,omitempty"`
	Reversibility Reversibility `json:"reversibility,omitempty"`
	SideEffects   []string      `json:"sideEffects"`
	// Evidence lists the tokens, flags and phrases that decided, in order.
	Evidence []string `json:"evidence"`
}

type verbInfo struct {
	category      Category
	risk          RiskLevel
	sideEffects   []string
	reversibility Reversibility
}

// riskier orders verbs for "worst verb wins": risk first, then category.
func (v verbInfo) riskier(than verbInfo) bool {
	if v.risk.Rank() != than.risk.Rank() {
		return v.risk.Rank() > than.risk.Rank()
	}
	return v.category.rank() > than.category.rank()
}

// builtinVerbs extends the SEP-2793 reference table. destroy, drop, purge,
// truncate and wipe mean destroy/critical here (the SEP maps destroy and drop
// to delete/high): they remove whole tables, caches or volumes rather than
// one item, which is what the SEP's own "destroy" category describes. The
// table is built at its first use (NewInferrer), not when the program
// starts: most runs never infer.
var builtinVerbs = sync.OnceValue(func() map[string]verbInfo {
	m := map[string]verbInfo{}
	add := func(v verbInfo, words ...string) {
		for _, w := range words {
			m[w] = v
		}
	}
	add(verbInfo{category: CategoryRead, risk: RiskLow},
		"get", "list", "ls", "describe", "read", "search", "show", "fetch", "query", "find",
		"lookup", "view", "count", "check", "inspect", "status", "info", "stat", "head", "cat",
		"browse", "retrieve", "download", "explain", "whoami", "version")
	add(verbInfo{category: CategoryRead, risk: RiskMedium, sideEffects: []string{"data_exfiltration"}},
		"export", "dump")
	add(verbInfo{category: CategoryObserve, risk: RiskLow},
		"watch", "monitor", "tail", "logs", "subscribe", "stream", "poll", "trace", "metrics")
	add(verbInfo{category: CategoryUtility, risk: RiskLow},
		"ping", "echo", "validate", "convert", "parse", "calculate", "calc", "compute", "render",
		"encode", "decode", "hash", "diff", "compare", "translate", "summarize", "summarise", "lint")
	add(verbInfo{category: CategoryMutate, risk: RiskMedium},
		"create", "apply", "update", "write", "set", "edit", "move", "mv", "add", "insert", "put",
		"patch", "upload", "rename", "copy", "cp", "modify", "replace", "append", "save", "import",
		"sync", "merge", "commit", "push", "tag", "label", "annotate", "assign", "enable", "disable",
		"start", "scale", "deploy", "rollback", "rollout", "install", "upgrade", "configure",
		"register", "attach", "mount", "schedule", "approve", "reject", "lock", "unlock", "restore",
		"clone", "fork", "cancel", "upsert", "new", "make", "generate", "build")
	add(verbInfo{category: CategoryMutate, risk: RiskMedium, sideEffects: []string{"downtime"}},
		"stop", "restart", "pause", "suspend", "drain", "cordon")
	add(verbInfo{category: CategoryMutate, risk: RiskMedium, sideEffects: []string{"external_notification"}, reversibility: ReversibleNone},
		"send", "notify", "email", "mail", "post", "publish", "message", "sms", "page", "alert",
		"reply", "comment", "tweet", "broadcast", "invite")
	add(verbInfo{category: CategoryMutate, risk: RiskHigh},
		"exec", "execute", "run", "eval", "invoke", "shell", "sudo", "ssh", "script", "reset")
	add(verbInfo{category: CategoryMutate, risk: RiskHigh, sideEffects: []string{"downtime"}},
		"reboot", "shutdown", "poweroff", "failover")
	add(verbInfo{category: CategoryMutate, risk: RiskHigh, sideEffects: []string{"privilege_change"}},
		"grant", "revoke", "chmod", "chown", "promote", "demote", "impersonate", "elevate",
		"authorize", "authorise", "share")
	add(verbInfo{category: CategoryMutate, risk: RiskHigh, sideEffects: []string{"cost"}, reversibility: ReversibleNone},
		"buy", "purchase", "pay", "charge", "transfer", "refund")
	add(verbInfo{category: CategoryDelete, risk: RiskHigh, sideEffects: []string{"state_loss"}},
		"delete", "del", "remove", "rm", "unlink", "erase", "kill", "terminate", "evict",
		"uninstall", "detach", "unregister", "deregister", "flush", "clear", "prune", "unset")
	add(verbInfo{category: CategoryDestroy, risk: RiskCritical, sideEffects: []string{"state_loss"}},
		"destroy", "drop", "purge", "truncate", "wipe", "nuke", "obliterate", "shred", "annihilate")
	return m
})

// riskyFlags are parameter names (see normalizeKey) that widen what a call
// does. Single letters such as "f" or "r" are left out: as JSON property
// names they are too ambiguous to mean force or recursive.
var RiskyFlags = map[string]bool{
	"force": true, "forced": true, "recursive": true, "recursively": true, "recurse": true,
	"cascade": true, "cascading": true, "allnamespaces": true,
}

// scopeTokens map a word of a parameter name to the blast radius a tool
// taking that parameter has.
var ScopeTokens = map[string]BlastRadius{
	"namespace": BlastNamespace, "namespaces": BlastNamespace, "ns": BlastNamespace,
	"project": BlastNamespace, "projects": BlastNamespace,
	"cluster": BlastCluster, "clusters": BlastCluster,
	"org": BlastOrganization, "orgs": BlastOrganization,
	"organization": BlastOrganization, "organizations": BlastOrganization,
	"organisation": BlastOrganization, "organisations": BlastOrganization,
	"tenant": BlastOrganization, "tenants": BlastOrganization,
}

// Description wording that may raise (never lower) what the name says.
// Only inflected forms ("deletes", "removing") count, so a sentence like
// "use this before you delete" does not raise a read tool.
var (
	irreversibleWords = wordSet("permanent", "permanently", "irreversible", "irreversibly",
		"irrevocable", "irrevocably", "unrecoverable")
	irreversiblePhrases = []string{"cannot be undone", "can not be undone", "can t be undone",
		"cannot be reversed", "cannot be recovered", "no undo"}
	deletionWords = wordSet("deletes", "deleting", "removes", "removing", "erases", "erasing",
		"destroys", "destroying", "drops", "dropping", "wipes", "wiping", "purges", "purging",
		"truncates", "truncating")
	clusterPhrases = []string{"all namespaces", "every namespace", "cluster wide", "entire cluster",
		"whole cluster", "across the cluster"}
	organizationPhrases = []string{"organization wide", "organisation wide", "all tenants",
		"every tenant", "entire organization", "entire organisation", "whole organization",
		"across the organization", "all organizations"}
)

const maxDescriptionScan = 8 << 10

func wordSet(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// Inferrer classifies tools from their name, description and input schema.
// It is safe for concurrent use.
type Inferrer struct {
	verbs map[string]verbInfo
}

// NewInferrer returns an inferrer with the built-in verb table plus extra
// verbs (category -> verbs). Extra verbs take the category's usual risk
// (read, observe, utility: low; mutate: medium; delete: high; destroy:
// critical); where one is already known, the riskier reading is kept, so
// extra verbs can never lower a built-in classification.
func NewInferrer(extraVerbs map[string][]string) (*Inferrer, error) {
	builtin := builtinVerbs()
	if len(extraVerbs) == 0 {
		return &Inferrer{verbs: builtin}, nil // only read: shared by every inferrer
	}
	verbs := make(map[string]verbInfo, len(builtin)+len(extraVerbs))
	for k, v := range builtin {
		verbs[k] = v
	}
	cats := make([]string, 0, len(extraVerbs))
	for c := range extraVerbs {
		cats = append(cats, c)
	}
	sort.Strings(cats)
	for _, c := range cats {
		cat := Category(c)
		if !norm.Known(CategoryOrder, cat) {
			return nil, &FieldError{Key: "extraVerbs." + c, Msg: fmt.Sprintf("unknown category %q (want %s)", c, norm.WantList(CategoryOrder))}
		}
		for i, w := range extraVerbs[c] {
			if err := CheckVerb(w); err != nil {
				return nil, &FieldError{Key: fmt.Sprintf("extraVerbs.%s[%d]", c, i), Msg: err.Error()}
			}
			v := verbInfo{category: cat, risk: categoryRisk(cat)}
			if cat == CategoryDelete || cat == CategoryDestroy {
				v.sideEffects = []string{"state_loss"}
			}
			if old, ok := verbs[w]; ok && !v.riskier(old) {
				continue
			}
			verbs[w] = v
		}
	}
	return &Inferrer{verbs: verbs}, nil
}

func CheckVerb(w string) error {
	if w == "" {
		return fmt.Errorf("empty verb")
	}
	for i := 0; i < len(w); i++ {
		if !norm.IsLower(w[i]) && !norm.IsDigit(w[i]) {
			return fmt.Errorf("verb %q must be one lower-case ASCII word (letters and digits)", w)
		}
	}
	return nil
}

func categoryRisk(c Category) RiskLevel {
	switch c {
	case CategoryMutate:
		return RiskMedium
	case CategoryDelete:
		return RiskHigh
	case CategoryDestroy:
		return RiskCritical
	}
	return RiskLow
}

// Infer classifies one tool.
//
// The name is split into words at _ - . / spaces and camelCase; each word
// that is a known verb counts and the worst verb wins. A name with any
// non-ASCII character is not inferred at all: look-alike letters could hide
// "drор" behind a harmless "get". Names without a known verb are not
// inferred either. The description may only raise; risky flags in the
// input schema's top-level properties raise riskLevel one grade (once,
// however many there are); scope parameters set blastRadius, the widest
// winning, else item.
func (in *Inferrer) Infer(tool ToolInfo) Inference {
	inf := Inference{Version: InferenceVersion, SideEffects: []string{}, Evidence: []string{}}
	switch {
	case strings.TrimSpace(tool.Name) == "":
		inf.Reason = "the tool has no name"
		return inf
	case !norm.IsASCII(tool.Name):
		inf.Reason = "the tool name contains non-ASCII characters"
		return inf
	}
	var worst verbInfo
	found := false
	var sideEffects []string
	for _, tok := range norm.SplitTokens(tool.Name) {
		v, ok := in.verbs[tok]
		if !ok {
			continue
		}
		inf.Evidence = append(inf.Evidence, fmt.Sprintf("verb %q: %s/%s", tok, v.category, v.risk))
		sideEffects = append(sideEffects, v.sideEffects...)
		if v.reversibility != "" {
			inf.Reversibility = norm.MaxEnum(ReversibilityOrder, OrDefault(inf.Reversibility, ReversibleAuto), v.reversibility)
		}
		if !found || v.riskier(worst) {
			worst, found = v, true
		}
	}
	if !found {
		inf.Reason = "no known verb in the tool name"
		inf.Evidence = nil
		return inf
	}
	inf.OK = true
	inf.Category, inf.RiskLevel, inf.BlastRadius = worst.category, worst.risk, BlastItem

	in.readDescription(&inf, tool.Description)

	props := schemaProperties(tool.InputSchema)
	bumped := false
	for _, name := range props {
		if RiskyFlags[norm.NormalizeKey(name)] && !bumped {
			bumped = true
			before := inf.RiskLevel
			inf.RiskLevel = norm.RaiseBy(RiskOrder, inf.RiskLevel, 1)
			if before == inf.RiskLevel {
				inf.Evidence = append(inf.Evidence, fmt.Sprintf("risky flag %q: riskLevel already %s", name, before))
			} else {
				inf.Evidence = append(inf.Evidence, fmt.Sprintf("risky flag %q: riskLevel %s -> %s", name, before, inf.RiskLevel))
			}
		}
		for _, tok := range norm.SplitTokens(name) {
			if b, ok := ScopeTokens[tok]; ok && b.Rank() > inf.BlastRadius.Rank() {
				inf.BlastRadius = b
				inf.Evidence = append(inf.Evidence, fmt.Sprintf("scope parameter %q: blastRadius %s", name, b))
			}
		}
	}
	inf.SideEffects = NormalizeSideEffects(sideEffects)
	return inf
}

func OrDefault[T ~string](v, def T) T {
	if v == "" {
		return def
	}
	return v
}

func (in *Inferrer) readDescription(inf *Inference, desc string) {
	if len(desc) > maxDescriptionScan {
		desc = desc[:maxDescriptionScan]
	}
	words := strings.FieldsFunc(strings.ToLower(desc), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
	text := " " + strings.Join(words, " ") + " "
	raise := func(what string, cat Category, risk RiskLevel) {
		if cat != "" && cat.rank() > inf.Category.rank() {
			inf.Category = cat
		}
		if risk.Rank() > inf.RiskLevel.Rank() {
			inf.RiskLevel = risk
		}
		inf.Evidence = append(inf.Evidence, "description "+what)
	}
	for _, w := range words {
		if irreversibleWords[w] {
			inf.Reversibility = ReversibleNone
			raise(fmt.Sprintf("says %q: reversibility none, riskLevel at least high", w), "", RiskHigh)
			break
		}
	}
	for _, p := range irreversiblePhrases {
		if strings.Contains(text, " "+p+" ") {
			inf.Reversibility = ReversibleNone
			raise(fmt.Sprintf("says %q: reversibility none, riskLevel at least high", p), "", RiskHigh)
			break
		}
	}
	for _, w := range words {
		if deletionWords[w] {
			raise(fmt.Sprintf("says %q: category at least delete, riskLevel at least high", w), CategoryDelete, RiskHigh)
			break
		}
	}
	scope := func(phrases []string, b BlastRadius) {
		for _, p := range phrases {
			if strings.Contains(text, " "+p+" ") {
				if b.Rank() > inf.BlastRadius.Rank() {
					inf.BlastRadius = b
				}
				inf.Evidence = append(inf.Evidence, fmt.Sprintf("description says %q: blastRadius at least %s", p, b))
				return
			}
		}
	}
	scope(clusterPhrases, BlastCluster)
	scope(organizationPhrases, BlastOrganization)
}

// schemaProperties returns the top-level property names of an input schema
// in sorted order; an unreadable schema has none.
func schemaProperties(schema json.RawMessage) []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return nil
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Complete fills in every SEP-2793 field from the inference alone:
// reversibility from the category (unless a verb or the description said
// more), approvalRecommendation and minTrustLevel from the risk level, after
// the consistency floors. Every source is "inferred". When nothing was
// inferred the result is [FailClosed].
func (inf Inference) Complete() Effective {
	if !inf.OK {
		e := FailClosed()
		e.Notes = []string{"not inferred: " + inf.Reason}
		return e
	}
	e := Effective{
		Category:         inf.Category,
		RiskLevel:        inf.RiskLevel,
		BlastRadius:      inf.BlastRadius,
		SideEffects:      NormalizeSideEffects(inf.SideEffects),
		Source:           AllSources(SourceInferred),
		InferenceVersion: inf.Version,
	}
	e.Notes = ApplyFloors(&e)
	e.Reversibility = norm.MaxEnum(ReversibilityOrder, ReversibilityFor(e.Category), OrDefault(inf.Reversibility, ReversibleAuto))
	e.ApprovalRecommendation = ApprovalFor(e.RiskLevel)
	e.MinTrustLevel = TrustFor(e.RiskLevel)
	return e
}
