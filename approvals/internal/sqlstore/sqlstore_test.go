package sqlstore

import (
	"strings"
	"testing"
)

func TestDialectPlaceholders(t *testing.T) {
	tests := []struct {
		numbered bool
		in, want string
	}{
		{false, "SELECT doc FROM t WHERE id = ?", "SELECT doc FROM t WHERE id = ?"},
		{true, "SELECT doc FROM t WHERE id = ?", "SELECT doc FROM t WHERE id = $1"},
		{true, "UPDATE t SET a = ?, b = ? WHERE id = ?", "UPDATE t SET a = $1, b = $2 WHERE id = $3"},
		{true, "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"},
		{true, "SELECT 1", "SELECT 1"},
	}
	for _, tc := range tests {
		d := Dialect{Numbered: tc.numbered}
		if got := d.sql(tc.in); got != tc.want {
			t.Errorf("numbered %v: sql(%q) = %q, want %q", tc.numbered, tc.in, got, tc.want)
		}
	}
}

// Every shared statement is rendered for a dialect: none keeps a ? where
// placeholders are numbered, and locking reads lock only where rows are.
func TestQueriesRendered(t *testing.T) {
	pg := (&Dialect{Numbered: true, RowLocks: true}).queries()
	for _, q := range []string{pg.insertApproval, pg.selectApproval, pg.lockedRead, pg.listOpen, pg.listSettled, pg.updateApproval,
		pg.putGrant, pg.selectGrant, pg.deleteGrant, pg.selectHead, pg.lockHead, pg.createHead, pg.putHead, pg.insertAudit, pg.listChains, pg.selectLinks} {
		if q == "" || strings.Contains(q, "?") {
			t.Errorf("numbered statement %q", q)
		}
	}
	if !strings.HasSuffix(pg.lockedRead, " FOR UPDATE") || !strings.HasSuffix(pg.lockHead, " FOR UPDATE") {
		t.Errorf("row-locking reads: %q, %q", pg.lockedRead, pg.lockHead)
	}
	lite := (&Dialect{}).queries()
	if strings.Contains(lite.lockedRead, "FOR UPDATE") || strings.Contains(lite.lockHead, "FOR UPDATE") {
		t.Errorf("reads under a database lock: %q, %q", lite.lockedRead, lite.lockHead)
	}
}
