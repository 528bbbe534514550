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
			n.clean[b]--
			n.byClean[b] = slices.DeleteFunc(n.byClean[b], func(x Ref) bool { return x == r })
			if n.clean[b] <= 0 {
				delete(n.clean, b)
				delete(n.byClean, b)
			}
			affected[b] = true
		}
	}
	if len(tools) == 0 {
		delete(n.servers, server)
	} else {
		n.servers[server] = refs
	}
	for _, r := range refs {
		if b, ok := cleanBase(r); ok {
			n.clean[b]++
			n.byClean[b] = append(n.byClean[b], r)
			affected[b] = true
		}
	}
	// Name again: this server's tools, and any other tool whose plain name
	// just became (or stopped being) a collision.
	again := slices.Clone(refs)
	for b := range affected {
		for _, r := range n.byClean[b] {
			if r.Server != server {
				again = append(again, r)
			}
		}
	}
	slices.SortFunc(again, compareRefs)
	again = slices.Compact(again)
	for _, r := range again {
		if r.Server != server {
			n.release(r)
		}
	}
	// Plain names first, so a hashed name never takes a plain one.
	for _, r := range again {
		if b, ok := cleanBase(r); ok && n.clean[b] == 1 {
			if _, used := n.taken[b]; !used {
				n.assign(r, r.Server+"__"+r.Tool)
			}
		}
	}
	for _, r := range again {
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
	n.names[r] = name
	n.taken[strings.ToLower(name)] = r
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

// cleanBase is the case-folded plain name of a tool whose "server__tool"
// is already a valid exposed name.
func cleanBase(r Ref) (string, bool) {
	plain := r.Server + "__" + r.Tool
	if len(plain) > maxNameLen || sanitize(r.Server) != r.Server || sanitize(r.Tool) != r.Tool || r.Server == "" || r.Tool == "" {
		return "", false
	}
	return strings.ToLower(plain), true
}
