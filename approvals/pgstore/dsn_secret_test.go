package pgstore

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestErrorsHideThePassword: a store, an audit sink or a verify that cannot
// reach its database fails with an error that never repeats the DSN's
// password (the CLI prints these errors).
func TestErrorsHideThePassword(t *testing.T) {
	const canary = "pw-canary-4711"
	dsns := []string{
		"postgres://agent:" + canary + "@127.0.0.1:1/audit?connect_timeout=2",
		"host=127.0.0.1 port=1 user=agent password=" + canary + " dbname=audit connect_timeout=2",
		"postgres://agent:" + canary + "@127.0.0.1:1/audit?sslmode=bogus",
	}
	for _, dsn := range dsns {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err1 := Open(ctx, dsn, Options{})
		_, err2 := OpenAuditSink(ctx, dsn, AuditOptions{})
		_, err3 := VerifyAudit(ctx, dsn)
		cancel()
		for i, err := range []error{err1, err2, err3} {
			if err == nil {
				t.Fatalf("%d: no error for an unreachable database", i)
			}
			if strings.Contains(err.Error(), canary) {
				t.Errorf("%d: the error repeats the password: %v", i, err)
			}
		}
	}
}
