package approvals_test

import (
	"testing"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/storetest"
)

// Every handle of the in-memory backend is the same store.
func TestMemStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func(t *testing.T) approvals.Store {
		s := approvals.NewMemStore(approvals.MemStoreOptions{})
		return func(*testing.T) approvals.Store { return s }
	})
}
