package sqldb

import "testing"

func TestDollarPlaceholders(t *testing.T) {
	tests := []struct{ in, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`SELECT a FROM t WHERE b = ? AND c IN (?, ?)`, `SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)`},
		{`UPDATE t SET x = '?' WHERE y = ?`, `UPDATE t SET x = '?' WHERE y = $1`},
		{`SELECT "weird?col" FROM t WHERE z = ?`, `SELECT "weird?col" FROM t WHERE z = $1`},
		{`INSERT INTO t VALUES (?, 'it''s ?', ?)`, `INSERT INTO t VALUES ($1, 'it''s ?', $2)`},
	}
	for _, tt := range tests {
		if got := DollarPlaceholders(tt.in); got != tt.want {
			t.Errorf("DollarPlaceholders(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
