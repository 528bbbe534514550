package eventlog

import (
	"slices"
	"strconv"

	"github.com/agenthost/agenthost/host"
)

// eventEncodeError replaces an event that cannot be encoded.
const eventEncodeError = `{"type":"error","kind":"internal","error":"an event could not be encoded"}`

// AppendFrame appends the SSE frame of a turn's event number id: its id,
// its type as the event name, its JSON as the data.
func AppendFrame(dst []byte, id int64, e *host.Event) []byte {
	dst = append(dst, "id: "...)
	dst = strconv.AppendInt(dst, id, 10)
	if e.Type != "" {
		dst = append(dst, "\nevent: "...)
		dst = append(dst, e.Type...)
	}
	dst = append(dst, "\ndata: "...)
	if enc, err := appendEventJSON(dst, e); err == nil {
		dst = enc
	} else {
		dst = append(dst, eventEncodeError...)
	}
	return append(dst, "\n\n"...)
}

// Frames are cut from shared chunks: a turn's usual handful of events
// costs one allocation, not one each.
const (
	frameChunk   = 2 << 10
	minFrameRoom = 256 // a chunk with less room left is not started on
)

// FrameArena hands out the frames of one turn's events. Only the turn's
// goroutine uses it; a frame handed out is never written again (later
// frames go after it, or into a new chunk), so streams read it freely.
type FrameArena struct{ buf []byte }

// Frame returns the SSE frame of event number id, cut from the arena.
func (a *FrameArena) Frame(id int64, e *host.Event) []byte {
	if cap(a.buf)-len(a.buf) < minFrameRoom {
		a.buf = make([]byte, 0, frameChunk)
	}
	start, room := len(a.buf), cap(a.buf)
	a.buf = AppendFrame(a.buf, id, e)
	f := a.buf[start:len(a.buf):len(a.buf)]
	if cap(a.buf) != room {
		// The frame outgrew the chunk, and appending moved all to an
		// array up to twice the frame's size: the log keeps a copy of
		// just the frame, and the next frame starts a new chunk.
		f, a.buf = slices.Clip(slices.Clone(f)), nil
	}
	return f
}
