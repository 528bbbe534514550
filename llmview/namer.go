package llmview

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// Namer assigns exposed names like ExposedNames, incrementally: when one
// server's tool list changes, only that server's tools (and the rare tools
// of other servers whose names collided with them) are named again. A
// catalog of many servers then re-lists one server without renaming the
// rest. Not safe for concurrent use.
type Namer struct {
	servers map[string][]Ref
	names   map[Ref]string
	// clean counts, per case-folded name, the tools whose plain
	// "server__tool" is valid and would be that name; byClean lists them.
	clean   map[string]int
	byClean map[string][]Ref
	taken   map[string]Ref // case-folded assigned name -> its tool
}

// NewNamer returns an empty Namer.
func NewNamer() *Namer {
	return &Namer{
		servers: map[string][]Ref{},
		names:   map[Ref]string{},
		clean:   map[string]int{},
		byClean: map[string][]Ref{},
		taken:   map[string]Ref{},
	}
}

// Reserve makes room for about tools tools when the Namer is still empty
// (a first view of a large catalog names every tool at once), so that its
// maps do not grow step by step; otherwise it does nothing.
func (n *Namer) Reserve(servers, tools int) {
	if len(n.servers) > 0 || len(n.names) > 0 {
		return
	}
	n.servers = make(map[string][]Ref, servers)
	n.names = make(map[Ref]string, tools)
	n.clean = make(map[string]int, tools)
	n.byClean = make(map[string][]Ref, tools)
	n.taken = make(map[string]Ref, tools)
}

// Name is the exposed name of a tool ("" when unknown).
func (n *Namer) Name(r Ref) string { return n.names[r] }

// SetServer replaces a server's tools (nil removes the server) and returns
// the servers whose tools' names changed, the given server included. When
// the server lists the same tool names as before (a re-listing that changed
// definitions only), nothing is renamed and it returns nil: the cost is
// then one comparison of the server's names.
func (n *Namer) SetServer(server string, tools []string) map[string]bool {
	refs := make([]Ref, 0, len(tools))
	for _, t := range tools {
		refs = append(refs, Ref{Server: server, Tool: t})
	}
	slices.SortFunc(refs, compareRefs)
	refs = slices.Compact(refs)
	if slices.Equal(refs, n.servers[server]) {
		return nil
	}
	changed := map[string]bool{server: true}
	affected := map[string]bool{}
	for _, r := range n.servers[server] {
		n.release(r)
		if b, ok := cleanBase(r); ok {
			n.clean[b.folded]--
			n.byClean[b.folded] = slices.DeleteFunc(n.byClean[b.folded], func(x Ref) bool { return x == r })
			if n.clean[b.folded] <= 0 {
				delete(n.clean, b.folded)
				delete(n.byClean, b.folded)
			}
			affected[b.folded] = true
		}
	}
	if len(tools) == 0 {
		delete(n.servers, server)
	} else {
		n.servers[server] = refs
	}
	// bases are the server's tools' plain names, computed once.
	bases := make([]plainName, len(refs))
	for i, r := range refs {
		if b, ok := cleanBase(r); ok {
			bases[i] = b
			n.clean[b.folded]++
			n.byClean[b.folded] = append(n.byClean[b.folded], r)
			affected[b.folded] = true
		}
	}
	// Name again: this server's tools, and any other tool whose plain name
	// just became (or stopped being) a collision.
	var others []Ref
	for b := range affected {
		for _, r := range n.byClean[b] {
			if r.Server != server {
				others = append(others, r)
			}
		}
	}
	slices.SortFunc(others, compareRefs)
	others = slices.Compact(others)
	for _, r := range others {
		n.release(r)
	}
	// again is refs and others in order (refs of one server sort together,
	// so merging keeps compareRefs' order); baseOf gives each one's plain
	// name.
	again := slices.Grow(slices.Clone(refs), len(others))
	again = append(again, others...)
	againBases := slices.Grow(bases, len(others))
	for _, r := range others {
		b, _ := cleanBase(r)
		againBases = append(againBases, b)
	}
	order := make([]int, len(again))
	for i := range order {
		order[i] = i
	}
	if len(others) > 0 {
		slices.SortStableFunc(order, func(a, b int) int { return compareRefs(again[a], again[b]) })
	}
	// Plain names first, so a hashed name never takes a plain one.
	for _, i := range order {
		if b := againBases[i]; b.plain != "" && n.clean[b.folded] == 1 {
			if _, used := n.taken[b.folded]; !used {
				n.assignFolded(again[i], b.plain, b.folded)
			}
		}
	}
	for _, i := range order {
		r := again[i]
		if _, named := n.names[r]; !named {
			n.assign(r, n.hashed(r))
		}
		if r.Server != server {
			changed[r.Server] = true
		}
	}
	return changed
}

func (n *Namer) release(r Ref) {
	if name, ok := n.names[r]; ok {
		delete(n.taken, strings.ToLower(name))
		delete(n.names, r)
	}
}

func (n *Namer) assign(r Ref, name string) {
	n.assignFolded(r, name, strings.ToLower(name))
}

// assignFolded is assign with the name's case-folded form known.
func (n *Namer) assignFolded(r Ref, name, folded string) {
	n.names[r] = name
	n.taken[folded] = r
}

// hashed is the sanitised name with a hash of the true (server, tool),
// lengthened until it is free.
func (n *Namer) hashed(r Ref) string {
	base := sanitize(r.Server) + "__" + sanitize(r.Tool)
	sum := sha256.Sum256([]byte(r.Server + "\x00" + r.Tool))
	digest := hex.EncodeToString(sum[:])
	for size := 8; ; size += 4 {
		suffix := "_" + digest[:size]
		prefix := base
		if len(prefix)+len(suffix) > maxNameLen {
			prefix = prefix[:maxNameLen-len(suffix)]
		}
		name := prefix + suffix
		if _, used := n.taken[strings.ToLower(name)]; !used || size >= len(digest) {
			return name
		}
	}
}

// plainName is a tool's "server__tool" and its case-folded form.
type plainName struct {
	plain, folded string
}

// cleanBase is the plain name of a tool whose "server__tool" is already a
// valid exposed name.
func cleanBase(r Ref) (plainName, bool) {
	if len(r.Server)+2+len(r.Tool) > maxNameLen || !plainPart(r.Server) || !plainPart(r.Tool) {
		return plainName{}, false
	}
	plain := r.Server + "__" + r.Tool
	return plainName{plain: plain, folded: strings.ToLower(plain)}, true
}

// plainPart reports whether s is non-empty and sanitize leaves it as it is.
func plainPart(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
