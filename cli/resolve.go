package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/boxkite/boxkite/client"
	"github.com/boxkite/boxkite/client/api"
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
// several, or an empty ref, are a usage error (naming each match).
func resolveRef[T any](items []T, ref string, k refKind[T]) (T, error) {
	var zero T
	if ref == "" { // a prefix of every id: never a choice
		return zero, usageErrorf("name one by its id, a unique prefix of it or what '"+k.listCmd+"' shows beside it",
			"the %s to use is empty", k.noun)
	}
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

// idRef resolves what a user typed for a volume or an image to its id:
// the item whose id it is, else the one whose label is ref or whose id
// starts with it, which must be unique (the labels are the ones `ls`
// shows). Matching nothing, ref goes to the server as typed, which says
// it does not exist.
func idRef[T any](ctx context.Context, list func(context.Context) ([]T, error), ref string, k refKind[T]) (string, error) {
	items, err := list(ctx)
	if err != nil {
		return "", fmt.Errorf("list %s: %w", k.plural, err)
	}
	it, err := resolveRef(items, ref, k)
	if _, none := errors.AsType[*notFoundError](err); none {
		return ref, nil
	}
	if err != nil {
		return "", err
	}
	return k.id(it), nil
}

func labelOrPrefix(id, label, ref string) refMatch {
	switch {
	case id == ref:
		return exactMatch
	case label == ref || strings.HasPrefix(id, ref):
		return partialMatch
	}
	return noMatch
}

func volumeKind() refKind[api.Volume] {
	return refKind[api.Volume]{
		noun: "volume", plural: "volumes", listCmd: "boxkite volumes ls",
		match: func(v api.Volume, ref string) refMatch { return labelOrPrefix(v.ID, v.Label, ref) },
		id:    func(v api.Volume) string { return v.ID },
	}
}

func imageKind() refKind[api.Image] {
	return refKind[api.Image]{
		noun: "image", plural: "images", listCmd: "boxkite images ls",
		match: func(v api.Image, ref string) refMatch { return labelOrPrefix(v.ID, v.Label, ref) },
		id:    func(v api.Image) string { return v.ID },
	}
}

func snapshotKind() refKind[api.Snapshot] {
	return refKind[api.Snapshot]{
		noun: "snapshot", plural: "snapshots", listCmd: "boxkite snapshots ls",
		match: func(v api.Snapshot, ref string) refMatch { return labelOrPrefix(v.ID, v.Label, ref) },
		id:    func(v api.Snapshot) string { return v.ID },
	}
}

// webhookKind matches a subscription by its id, a prefix of it or its
// URL (what ls shows; webhooks have no label).
func webhookKind() refKind[api.Webhook] {
	return refKind[api.Webhook]{
		noun: "webhook", plural: "webhooks", listCmd: "boxkite webhooks ls",
		match: func(w api.Webhook, ref string) refMatch { return labelOrPrefix(w.ID, w.URL, ref) },
		id:    func(w api.Webhook) string { return w.ID },
	}
}

func mcpConnectionKind() refKind[api.MCPConnection] {
	return refKind[api.MCPConnection]{
		noun: "MCP connection", plural: "MCP connections", listCmd: "boxkite mcp-connections ls",
		match: func(m api.MCPConnection, ref string) refMatch { return labelOrPrefix(m.ID, m.Label, ref) },
		id:    func(m api.MCPConnection) string { return m.ID },
	}
}

// snapshotID resolves a snapshot's id, label or id prefix, as the
// restore's example (`boxkite session restore 7c1e`) promises.
func snapshotID(ctx context.Context, c *client.Client, ref string) (string, error) {
	list := func(ctx context.Context) ([]api.Snapshot, error) { return c.Snapshots(ctx, "") }
	return idRef(ctx, list, ref, snapshotKind())
}

// volumeID and imageID resolve a volume's or an image's id, label or id
// prefix.
func volumeID(ctx context.Context, c *client.Client, ref string) (string, error) {
	return idRef(ctx, c.ListVolumes, ref, volumeKind())
}

func imageID(ctx context.Context, c *client.Client, ref string) (string, error) {
	return idRef(ctx, c.ListImages, ref, imageKind())
}

// webhookID resolves a subscription's id, id prefix or URL.
func webhookID(ctx context.Context, c *client.Client, ref string) (string, error) {
	return idRef(ctx, c.ListWebhooks, ref, webhookKind())
}

// mcpConnectionID resolves an MCP connection's id, id prefix or label.
func mcpConnectionID(ctx context.Context, c *client.Client, ref string) (string, error) {
	return idRef(ctx, c.ListMCPConnections, ref, mcpConnectionKind())
}

// byRef is get (or rm, logs…) taking a reference resolve turns into an id.
func byRef[T any](resolve func(context.Context, *client.Client, string) (string, error), get func(*client.Client, context.Context, string) (T, error)) func(*client.Client, context.Context, string) (T, error) {
	return func(c *client.Client, ctx context.Context, ref string) (T, error) {
		id, err := resolve(ctx, c, ref)
		if err != nil {
			var zero T
			return zero, err
		}
		return get(c, ctx, id)
	}
}
