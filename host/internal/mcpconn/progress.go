package mcpconn

import (
	"strconv"
	"sync"
	"unicode/utf8"
)

// progressRoutes hands a server's notifications/progress to the call whose
// progressToken it names. It holds one entry per call in flight that asked
// for progress (removed when the attempt returns), so it is bounded by the
// calls in flight; a notification for no such call is dropped.
type progressRoutes struct {
	mu     sync.Mutex
	seq    uint64
	routes map[string]func(Progress)
}

// add registers fn under a new token; stop removes it.
func (r *progressRoutes) add(fn func(Progress)) (token string, stop func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	token = "agenthost-" + strconv.FormatUint(r.seq, 10)
	if r.routes == nil {
		r.routes = map[string]func(Progress){}
	}
	r.routes[token] = fn
	return token, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.routes, token)
	}
}

// deliver routes the params of one notifications/progress. Anything that
// is not a known token with a number for progress is dropped.
func (r *progressRoutes) deliver(params map[string]any) {
	token, _ := params["progressToken"].(string)
	progress, ok := params["progress"].(float64)
	if token == "" || !ok {
		return
	}
	total, _ := params["total"].(float64)
	message, _ := params["message"].(string)
	r.mu.Lock()
	fn := r.routes[token]
	r.mu.Unlock()
	if fn == nil {
		return
	}
	fn(Progress{Progress: progress, Total: total, Message: capRunes(message, maxProgressMessage)})
}

func capRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
