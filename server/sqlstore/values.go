package sqlstore

import (
	"fmt"
	"math"
)

// valueError is a value its column cannot hold, found before the
// statement runs: what PostgreSQL would refuse as a data exception, or
// what its driver refuses to encode (an int beyond an INTEGER column's
// range fails in pgx with no SQLSTATE at all). It carries the SQLSTATE the
// database would have given, so the control plane answers it as it
// answers the database's own refusals, as the client's 422
// (model.RefusedValue), and alike on SQLite, which would have kept it.
type valueError struct{ state, msg string }

func (e *valueError) Error() string    { return e.msg }
func (e *valueError) SQLState() string { return e.state }

// checkInt4 refuses n when an INTEGER column cannot hold it.
func checkInt4(column string, n int) error {
	if n < math.MinInt32 || n > math.MaxInt32 {
		return &valueError{state: "22003", msg: fmt.Sprintf("%s %d is out of the range of an INTEGER column", column, n)}
	}
	return nil
}
