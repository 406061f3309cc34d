//go:build unix && !linux

package sidecar

import (
	"context"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// watchDir needs inotify; sandboxes only run on Linux.
func watchDir(context.Context, *fsView, *cursor, bool, time.Duration, int) ([]api.WatchChange, error) {
	return nil, api.Errorf(http.StatusNotImplemented, api.CodeNotSupported, "watch needs Linux inotify")
}

type inotify struct{}

func openWatch(*fsView, *cursor, bool, int) (*inotify, error) {
	return nil, api.Errorf(http.StatusNotImplemented, api.CodeNotSupported, "watch needs Linux inotify")
}

func (*inotify) close() {}

func (*inotify) next(context.Context, time.Time) ([]api.WatchChange, error) { return nil, nil }
