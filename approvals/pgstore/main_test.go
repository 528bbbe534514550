package pgstore

import (
	"fmt"
	"os"
	"testing"

	"github.com/agenthost/agenthost/internal/pgtest"
)

// cluster is the package's throwaway PostgreSQL; each test gets its own
// database in it.
var cluster *pgtest.Cluster

func TestMain(m *testing.M) {
	c, err := pgtest.StartCluster()
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgstore tests need PostgreSQL: %v\n", err)
		os.Exit(1)
	}
	cluster = c
	code := m.Run()
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stop PostgreSQL: %v\n", err)
	}
	os.Exit(code)
}
