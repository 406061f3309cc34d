package server

import (
	"context"
	"net/http"
	"time"

	"github.com/boxkite/boxkite/server/accounts"
	"github.com/boxkite/boxkite/server/allowlists"
	"github.com/boxkite/boxkite/server/auditlog"
	"github.com/boxkite/boxkite/server/exec"
	"github.com/boxkite/boxkite/server/hostedmcp"
	"github.com/boxkite/boxkite/server/imagesapi"
	"github.com/boxkite/boxkite/server/internal/sidecar"
	"github.com/boxkite/boxkite/server/mcpconns"
	"github.com/boxkite/boxkite/server/model"
	"github.com/boxkite/boxkite/server/proxy"
	"github.com/boxkite/boxkite/server/sandbox"
	"github.com/boxkite/boxkite/server/status"
	"github.com/boxkite/boxkite/server/takeover"
	"github.com/boxkite/boxkite/server/volumes"
)

// subsystems builds the subsystem services from the server's parts, in
// order: each may use those built before it. Deps that tests may change
// after New (the clock) are reached through closures.
func (s *Server) subsystems() error {
	for _, build := range []func() error{
		s.newAccounts, s.newVolumes, s.newMCP, s.newOAuth, s.newAdmin, s.newDemo,
		s.newAuditLog, s.newImages, s.newSandboxes, s.newSnapshotsAndE2B,
		s.newAllowlists, s.newProxy, s.newExec, s.newStatus, s.newTakeover,
	} {
		if err := build(); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) newAccounts() (err error) {
	s.accounts, err = accounts.New(accounts.Deps{
		Store:            s.store,
		Log:              s.log,
		Now:              func() time.Time { return s.now() },
		Hasher:           s.hasher,
		IssueAccessToken: s.issueAccessToken,
		LoginRate: func(w http.ResponseWriter, email string) error {
			return s.countRate(w, bucketLogin, email, false)
		},
		Revoked: func(id string) { s.revocations.revoke(id, s.now()) },
	})
	return err
}

func (s *Server) newVolumes() (err error) {
	maxVolumeGB := s.cfg.MaxVolumeGB
	if maxVolumeGB <= 0 {
		maxVolumeGB = DefaultMaxVolumeGB
	}
	s.volumes, err = volumes.New(volumes.Deps{
		Store:          s.store,
		Driver:         s.baseDriver(), // volumes are not counted
		Log:            s.log,
		Now:            func() time.Time { return s.now() },
		MaxGB:          maxVolumeGB,
		AdmitWrite:     func(ctx context.Context, id string) error { return s.sandboxes.CapacityWrite(ctx, id) },
		Discard:        func(ctx context.Context, id string) { s.sandboxes.Discard(ctx, id) },
		CleanupTimeout: sandbox.CleanupTimeout,
	})
	return err
}

// newMCP builds the MCP connections' store and the hosted MCP server.
func (s *Server) newMCP() (err error) {
	s.mcpconns, err = mcpconns.New(mcpconns.Deps{
		Store: s.store, Now: func() time.Time { return s.now() }, Catalog: s.mcpCatalog(),
	})
	if err != nil {
		return err
	}
	s.hostedMCP, err = hostedmcp.New(hostedmcp.Deps{Version: s.cfg.Version, Serve: s})
	return err
}

func (s *Server) newAuditLog() (err error) {
	s.auditlog, err = auditlog.New(auditlog.Deps{
		Store: s.store, Audit: s.alog, Log: s.log,
		LoadSandbox: func(r *http.Request) (*model.Sandbox, error) { return s.sandboxes.LoadSandbox(r) }, // built after images
		Watching:    func(d float64) { s.metrics.Watchers.Add(d) },
		KeepAlive:   func() time.Duration { return s.watchKeepAlive },
	})
	return err
}

func (s *Server) newImages() (err error) {
	s.images, err = imagesapi.New(imagesapi.Deps{
		Images: s.cfg.Images, Store: s.store, Snapshots: s.store, Audit: s.alog, Now: func() time.Time { return s.now() }, WriteLogPage: s.auditlog.WritePage,
		PublicURL: s.cfg.PublicURL,
	})
	return err
}

// newSnapshotsAndE2B builds what sits on the sandboxes service: the warm
// pool's wake on idle calls, snapshots and the E2B port.
func (s *Server) newSnapshotsAndE2B() error {
	if w, ok := s.baseDriver().(model.CallWatcher); ok {
		w.WatchCalls(s.calls.Idle) // the warm pool refills when calls pause
	}
	s.snap = s.newSnapshots()
	return s.newE2BPort()
}

func (s *Server) newAllowlists() (err error) {
	s.allowlist, err = allowlists.New(allowlists.Deps{Store: s.store, Cache: s.allowlists, Now: func() time.Time { return s.now() }})
	return err
}

func (s *Server) newProxy() (err error) {
	s.proxy, err = proxy.New(proxy.Deps{
		Audit:            s.alog,
		Log:              s.log,
		Now:              func() time.Time { return s.now() },
		Sidecars:         s.sidecars,
		Calls:            &s.calls,
		LoadActive:       s.sandboxes.LoadActive,
		FrozenAnswer:     s.sandboxes.FrozenAnswer,
		Unreachable:      s.sandboxes.Unreachable,
		CheckBodyCommand: s.allowlist.CheckBodyCommand,
		AdmitWrite:       s.sandboxes.AdmitWrite,
		BrokenDisk:       s.sandboxes.BrokenDisk,
		SyncDisk:         s.sandboxes.SyncDisk,
		FlushesFiles:     s.sandboxes.FlushesFiles,
		ScrubsOutput:     scrubsOutput,
		ScrubIdle:        func() time.Duration { return s.scrubIdle },
		ReserveHeld:      s.held.Reserve,
	})
	return err
}

func (s *Server) newExec() (err error) {
	s.exec, err = exec.New(exec.Deps{
		Audit:          s.alog,
		Log:            s.log,
		Now:            func() time.Time { return s.now() },
		LoadActive:     s.sandboxes.LoadActive,
		Forward:        s.proxy.Forward,
		DialSidecarWS:  s.dialSidecarWS,
		AbortResponse:  s.proxy.AbortResponse,
		SyncDisk:       s.sandboxes.SyncDisk,
		Healthy:        s.sandboxes.SidecarHealthy,
		FrozenAnswer:   s.sandboxes.FrozenAnswer,
		EndedAnswer:    s.sandboxes.EndedAnswer,
		Calls:          &s.calls,
		CheckCommand:   s.allowlist.CheckCommand,
		NewScrub:       s.newExecScrub,
		ObserveExec:    s.metrics.Exec,
		SecretEnv:      s.cfg.Secrets.ExecEnv(s.cfg.SecretEnv),
		MaxOutputBytes: s.cfg.MaxExecOutputBytes,
		HeldOutput:     s.held,
		MemoryKilled:   s.memoryKilled,
	})
	return err
}

// memoryKilled asks the driver whether sb's memory limit killed one of its
// processes since it last asked (model.MemoryKillDriver); a driver that
// cannot tell, or fails to, says no.
func (s *Server) memoryKilled(ctx context.Context, sb *model.Sandbox) bool {
	md, ok := s.baseDriver().(model.MemoryKillDriver)
	if !ok {
		return false
	}
	killed, err := md.MemoryKilled(ctx, sb.ID)
	if err != nil {
		s.log.WarnContext(ctx, "read a sandbox's memory kills", "sandbox", sb.ID, "err", err)
		return false
	}
	return killed
}

func (s *Server) newStatus() (err error) {
	s.status, err = status.New(status.Deps{
		Store:               s.store,
		Log:                 s.log,
		Now:                 func() time.Time { return s.now() },
		Version:             s.cfg.Version,
		DriverName:          s.cfg.DriverName,
		MonthlySandboxHours: s.cfg.Limits.MonthlySandboxHours,
		AccountConcurrent:   s.cfg.Limits.AccountConcurrent,
		AuditOpen:           s.auditOpen,
		AuditState:          s.alog.State,
		Capacity: func() (model.CapacityDriver, bool) {
			cd, ok := s.baseDriver().(model.CapacityDriver)
			return cd, ok
		},
		Metrics:         func(w http.ResponseWriter, r *http.Request) { s.metrics.Handler(s.baseDriver()).ServeHTTP(w, r) },
		SidecarProtocol: s.sidecars.Protocol,
	})
	return err
}

func (s *Server) newTakeover() (err error) {
	s.takeover, err = takeover.New(takeover.Deps{
		Store:         s.store,
		Audit:         s.alog,
		Log:           s.log,
		Now:           func() time.Time { return s.now() },
		LoadSandbox:   s.sandboxes.LoadSandbox,
		LoadActive:    s.sandboxes.LoadActive,
		NotActive:     sandbox.NotActive,
		DialSidecarWS: s.dialSidecarWS,
		DetachesWhenIdle: func(id string) bool {
			v, _ := s.sidecars.Protocol(id)
			return v >= sidecar.ProtoDetachUntilIdle
		},
		EndedAnswer:     s.sandboxes.EndedAnswer,
		WatchCalls:      s.calls.Watch,
		AuthenticateKey: s.authenticateKey,
		CredentialValid: s.credentialValid,
		KeyRole:         s.keyRole,
		JWTKey:          s.jwtKey,
		BastionKey:      s.cfg.BastionKey,
		Recording:       s.cfg.TakeoverRecording,
		FlushInterval:   s.cfg.TakeoverFlushInterval,
	})
	return err
}
