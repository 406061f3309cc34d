package sqlstore

import (
	"bytes"
	"slices"
	"sync"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// maxCached bounds the entries of one lookup cache; past it the cache
// starts over (it holds what recent requests used, a few per caller).
const maxCached = 4096

// genCache answers a lookup from memory while the store's generation has
// not moved since the answer was read (generation.go). Values are kept
// and handed out as copies: callers may change what they get.
type genCache[K comparable, V any] struct {
	g     *generation
	clone func(V) V
	mu    sync.Mutex
	gen   uint64 // the generation m was read in
	m     map[K]V
}

func newGenCache[K comparable, V any](g *generation, clone func(V) V) *genCache[K, V] {
	return &genCache[K, V]{g: g, clone: clone, m: map[K]V{}}
}

// get returns k's value if it was read in the current generation and no
// change is under way.
func (c *genCache[K, V]) get(k K) (v V, ok bool) {
	n, settled := c.g.current()
	if !settled {
		return v, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != n {
		clear(c.m)
		c.gen = n
		return v, false
	}
	if v, ok = c.m[k]; ok {
		v = c.clone(v)
	}
	return v, ok
}

// readGen is the generation to pass to put for a value read from now on:
// a change that commits during the read moves the generation past it.
func (c *genCache[K, V]) readGen() uint64 { return c.g.n.Load() }

// put keeps v, read in generation n, unless the generation moved since.
func (c *genCache[K, V]) put(n uint64, k K, v V) {
	if c.g.n.Load() != n {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != n || len(c.m) >= maxCached {
		clear(c.m)
		c.gen = n
	}
	c.m[k] = c.clone(v)
}

// lookups are the cached per-request reads of a SQLite store.
type lookups struct {
	keys       *genCache[string, keyAccount]        // by key hash
	sandboxes  *genCache[[2]string, *model.Sandbox] // by account id, sandbox id
	allowlists *genCache[string, []api.CommandRule] // by account id; nil: none
}

type keyAccount struct {
	key  *model.APIKey
	acct *model.Account
}

func newLookups(g *generation) *lookups {
	return &lookups{
		keys:       newGenCache[string](g, cloneKeyAccount),
		sandboxes:  newGenCache[[2]string](g, cloneSandbox),
		allowlists: newGenCache[string](g, cloneRules),
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
