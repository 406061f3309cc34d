package kube

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Snapshots on the kube driver (issue 22) copy the workspace through the
// sandbox's sidecar: a tar of /workspace (GET /files/archive) streamed
// into Config.SnapshotDir, named by the SHA-256 of the tar (a fork's
// transient copy by a random name), and streamed into a new sandbox's
// sidecar (POST /files/archive) when one starts from it. Pods keep their
// workspace in an emptyDir, so there is no volume to snapshot; the
// processes are not stopped for the copy (the control plane cannot freeze
// a pod), so a file written during it may be caught half-written.
//
// The directory is this server's: servers sharing a database must share
// it too (a ReadWriteMany volume), or a snapshot taken through one cannot
// be restored through another.

// workspace is the directory a snapshot copies.
const workspace = "/workspace"

// snapshotMethod is what SnapshotRef.Method reports.
const snapshotMethod = "sidecar-copy"

// snapshotKey is a key this driver made: sha256-<hex> for a snapshot,
// fork-<hex> for a transient copy (a fork's, a paused sandbox's).
var snapshotKey = regexp.MustCompile(`^(sha256|fork)-[0-9a-f]{64}$`)

// errNoSnapshots is the answer without a snapshot directory.
var errNoSnapshots = errors.New("the kube driver has no snapshot directory (Config.SnapshotDir)")

// snapshotPath is the file of key, or an error for a key this driver
// never made (keys come from the database, but a path is built of them).
func (d *Driver) snapshotPath(key string) (string, error) {
	if d.cfg.SnapshotDir == "" {
		return "", errNoSnapshots
	}
	if !snapshotKey.MatchString(key) {
		return "", fmt.Errorf("snapshot key %q is not one of the kube driver's", key)
	}
	return filepath.Join(d.cfg.SnapshotDir, key+".tar"), nil
}

// Snapshot copies sandbox id's workspace into the snapshot directory.
func (d *Driver) Snapshot(ctx context.Context, id string, transient bool, claim func(string) error) (model.SnapshotRef, error) {
	if d.cfg.SnapshotDir == "" {
		return model.SnapshotRef{}, errNoSnapshots
	}
	fill, err := d.workspaceSource(ctx, id)
	if err != nil {
		return model.SnapshotRef{}, fmt.Errorf("snapshot sandbox %s: %w", id, err)
	}
	if err := os.MkdirAll(d.cfg.SnapshotDir, 0o700); err != nil {
		return model.SnapshotRef{}, fmt.Errorf("snapshot sandbox %s: %w", id, err)
	}
	tmp, err := createPartial(d.cfg.SnapshotDir)
	if err != nil {
		return model.SnapshotRef{}, fmt.Errorf("snapshot sandbox %s: %w", id, err)
	}
	defer tmp.release() // held until renamed (partial.go)
	size, sum, err := fill(tmp)
	if err == nil {
		err = tmp.Sync() // its write errors here, not at a close after the rename
	}
	if err != nil {
		return model.SnapshotRef{}, fmt.Errorf("snapshot sandbox %s: %w", id, err)
	}
	key := "sha256-" + sum
	if transient {
		key = "fork-" + newToken()
	}
	path, err := d.snapshotPath(key)
	if err != nil {
		return model.SnapshotRef{}, err
	}
	if claim != nil && !transient {
		// From here until the row is deleted, no drop (of any replica
		// sharing the directory) deletes path.
		if err := claim(key); err != nil {
			return model.SnapshotRef{}, fmt.Errorf("snapshot sandbox %s: claim its key: %w", id, err)
		}
		if d.cfg.SnapshotClaimedForTests != nil {
			d.cfg.SnapshotClaimedForTests(id)
		}
	}
	if err := tmp.rename(path); err != nil {
		return model.SnapshotRef{}, fmt.Errorf("snapshot sandbox %s: %w", id, err)
	}
	return model.SnapshotRef{Key: key, SizeBytes: size, Method: snapshotMethod}, nil
}

