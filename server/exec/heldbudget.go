package exec

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/hold"
	"github.com/boxkite/boxkite/server/model"
)

// HeldBound is what a JSON exec of maxOutput bytes a stream reserves of
// the held-output budget: hold.Answer of its largest answer (stdout and
// stderr, each at most maxOutput).
func HeldBound(maxOutput int64) int64 {
	return hold.Answer(2 * maxOutput)
}

// HeldBudget bounds the memory the answers the control plane holds whole
// take at once, server-wide and per account, so one tenant cannot take
// the control plane's memory (issue 27, sessions 22 and 23). A JSON exec
// reserves HeldBound before its command runs and gives it back when its
// handler ends; an interpreter run and a process output page reserve
// hold.Interpreter and hold.ProcessOutput likewise (Reserve, through the
// proxy's and the E2B port's Deps); a streamed exec holds nothing and
// reserves nothing.
type HeldBudget struct {
	total, perAccount int64

	mu        sync.Mutex
	used      int64
	byAccount map[string]int64
}

// NewHeldBudget returns a budget of total bytes, of which one account may
// hold perAccount.
func NewHeldBudget(total, perAccount int64) *HeldBudget {
	return &HeldBudget{total: total, perAccount: perAccount, byAccount: map[string]int64{}}
}

// Used is what the budget has handed out, server-wide and to account.
func (b *HeldBudget) Used(account string) (total, acct int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.byAccount[account]
}

// Reserve takes n bytes for account before what (an operation: "exec",
// "interpreter exec") asks the sidecar, or answers why it cannot: 429
// limit_exceeded when the account's share is spent, 503 host_capacity
// when the server's is, both with hint. release gives them back, once,
// whatever calls it.
func (b *HeldBudget) Reserve(account string, n int64, what, hint string) (release func(), err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if mine := b.byAccount[account]; mine+n > b.perAccount {
		// A fair-use refusal, shaped as limits.LimitError's.
		return nil, &api.Error{
			Status: http.StatusTooManyRequests, Code: api.CodeLimitExceeded,
			Message: fmt.Sprintf("%s refused: your account's JSON answers already hold %d bytes of output in the server's memory; an account may hold at most %d at once, and this one may need %d",
				what, mine, b.perAccount, n),
			Hint:    hint,
			Details: map[string]any{"resource": api.HeldOutput, "used": mine, "limit": b.perAccount, "requested": n},
		}
	}
	if b.used+n > b.total {
		e := (&model.HostLimitError{Resource: api.HeldOutput, Used: b.used, Limit: b.total, Hint: hint}).APIError(what)
		e.Details = map[string]any{"resource": api.HeldOutput, "used": b.used, "limit": b.total, "requested": n}
		return nil, e
	}
	b.used += n
	b.byAccount[account] += n
	var once sync.Once
	return func() { once.Do(func() { b.give(account, n) }) }, nil
}

func (b *HeldBudget) give(account string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.byAccount[account] -= n; b.byAccount[account] <= 0 {
		delete(b.byAccount, account)
	}
}

// heldHint is the way around an exec's held-output refusal: a streamed
// exec holds nothing.
const heldHint = "stream the output instead (`Accept: application/x-ndjson`; `boxkite exec` streams), " +
	"or ask for a smaller max_output_bytes, or retry when other execs have answered"

// DefaultHeldOutput is the default server-wide budget of held exec
// output: an eighth of the host's memory (MemTotal), 1 GiB when it cannot
// be read.
func DefaultHeldOutput() int64 {
	const fallback = 1 << 30
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return fallback
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok || string(name) != "MemTotal" {
			continue
		}
		kb, err := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte(" kB"))), 10, 64)
		if err != nil || kb <= 0 {
			return fallback
		}
		return kb << 10 / 8
	}
	return fallback
}

// reserveHeld reserves a JSON exec's held output for the request's
// account; streamed execs hold nothing and reserve nothing.
func (s *Service) reserveHeld(sb *model.Sandbox, req api.ExecRequest, streamed bool) (func(), error) {
	if streamed {
		return func() {}, nil
	}
	return s.d.HeldOutput.Reserve(sb.AccountID, HeldBound(req.MaxOutputBytes), "exec", heldHint)
}
