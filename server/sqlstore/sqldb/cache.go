package sqldb

import "sync"

// maxCached bounds the entries of one cache; past it the cache starts
// over (it holds what recent requests used, a few per caller).
const maxCached = 4096

// Cache answers a lookup from memory while the database's generation has
// not moved since the answer was read (generation.go). Values are kept
// and handed out as copies: callers may change what they get.
type Cache[K comparable, V any] struct {
	g     *Generation
	clone func(V) V
	mu    sync.Mutex
	gen   uint64 // the generation m was read in
	m     map[K]V
}

// NewCache returns a cache under g's generation that keeps and hands out
// copies made by clone.
func NewCache[K comparable, V any](g *Generation, clone func(V) V) *Cache[K, V] {
	return &Cache[K, V]{g: g, clone: clone, m: map[K]V{}}
}

// Get returns k's value if it was read in the current generation and no
// change is under way.
func (c *Cache[K, V]) Get(k K) (v V, ok bool) {
	n, settled := c.g.Current()
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

// ReadGen is the generation to pass to Put for a value read from now on:
// a change that commits during the read moves the generation past it.
func (c *Cache[K, V]) ReadGen() uint64 { return c.g.n.Load() }

// Put keeps v, read in generation n, unless the generation moved since.
func (c *Cache[K, V]) Put(n uint64, k K, v V) {
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
