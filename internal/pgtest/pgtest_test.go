package pgtest

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestClusterStartsServesAndStops(t *testing.T) {
	c, err := StartCluster()
	if err != nil {
		t.Fatal(err)
	}
	dsn := c.NewDatabase(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT 40 + 2").Scan(&n); err != nil || n != 42 {
		t.Fatalf("query: %d, %v", n, err)
	}
	_ = conn.Close(ctx)
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("cluster directory left behind: %v", err)
	}
	if _, err := pgx.Connect(ctx, dsn); err == nil {
		t.Error("the cluster still answers after Stop")
	}
}
