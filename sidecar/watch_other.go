//go:build unix && !linux

package sidecar

import (
	"context"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// inotify needs Linux; sandboxes only run on Linux.
type inotify struct{}

func openWatch(*fsView, *cursor, bool, int) (*inotify, error) {
	return nil, api.Errorf(http.StatusNotImplemented, api.CodeNotSupported, "watch needs Linux inotify")
}

func (*inotify) close() {}

func (*inotify) next(context.Context, time.Time) ([]api.WatchChange, error) { return nil, nil }
