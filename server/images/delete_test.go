//go:build linux

package images_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/images"
)

// importDone imports the test image for acct and waits until it is made.
func importDone(t *testing.T, m *images.Manager, acct string, archive []byte) api.Image {
	t.Helper()
	img, err := m.Import(context.Background(), acct, "lbl", bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	m.Wait()
	if img, err = m.Get(context.Background(), acct, img.ID); err != nil || img.Status != api.ImageCompleted {
		t.Fatalf("import = %+v, %v; want completed", img, err)
	}
	return img
}

// TestDeleteRemovesOutsideTheLock: while a deleted image's tree is being
// removed (held there by a hook), the image is already gone and the
// admission lock is free: an import and a create's Use of another image
// go ahead. Before, Delete held the lock through the removal, and every
// import, build and create with an image waited for it.
func TestDeleteRemovesOutsideTheLock(t *testing.T) {
	archive := ociTar(t, testImage(t))
	dir := t.TempDir()
	removing, release := make(chan string, 1), make(chan struct{})
	m, err := images.New(dir, slog.New(slog.DiscardHandler), images.WithDeleteHooksForTests(nil, func(trash string) {
		removing <- trash
		<-release
	}))
	if err != nil {
		t.Fatal(err)
	}
	doomed, kept := importDone(t, m, "acct", archive), importDone(t, m, "acct", archive)

	deleted := make(chan error, 1)
	go func() {
		deleted <- m.Delete(context.Background(), "acct", doomed.ID, func(string) bool { return false })
	}()
	var trash string
	select {
	case trash = <-removing:
	case err := <-deleted:
		t.Fatalf("Delete = %v before removing the tree", err)
	case <-time.After(time.Minute): // a hang guard
		t.Fatal("Delete did not reach the removal")
	}
	if _, err := m.Get(context.Background(), "acct", doomed.ID); err != images.ErrNotFound {
		t.Errorf("Get of the image being removed = %v, want ErrNotFound", err)
	}
	done := make(chan error, 1)
	go func() {
		if err := m.Use(context.Background(), doomed.ID, "sb0"); err != images.ErrNotFound {
			done <- fmt.Errorf("Use of the image being removed = %v, want ErrNotFound", err)
			return
		}
		if err := m.Use(context.Background(), kept.ID, "sb1"); err != nil {
			done <- err
			return
		}
		_, err := m.Import(context.Background(), "acct", "more", bytes.NewReader(archive))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Use and Import while a removal runs: %v", err)
		}
	case <-time.After(time.Minute): // a hang guard
		t.Fatal("Use and Import waited for the removal of another image's tree")
	}
	close(release)
	if err := <-deleted; err != nil {
		t.Fatalf("Delete = %v", err)
	}
	m.Wait()
	if _, err := os.Stat(trash); !os.IsNotExist(err) {
		t.Errorf("the removed image's tree %s: %v, want gone", trash, err)
	}
}

// TestTrashSweptAtStart: the tree of an image deleted just before a crash
// (or whose removal failed), left as .trash-ID, is removed at the next
// start; images are kept.
func TestTrashSweptAtStart(t *testing.T) {
	archive := ociTar(t, testImage(t))
	dir := t.TempDir()
	m, err := images.New(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	kept := importDone(t, m, "acct", archive)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(dir, ".trash-img_0123456789abcdef01234567")
	if err := os.MkdirAll(filepath.Join(left, "rootfs", "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(left, "rootfs", "etc", "big"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err = images.New(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("leftover %s after a start: %v, want swept", left, err)
	}
	if img, err := m.Get(context.Background(), "acct", kept.ID); err != nil || img.Status != api.ImageCompleted {
		t.Errorf("image kept across the start = %+v, %v", img, err)
	}
}
