package host_test

import (
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/historytest"
)

func TestMemoryHistoryConformance(t *testing.T) {
	historytest.Run(t, func(*testing.T) host.History { return host.NewMemoryHistory() })
}
