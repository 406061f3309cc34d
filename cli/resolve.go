package cli

import (
	"fmt"
	"strings"
)

// refMatch ranks how well an item matches a reference typed by a user.
type refMatch int

const (
	noMatch      refMatch = iota
	partialMatch          // a name, or a prefix of the id: must be unique
	exactMatch            // the whole id (or another unique handle): wins outright
)

// refKind describes one kind of item a command resolves references to:
// its noun for messages, how an item matches and what lists them.
type refKind[T any] struct {
	noun    string // "api key", "process"
	plural  string // "keys", "processes"
	listCmd string // "boxkite keys ls"
	match   func(item T, ref string) refMatch
	id      func(item T) string
}

// resolveRef picks the item ref names: an exact match, else the only
// partial one. None is a not-found error that says how to list them;
// several are a usage error naming each.
func resolveRef[T any](items []T, ref string, k refKind[T]) (T, error) {
	var zero T
	var partial []T
	for _, it := range items {
		switch k.match(it, ref) {
		case exactMatch:
			return it, nil
		case partialMatch:
			partial = append(partial, it)
		}
	}
	switch len(partial) {
	case 1:
		return partial[0], nil
	case 0:
		return zero, &notFoundError{err: fmt.Errorf("%s %s not found", k.noun, ref), hint: "list them with '" + k.listCmd + "'"}
	}
	ids := make([]string, len(partial))
	for i, it := range partial {
		ids[i] = k.id(it)
	}
	return zero, usageErrorf("use the full id", "%q matches %d %s: %s", ref, len(partial), k.plural, strings.Join(ids, ", "))
}
