package demo

import (
	"errors"
	"strings"
	"testing"
)

func testDB() *database {
	return newSQLServer("t").dbs["checkout"]
}

func TestQuery(t *testing.T) {
	for _, tc := range []struct {
		q       string
		want    string // the whole output, or with wantErr a part of the error
		wantErr bool
	}{
		{"SELECT id, customer, total, note FROM orders WHERE status = 'pending'",
			"id | customer | total | note\n1001 | Ada | 42.5 | gift wrap please\n1002 | Grace | 17 | " + injection + "\n(2 rows)", false},
		{"select ID from ORDERS where Status='pending' and total > 20", "id\n1001\n(1 rows)", false},
		{"SELECT id FROM orders WHERE status = 'pending' OR status = 'shipped' ORDER BY total DESC", "id\n1001\n1002\n1004\n(3 rows)", false},
		{"SELECT id FROM orders ORDER BY customer LIMIT 2;", "id\n1001\n1004\n(2 rows)", false},
		{"SELECT COUNT(*) FROM orders WHERE status <> 'cancelled'", "COUNT(*)\n3\n(1 rows)", false},
		{"SELECT id FROM orders WHERE customer LIKE 'g%'", "id\n1002\n(1 rows)", false},
		{"SELECT id FROM orders WHERE customer NOT LIKE '%a%'", "id\n1003\n(1 rows)", false},
		{"SELECT id FROM orders WHERE id IN (1003, '1004')", "id\n1003\n1004\n(2 rows)", false},
		{"SELECT id FROM orders WHERE NOT (status = 'pending' OR note = '')", "id\n(0 rows)", false},
		{"SELECT id FROM orders WHERE note IS NULL", "id\n(0 rows)", false},
		{`SELECT "id" FROM orders WHERE id >= 1003 AND id <= 1003`, "id\n1003\n(1 rows)", false},
		{"SELECT * FROM salaries", "no such table: salaries", true},
		{"SELECT salary FROM orders", "no such column: salary", true},
		{"SELECT id FROM orders WHERE", "incomplete statement", true},
		{"SELECT id FROM orders WHERE status = 'pending", "unterminated string", true},
		{"SELECT id FROM orders; DROP TABLE orders", `syntax error near "DROP"`, true},
		{"SELECT id FROM orders WHERE id = 1 UNION SELECT name FROM salaries", `syntax error near "UNION"`, true},
		{"SELECT id FROM orders LIMIT -1", "LIMIT needs a whole number", true},
		{"SELECT id FROM orders WHERE " + strings.Repeat("(", 100) + "1=1" + strings.Repeat(")", 100), "nested too deeply", true},
		{"SELECT id FROM orders WHERE id = 1 " + strings.Repeat("OR id = 1 ", 2000), "too long", true},
	} {
		got, err := testDB().query(tc.q)
		if tc.wantErr {
			if err == nil || !errors.Is(err, errSQL) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("query(%q) = %q, %v; want an error with %q", tc.q, got, err, tc.want)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("query(%q) = %q, %v; want %q", tc.q, got, err, tc.want)
		}
	}
}

func TestDeleteAndDrop(t *testing.T) {
	db := testDB()
	if _, err := db.deleteWhere("orders", "status = "); err == nil {
		t.Fatal("a bad condition deleted")
	}
	if _, err := db.deleteWhere("salaries", "1 = 1"); err == nil || !strings.Contains(err.Error(), "no such table") {
		t.Fatalf("delete on a missing table: %v", err)
	}
	n, err := db.deleteWhere("orders", "status = 'cancelled'")
	if err != nil || n != 1 {
		t.Fatalf("deleted %d, %v; want 1", n, err)
	}
	if got, _ := db.query("SELECT COUNT(*) FROM orders"); got != "COUNT(*)\n3\n(1 rows)" {
		t.Errorf("after delete: %q", got)
	}
	db.dropAll()
	if _, err := db.query("SELECT * FROM orders"); err == nil || !strings.Contains(err.Error(), "no such table: orders") {
		t.Errorf("after drop: %v", err)
	}
	// The instances are separate: checkout's drop leaves payroll alone.
	s := newSQLServer("t")
	s.dbs["checkout"].dropAll()
	if got, err := s.dbs["payroll"].query("SELECT COUNT(*) FROM salaries"); err != nil || !strings.Contains(got, "\n2\n") {
		t.Errorf("payroll after checkout's drop: %q, %v", got, err)
	}
}

func TestLike(t *testing.T) {
	for _, tc := range []struct {
		s, p string
		want bool
	}{
		{"Grace", "g%", true}, {"Grace", "%ACE", true}, {"Grace", "G_ace", true}, {"Grace", "G_ce", false},
		{"", "%", true}, {"", "_", false}, {"abcabc", "%b%c", true}, {"abc", "a%%c", true}, {"abc", "abcd", false},
	} {
		if got := like(tc.s, tc.p); got != tc.want {
			t.Errorf("like(%q, %q) = %t, want %t", tc.s, tc.p, got, tc.want)
		}
	}
}

// FuzzQuery: no statement panics or loops; every failure is an errSQL.
func FuzzQuery(f *testing.F) {
	for _, seed := range []string{
		"SELECT * FROM orders",
		"SELECT id, note FROM orders WHERE (status = 'pending' AND NOT total < 20) OR id IN (1, 2) ORDER BY id DESC LIMIT 1",
		"SELECT COUNT(*) FROM orders WHERE customer NOT LIKE '%a_' AND note IS NOT NULL",
		"SELECT `id` FROM \"orders\" WHERE id == -1.5e",
		"SELECT 'it''s' FROM orders", "SELECT", "", "(((", "SELECT id FROM orders WHERE id = 1 = 2",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, q string) {
		db := testDB()
		if _, err := db.query(q); err != nil && !errors.Is(err, errSQL) {
			t.Fatalf("query(%q): %v is not an SQL error", q, err)
		}
		if _, err := db.deleteWhere("orders", q); err != nil && !errors.Is(err, errSQL) {
			t.Fatalf("deleteWhere(%q): %v is not an SQL error", q, err)
		}
	})
}
