package demo

import (
	"github.com/agenthost/agenthost/internal/syncbuf"
)

// syncBuffer is a buffer safe to read while others write to it.
type syncBuffer = syncbuf.Buffer
