package server_test

import (
	"context"

	"github.com/boxkite/boxkite/server/model"
)

// The fake driver holds volumes in name only, so the API tests that use
// it (the cross-tenant matrix) can create them.
var _ model.VolumeDriver = (*fakeDriver)(nil)

func (d *fakeDriver) CreateVolume(context.Context, string, int64) error { return nil }

func (d *fakeDriver) DeleteVolume(context.Context, string) error { return nil }