// workspaceSource returns what writes sandbox id's workspace as a tar,
// returning its size and SHA-256: its running pod's sidecar, or for a
// paused sandbox (no pod) the copy its pause made, as a resume would put
// it back.
func (d *Driver) workspaceSource(ctx context.Context, id string) (func(io.Writer) (int64, string, error), error) {
	ep, dirs, err := d.sandboxPod(ctx, id)
	if err == nil {
		return func(w io.Writer) (int64, string, error) { return d.download(ctx, ep, dirs, w) }, nil
	}
	sec, _, serr := d.sandboxSecret(ctx, id)
	key := ""
	if serr == nil {
		key = sec.Annotations[annotationPausedSnapshot]
	}
	if key == "" {
		return nil, err // not paused: no pod to copy from
	}
	if has, err := d.HasSnapshot(ctx, key); err != nil || !has {
		return nil, fmt.Errorf("its paused copy %s: %w", key, cmp.Or(err, model.ErrCopyElsewhere))
	}
	path, err := d.snapshotPath(key)
	if err != nil {
		return nil, err
	}
	return func(w io.Writer) (int64, string, error) {
		f, err := os.Open(path)
		if err != nil {
			return 0, "", fmt.Errorf("open the paused copy: %w", err)
		}
		defer f.Close()
		h := sha256.New()
		n, err := io.Copy(io.MultiWriter(w, h), f)
		return n, hex.EncodeToString(h.Sum(nil)), err
	}, nil
}

