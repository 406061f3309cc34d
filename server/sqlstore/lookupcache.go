package sqlstore

import (
	"bytes"
	"slices"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/sqlstore/sqldb"
)

// exemptTables are the tables whose changes do not move the generation
// (sqldb.Generation): those written on an exec's path (the audit chain by
// every exec, the idempotency record of an exec that carries a key, the
// webhook deliveries of an account with subscriptions). No cached lookup
// reads them (TestLookupQueriesReadNoExemptTable), and every other table
// moves it (TestGenerationEveryTable).
var exemptTables = map[string]bool{
	"exec_log": true, "exec_log_heads": true, "idempotency_keys": true, "webhook_deliveries": true,
}

// lookups are the cached per-request reads of a SQLite store.
type lookups struct {
	keys       *sqldb.Cache[string, keyAccount]        // by key hash
	sandboxes  *sqldb.Cache[[2]string, *model.Sandbox] // by account id, sandbox id
	allowlists *sqldb.Cache[string, []api.CommandRule] // by account id; nil: none
}

type keyAccount struct {
	key  *model.APIKey
	acct *model.Account
}

func newLookups(g *sqldb.Generation) *lookups {
	return &lookups{
		keys:       sqldb.NewCache[string](g, cloneKeyAccount),
		sandboxes:  sqldb.NewCache[[2]string](g, cloneSandbox),
		allowlists: sqldb.NewCache[string](g, cloneRules),
	}
}

func cloneKeyAccount(ka keyAccount) keyAccount {
	k, a := *ka.key, *ka.acct
	k.RevokedAt, k.LastUsedAt, k.ExpiresAt = cloneTime(k.RevokedAt), cloneTime(k.LastUsedAt), cloneTime(k.ExpiresAt)
	if a.Org != nil {
		o := *a.Org
		a.Org = &o
	}
	return keyAccount{&k, &a}
}

func cloneSandbox(sb *model.Sandbox) *model.Sandbox {
	c := *sb
	c.DestroyedAt, c.PausedAt = cloneTime(c.DestroyedAt), cloneTime(c.PausedAt)
	c.Endpoint.CertPEM = bytes.Clone(c.Endpoint.CertPEM)
	c.PausedProcesses = slices.Clone(c.PausedProcesses)
	for i, p := range c.PausedProcesses {
		if p.ExitCode != nil {
			code := *p.ExitCode
			c.PausedProcesses[i].ExitCode = &code
		}
	}
	return &c
}

func cloneRules(rules []api.CommandRule) []api.CommandRule {
	rules = slices.Clone(rules)
	for i, r := range rules {
		rules[i].ArgsAllow, rules[i].ArgsDeny = slices.Clone(r.ArgsAllow), slices.Clone(r.ArgsDeny)
	}
	return rules
}

func cloneTime[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}
