package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
)

// Host capacity (issue 19): sandbox disks stay overcommitted and limits
// like pids are per sandbox, so nothing stopped a busy host from filling
// its disk or running out of PIDs, after which sandboxes that were
// already running failed too. A CapacityDriver accounts for the host's
// own limits; the server asks it before every create and upload and
// refuses with a stable code before the host is out.

// admitCreate refuses n creates the host cannot take.
func (s *Service) admitCreate(ctx context.Context, n int) error {
	cd, ok := driverAs[model.CapacityDriver](s)
	if !ok {
		return nil
	}
	return model.HostRefusal(cd.AdmitCreate(ctx, n), "create")
}

// AdmitWrite refuses an upload to sandbox id while the host's store is
// below its watermark, once the sandbox's disk failed to store a write,
// or when its size (bytes, -1 when unknown) would take the host below
// the watermark: filling the host would also fill the database and the
// log beside it, and freeze every sandbox.
func (s *Service) AdmitWrite(ctx context.Context, id string, size int64) error {
	err := s.CapacityWrite(ctx, id)
	if err != nil && model.IsStorageFault(err) {
		e := model.StorageFailed("upload")
		e.Message = "upload refused: the sandbox's disk could not store an earlier write (the host ran out of space), so it takes no more"
		e.Hint = "copy out what you need and create a new sandbox once the host has space again"
		return e
	}
	if err == nil && size > 0 {
		if err := s.admitSize(ctx, size); err != nil {
			return err
		}
	}
	return model.HostRefusal(err, "upload")
}

// admitSize refuses a write of size bytes that would leave the host's
// store below its free-space watermark.
func (s *Service) admitSize(ctx context.Context, size int64) error {
	cd, ok := driverAs[model.CapacityDriver](s)
	if !ok {
		return nil
	}
	hs, err := cd.Capacity(ctx, nil)
	if err != nil || hs.Disk == nil || hs.Disk.WatermarkBytes <= 0 || hs.Disk.FreeBytes-size >= hs.Disk.WatermarkBytes {
		return nil // the reading is the watermark's business (capacityWrite), not this check's
	}
	d := hs.Disk
	return &api.Error{
		Status: http.StatusInsufficientStorage, Code: api.CodeInsufficientStorage,
		Message: fmt.Sprintf("upload of %s refused: the host has %s free, and its free-space watermark is %s",
			formatSize(size), formatSize(d.FreeBytes), formatSize(d.WatermarkBytes)),
		Hint: "free space on the host (remove sandboxes and volumes you no longer need), or upload less at a time",
		Details: map[string]any{
			"resource": api.HostDiskResource, "free_bytes": d.FreeBytes, "watermark_bytes": d.WatermarkBytes,
			"size_bytes": size,
		},
	}
}

// formatSize is n bytes in MiB, for refusals.
func formatSize(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// CapacityWrite is the driver's AdmitWrite, nil without a CapacityDriver.
func (s *Service) CapacityWrite(ctx context.Context, id string) error {
	cd, ok := driverAs[model.CapacityDriver](s)
	if !ok {
		return nil
	}
	return cd.AdmitWrite(ctx, id)
}

// SyncDisk flushes the sandbox's disks before a write is acknowledged,
// when the driver can; the error is the 507 to answer instead.
func (s *Service) SyncDisk(ctx context.Context, sb *model.Sandbox, op string) error {
	d := s.baseDriver()
	ds, ok := d.(model.DiskSyncer)
	if !ok {
		return nil
	}
	err := ds.SyncDisk(context.WithoutCancel(ctx), sb.ID)
	if err == nil {
		return nil
	}
	s.log.ErrorContext(ctx, "sandbox disk could not store what was written", "sandbox", sb.ID, "operation", op, "err", err)
	if !model.IsStorageFault(err) {
		return fmt.Errorf("sync sandbox disk: %w", err)
	}
	e := model.StorageFailed("store what the " + op + " wrote")
	e.Message = fmt.Sprintf("the %s was performed but the sandbox's disk could not store what it wrote: the host's storage is full", op)
	e.Details = map[string]any{"resource": api.HostDiskResource, "performed": true, "operation": op}
	return e
}

// FlushesFiles reports whether the driver's SyncDisk makes sb's file
// writes durable (model.FileFlusher), so the sidecar need not fsync them.
func (s *Service) FlushesFiles(sb *model.Sandbox) bool {
	ff, ok := driverAs[model.FileFlusher](s)
	return ok && ff.FlushesFiles(sb.ID)
}

// BrokenDisk is the 507 for a write the sidecar failed because the
// sandbox's disk cannot store more (the host ran out of space under it:
// a flush fails, or failed before and left it read-only), else nil.
func (s *Service) BrokenDisk(ctx context.Context, sb *model.Sandbox, op string) error {
	if err := s.SyncDisk(ctx, sb, op); err != nil {
		if ae, ok := errors.AsType[*api.Error](err); ok {
			ae.Message = fmt.Sprintf("the %s failed: the sandbox's disk cannot store more, the host's storage is full", strings.ReplaceAll(op, "_", " "))
			ae.Details = map[string]any{"resource": api.HostDiskResource, "performed": false}
		}
		return err
	}
	if err := s.CapacityWrite(ctx, sb.ID); err != nil && model.IsStorageFault(err) {
		e := model.StorageFailed(strings.ReplaceAll(op, "_", " "))
		e.Message = fmt.Sprintf("the %s failed: the sandbox's disk could not store an earlier write (the host ran out of space) and takes no more", strings.ReplaceAll(op, "_", " "))
		e.Hint = "copy out what you need and create a new sandbox once the host has space again"
		return e
	}
	return nil
}