// download streams the workspace's tar from the sidecar at ep into w and
// returns its size and SHA-256. dirs are the volumes' directories below
// the workspace, left out of the tar (archiveBody).
func (d *Driver) download(ctx context.Context, ep model.Endpoint, dirs []string, w io.Writer) (int64, string, error) {
	resp, err := d.archiveCall(ctx, ep, http.MethodGet, nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	h := sha256.New()
	body := archiveBody(resp, dirs)
	defer body.Close()
	n, err := io.Copy(io.MultiWriter(w, h), body)
	if err != nil {
		return 0, "", fmt.Errorf("copy the workspace: %w", err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// restore streams snapshot key into the workspace of the sidecar at ep.
func (d *Driver) restore(ctx context.Context, ep model.Endpoint, key string) error {
	path, err := d.snapshotPath(key)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open snapshot: %w", err)
	}
	defer f.Close()
	resp, err := d.archiveCall(ctx, ep, http.MethodPost, f)
	if err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// archiveQuery is the query of archiveCall: the workspace, and for a
// copy out of it, not the volumes mounted below it (their data is shared
// and not the sandbox's: a snapshot holds none of it, and a resume does
// not write a paused copy back over what other sandboxes wrote since).
func archiveQuery(method string) url.Values {
	q := url.Values{"path": {workspace}}
	if method == http.MethodGet {
		q.Set("one_file_system", "true")
	}
	return q
}

// archiveCall is GET or POST /files/archive?path=/workspace on the
// sidecar at ep, with no timeout of its own (the copy takes as long as
// the data); a status other than 200 is an error.
func (d *Driver) archiveCall(ctx context.Context, ep model.Endpoint, method string, body io.Reader) (*http.Response, error) {
	hc, err := pinnedClient(ep.CertPEM)
	if err != nil {
		return nil, err
	}
	hc.Timeout = 0 // ctx bounds it
	u := "https://" + ep.Address + "/files/archive?" + archiveQuery(method).Encode()
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set(api.HeaderSidecarToken, ep.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/x-tar")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("sidecar /files/archive: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		resp.Body.Close()
		return nil, fmt.Errorf("sidecar /files/archive: %s: %s", resp.Status, msg)
	}
	return resp, nil
}

// DeleteSnapshot removes key's file; a gone one is not an error.
func (d *Driver) DeleteSnapshot(_ context.Context, key string) error {
	path, err := d.snapshotPath(key)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete snapshot %s: %w", key, err)
	}
	return nil
}

var _ model.SnapshotLister = (*Driver)(nil)

// SnapshotKeys implements model.SnapshotLister: the sha256-<hex>.tar
// files of the snapshot directory (not the fork- copies of forks and
// paused sandboxes, which no snapshot row names, not the partial- copies
// under way).
func (d *Driver) SnapshotKeys(context.Context) ([]string, error) {
	entries, err := d.snapshotEntries()
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, e := range entries {
		key, ok := strings.CutSuffix(e.Name(), ".tar")
		if ok && e.Type().IsRegular() && strings.HasPrefix(key, "sha256-") && snapshotKey.MatchString(key) {
			keys = append(keys, key)
		}
	}
	return keys, nil
}

// snapshotEntries lists the snapshot directory: none without one, or
// before the first snapshot made it.
func (d *Driver) snapshotEntries() ([]os.DirEntry, error) {
	if d.cfg.SnapshotDir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(d.cfg.SnapshotDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	return entries, nil
}

// sandboxEndpoint finds sandbox id's running pod and reaches its sidecar
// with the token its Secret holds (the sandbox's own: bind writes a
// claimed pod's there too).
func (d *Driver) sandboxEndpoint(ctx context.Context, id string) (model.Endpoint, error) {
	ep, _, err := d.sandboxPod(ctx, id)
	return ep, err
}

// sandboxPod is sandboxEndpoint with the directories of the pod's
// volumes below the workspace (volumeDirs).
func (d *Driver) sandboxPod(ctx context.Context, id string) (model.Endpoint, []string, error) {
	pod, ep, err := d.runningPod(ctx, id)
	if err != nil {
		return model.Endpoint{}, nil, err
	}
	return ep, volumeDirs(pod), nil
}

// runningPod is sandbox id's running pod and its sidecar's endpoint: a
// pod List and a Secret Get.
func (d *Driver) runningPod(ctx context.Context, id string) (*corev1.Pod, model.Endpoint, error) {
	ns := d.cfg.Namespace
	sel := labels.Set{LabelManagedBy: ManagedBy, LabelSandbox: id, LabelState: StateBound}.String()
	pods, err := d.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, model.Endpoint{}, fmt.Errorf("list pods: %w", err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || p.Status.PodIP == "" {
			continue
		}
		sec, err := d.client.CoreV1().Secrets(ns).Get(ctx, secretName(p.Name), metav1.GetOptions{})
		if err != nil {
			return nil, model.Endpoint{}, fmt.Errorf("get secret: %w", err)
		}
		return p, d.endpoint(p, string(sec.Data[tokenKey]), sec.Data["tls.crt"]), nil
	}
	return nil, model.Endpoint{}, fmt.Errorf("no running pod of sandbox %s", id)
}

var _ model.SnapshotPorter = (*Driver)(nil)

// ExportSnapshot opens key's tar (model.SnapshotPorter): the control plane
// keeps it in object storage when one is configured.
func (d *Driver) ExportSnapshot(_ context.Context, key string) (io.ReadCloser, int64, error) {
	path, err := d.snapshotPath(key)
	if err != nil {
		return nil, 0, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("open snapshot: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("open snapshot: %w", err)
	}
	return f, fi.Size(), nil
}

// ImportSnapshot stores the tar read from r under key, unless the snapshot
// directory holds it already.
func (d *Driver) ImportSnapshot(_ context.Context, key string, r io.Reader) error {
	path, err := d.snapshotPath(key)
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := os.MkdirAll(d.cfg.SnapshotDir, 0o700); err != nil {
		return fmt.Errorf("import snapshot: %w", err)
	}
	tmp, err := createPartial(d.cfg.SnapshotDir)
	if err != nil {
		return fmt.Errorf("import snapshot: %w", err)
	}
	defer tmp.release() // held until renamed (partial.go)
	_, err = io.Copy(tmp, r)
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		err = tmp.rename(path)
	}
	if err != nil {
		return fmt.Errorf("import snapshot: %w", err)
	}
	return nil
}

// HasSnapshot reports whether the snapshot directory holds key's tar.
func (d *Driver) HasSnapshot(_ context.Context, key string) (bool, error) {
	path, err := d.snapshotPath(key)
	if err != nil {
		return false, err
	}
	_, err = os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}
