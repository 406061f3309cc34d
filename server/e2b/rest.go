package e2b

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/internal/apihttp"
	"github.com/boxkite/boxkite/server/e2b/envd"
)

// Defaults and bounds of the control plane.
const (
	defaultTimeout   = 300 * time.Second // E2B's default sandbox lifetime
	defaultTemplate  = "base"
	clientID         = "boxkite"
	maxBody          = 1 << 20
	defaultPageLimit = 100
	maxPageLimit     = 100
	maxMetadataKeys  = 64
	maxMetadataLen   = 1024
)

// defaultTemplates run on the default image: E2B's base template and the
// code interpreter's, whose Python the sidecar's interpreter provides.
var defaultTemplates = map[string]bool{
	"": true, "base": true, "code-interpreter-v1": true, "code-interpreter": true, "code-interpreter-beta": true,
}

// newSandbox is the body of POST /v2/sandboxes (and the older /sandboxes).
type newSandbox struct {
	TemplateID          string                  `json:"templateID"`
	Timeout             *int                    `json:"timeout"`
	Metadata            map[string]string       `json:"metadata"`
	EnvVars             map[string]string       `json:"envVars"`
	AutoPause           *bool                   `json:"autoPause"`
	AutoPauseMemory     *bool                   `json:"autoPauseMemory"`
	AutoResume          *struct{ Enabled bool } `json:"autoResume"`
	AllowInternetAccess *bool                   `json:"allow_internet_access"`
	Network             *networkConfig          `json:"network"`
	VolumeMounts        []any                   `json:"volumeMounts"`
	MCP                 any                     `json:"mcp"`
}

// networkConfig is the network part of a create, and the body of PUT
// …/network.
type networkConfig struct {
	AllowOut            []string `json:"allowOut"`
	DenyOut             []string `json:"denyOut"`
	AllowInternetAccess *bool    `json:"allow_internet_access"`
}

// sandboxJSON is E2B's Sandbox: the answer to create and connect.
type sandboxJSON struct {
	SandboxID          string  `json:"sandboxID"`
	TemplateID         string  `json:"templateID"`
	ClientID           string  `json:"clientID"`
	EnvdVersion        string  `json:"envdVersion"`
	EnvdAccessToken    string  `json:"envdAccessToken"`
	TrafficAccessToken string  `json:"trafficAccessToken"`
	Domain             *string `json:"domain"`
}

// detailJSON is E2B's SandboxDetail.
type detailJSON struct {
	listedJSON
	Domain              *string   `json:"domain"`
	EnvdAccessToken     string    `json:"envdAccessToken"`
	AllowInternetAccess bool      `json:"allowInternetAccess"`
	Lifecycle           lifecycle `json:"lifecycle"`
}

type lifecycle struct {
	OnTimeout  string `json:"onTimeout"`
	AutoResume bool   `json:"autoResume"`
}

// sizes are the CPUs and memory (MiB) of boxkite's size presets.
var sizes = map[string][2]int{api.SizeSmall: {1, 1024}, api.SizeMedium: {2, 2048}, api.SizeLarge: {4, 4096}}

func (h *Handler) create(w http.ResponseWriter, r *http.Request, c Caller) error {
	var req newSandbox
	if err := apihttp.DecodeText(w, r, &req, maxBody); err != nil {
		return err
	}
	if err := validateCreate(req); err != nil {
		return err
	}
	if req.TemplateID == "" {
		req.TemplateID = defaultTemplate
	}
	image := req.TemplateID
	if defaultTemplates[image] {
		image = ""
	}
	timeout := defaultTimeout
	if req.Timeout != nil {
		timeout = seconds(*req.Timeout)
	}
	autoPause := req.AutoPause != nil && *req.AutoPause
	sb, err := h.cp.Create(r.Context(), c, CreateSpec{ImageID: image, Lifetime: timeout, AutoPause: autoPause})
	if err != nil {
		return err
	}
	envs, err := h.restoredEnv(r.Context(), sb.RestoredFrom, req.EnvVars)
	if err != nil {
		if derr := h.cp.Destroy(context.WithoutCancel(r.Context()), c, sb.ID); derr != nil {
			h.log.ErrorContext(r.Context(), "destroy sandbox whose record failed", "sandbox", sb.ID, "err", derr)
		}
		return err
	}
	rec := Record{
		SandboxID: sb.ID, AccountID: c.AccountID(), TemplateID: req.TemplateID,
		Metadata: req.Metadata, EnvVars: envs, CreatedAt: sb.CreatedAt,
	}
	if err := h.store.PutE2BSandbox(r.Context(), rec); err != nil {
		if derr := h.cp.Destroy(context.WithoutCancel(r.Context()), c, sb.ID); derr != nil {
			h.log.ErrorContext(r.Context(), "destroy sandbox whose record failed", "sandbox", sb.ID, "err", derr)
		}
		return fmt.Errorf("record e2b sandbox: %w", err)
	}
	out, err := h.sandboxJSON(r, rec, c)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// restoredEnv is the environment of a sandbox created from a snapshot of
// the sandbox from (none: envs as they are): from's environment, the
// create's envs over it, as E2B's snapshot keeps envd's memory, the
// environment its create gave it, and a create from it adds its envs to
// that. A snapshot of a sandbox the facade did not create (/v1's) has
// none.
func (h *Handler) restoredEnv(ctx context.Context, from string, envs map[string]string) (map[string]string, error) {
	if from == "" {
		return envs, nil
	}
	prev, err := h.store.E2BSandbox(ctx, from)
	if errors.Is(err, ErrNotFound) || err == nil && len(prev.EnvVars) == 0 {
		return envs, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load e2b sandbox: %w", err)
	}
	out := maps.Clone(prev.EnvVars)
	maps.Copy(out, envs)
	return out, nil
}

// validateCreate refuses what boxkite cannot do yet rather than ignore it.
func validateCreate(req newSandbox) error {
	switch {
	case req.Timeout != nil && *req.Timeout < 1:
		return api.Invalid("timeout", "timeout must be at least 1 second", "")
	case req.AutoResume != nil && req.AutoResume.Enabled:
		return errNotSupported("auto-resume")
	case req.AutoPauseMemory != nil && *req.AutoPauseMemory:
		return errNotSupported("auto-pause keeping memory")
	case len(req.VolumeMounts) > 0:
		return errNotSupported("volume mounts")
	case req.MCP != nil:
		return errNotSupported("the MCP gateway")
	case len(req.Metadata) > maxMetadataKeys:
		return api.Invalid("metadata", fmt.Sprintf("metadata has more than %d keys", maxMetadataKeys), "")
	}
	for k, v := range req.Metadata {
		if len(k) > maxMetadataLen || len(v) > maxMetadataLen {
			return api.Invalid("metadata", fmt.Sprintf("metadata keys and values are at most %d bytes", maxMetadataLen), "")
		}
	}
	for k, v := range req.EnvVars {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return api.Invalid("envVars", fmt.Sprintf("environment variable %q is not valid", k), "")
		}
	}
	if req.Network != nil || req.AllowInternetAccess != nil {
		n := networkConfig{}
		if req.Network != nil {
			n = *req.Network
		}
		if req.AllowInternetAccess != nil {
			n.AllowInternetAccess = req.AllowInternetAccess
		}
		return checkNetwork(n)
	}
	return nil
}

// checkNetwork accepts what boxkite's sandboxes do anyway (no way out to
// the internet) and refuses opening any.
func checkNetwork(n networkConfig) error {
	if len(n.AllowOut) > 0 || n.AllowInternetAccess != nil && *n.AllowInternetAccess {
		return errNotSupported("internet access and allowOut")
	}
	return nil
}

// sandboxJSON is the create and connect answer, with the sandbox's tokens
// for the caller's key.
func (h *Handler) sandboxJSON(r *http.Request, rec Record, c Caller) (sandboxJSON, error) {
	ctx := r.Context()
	access, err := h.tokens.Access(ctx, rec.SandboxID, c.KeyID())
	if err != nil {
		return sandboxJSON{}, err
	}
	traffic, err := h.tokens.Traffic(ctx, rec.SandboxID, c.KeyID())
	if err != nil {
		return sandboxJSON{}, err
	}
	return sandboxJSON{
		SandboxID: rec.SandboxID, TemplateID: rec.TemplateID, ClientID: clientID, EnvdVersion: envd.Version,
		EnvdAccessToken: access, TrafficAccessToken: traffic, Domain: sandboxDomain(r.Host),
	}, nil
}

// sandboxDomain is the domain the SDK is told its sandbox lives under: the
// host it reached the control plane at, less a leading "api." (E2B's
// layout: E2B_DOMAIN=d means https://api.d and https://49983-<id>.d). The
// SDK uses it only when E2B_SANDBOX_URL is unset, to reach envd at
// https://49983-<id>.<domain>: boxkite again behind wildcard DNS, or a
// name that does not resolve. A null domain would send those calls, with
// the access token and the commands, to E2B's cloud (the SDK's default
// domain is e2b.app).
func sandboxDomain(host string) *string {
	if host == "" {
		return nil
	}
	d := strings.TrimPrefix(host, "api.")
	return &d
}

// state is E2B's name for the sandbox's state.
func state(sb Sandbox) string {
	if sb.Paused {
		return "paused"
	}
	return "running"
}

// record returns the sandbox's record; a sandbox created through /v1 gets
// one on first sight, so the E2B SDK can connect to any of the account's
// sandboxes.
func (h *Handler) record(ctx context.Context, sb Sandbox) (Record, error) {
	rec, err := h.store.E2BSandbox(ctx, sb.ID)
	if errors.Is(err, ErrNotFound) {
		rec = Record{SandboxID: sb.ID, AccountID: sb.AccountID, TemplateID: defaultTemplate, CreatedAt: sb.CreatedAt}
		err = h.store.PutE2BSandbox(ctx, rec)
	}
	return rec, err
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, c Caller) error {
	sb, err := h.cp.Sandbox(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	rec, err := h.record(r.Context(), sb)
	if err != nil {
		return err
	}
	access, err := h.tokens.Access(r.Context(), sb.ID, c.KeyID())
	if err != nil {
		return err
	}
	onTimeout := "kill"
	if sb.AutoPause {
		onTimeout = "pause"
	}
	writeJSON(w, http.StatusOK, detailJSON{
		listedJSON: listed(sb, rec), EnvdAccessToken: access, Domain: sandboxDomain(r.Host), Lifecycle: lifecycle{OnTimeout: onTimeout},
	})
	return nil
}

func (h *Handler) kill(w http.ResponseWriter, r *http.Request, c Caller) error {
	if err := h.cp.Destroy(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	h.cpu.forget(r.PathValue("id"))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// setTimeout serves POST /sandboxes/{id}/timeout: the sandbox now ends
// timeout seconds from now, sooner or later than before, at most the
// server's maximum lifetime from now (E2B's KeepAliveFor cuts it to what
// is left of the team's maximum; it was refused).
func (h *Handler) setTimeout(w http.ResponseWriter, r *http.Request, c Caller) error {
	var req struct {
		Timeout *int `json:"timeout"`
	}
	if err := apihttp.DecodeText(w, r, &req, maxBody); err != nil {
		return err
	}
	if req.Timeout == nil {
		return api.Invalid("timeout", "timeout is required", "")
	}
	// As E2B's: a negative timeout is 0, which ends the sandbox now; one
	// past the maximum lifetime is cut to it (SetExpiry).
	if _, err := h.cp.SetExpiry(r.Context(), c, r.PathValue("id"), h.now().Add(seconds(max(*req.Timeout, 0)))); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// seconds is n seconds, without overflowing a Duration: a timeout past
// the maximum lifetime is cut to it later, so any larger value does.
func seconds(n int) time.Duration {
	const most = math.MaxInt64 / int64(time.Second)
	return time.Duration(min(int64(n), most)) * time.Second
}

// refresh serves the older POST /sandboxes/{id}/refreshes: extend only.
func (h *Handler) refresh(w http.ResponseWriter, r *http.Request, c Caller) error {
	var req struct {
		Duration int `json:"duration"`
	}
	if err := apihttp.DecodeText(w, r, &req, maxBody); err != nil {
		return err
	}
	if _, err := h.extend(r.Context(), c, r.PathValue("id"), time.Duration(req.Duration)*time.Second); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// extend makes the sandbox last at least d from now, never shortening it.
func (h *Handler) extend(ctx context.Context, c Caller, id string, d time.Duration) (Sandbox, error) {
	sb, err := h.cp.Sandbox(ctx, c, id)
	if err != nil {
		return Sandbox{}, err
	}
	if at := h.now().Add(d); at.After(sb.ExpiresAt) {
		return h.cp.SetExpiry(ctx, c, id, at)
	}
	return sb, nil
}

// connect serves POST /v2/sandboxes/{id}/connect (and the older
// /sandboxes/{id}/connect and /resume): a paused sandbox is resumed (201),
// a running one answers 200; either way with its tokens (the same as
// before the pause) and its end moved to at least timeout from now.
func (h *Handler) connect(w http.ResponseWriter, r *http.Request, c Caller) error {
	var req struct {
		Timeout *int `json:"timeout"`
	}
	if err := apihttp.DecodeText(w, r, &req, maxBody); err != nil {
		return err
	}
	d := defaultTimeout
	if req.Timeout != nil {
		d = seconds(*req.Timeout) // extend never shortens: 0 or less changes nothing, as on E2B
	}
	id := r.PathValue("id")
	_, resumed, err := h.cp.Resume(r.Context(), c, id)
	if err != nil {
		return err
	}
	sb, err := h.extend(r.Context(), c, id, d)
	if err != nil {
		return err
	}
	rec, err := h.record(r.Context(), sb)
	if err != nil {
		return err
	}
	out, err := h.sandboxJSON(r, rec, c)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if resumed {
		status = http.StatusCreated
	}
	writeJSON(w, status, out)
	return nil
}

// pause serves POST /sandboxes/{id}/pause: {"memory": false} keeps only
// the files (boxkite's filesystem pause: its processes end, resume starts
// it again); otherwise the memory stays too (boxkite's freeze). 409 when
// it is paused already.
func (h *Handler) pause(w http.ResponseWriter, r *http.Request, c Caller) error {
	var req struct {
		Memory *bool `json:"memory"`
	}
	if err := apihttp.DecodeText(w, r, &req, maxBody); err != nil {
		return err
	}
	if err := h.cp.Pause(r.Context(), c, r.PathValue("id"), req.Memory == nil || *req.Memory); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// metricJSON is one sample of GET /sandboxes/{id}/metrics.
type metricJSON struct {
	Timestamp     time.Time `json:"timestamp"`
	TimestampUnix int64     `json:"timestampUnix"`
	CPUCount      int       `json:"cpuCount"`
	CPUUsedPct    float64   `json:"cpuUsedPct"`
	MemUsed       int64     `json:"memUsed"`
	MemTotal      int64     `json:"memTotal"`
	MemCache      int64     `json:"memCache"`
	DiskUsed      int64     `json:"diskUsed"`
	DiskTotal     int64     `json:"diskTotal"`
}

// metrics answers one sample, now: memory and disk use from the driver's
// accounting (0 when it has none), the size preset's CPUs and memory, and
// the sandbox's disk size (the driver's, else its storage). Disk use was
// always 0, and the size 0 but for a create that asked for storage.
func (h *Handler) metrics(w http.ResponseWriter, r *http.Request, c Caller) error {
	id := r.PathValue("id")
	sb, err := h.cp.Sandbox(r.Context(), c, id)
	if err != nil {
		return err
	}
	u, _, err := h.cp.Usage(r.Context(), c, id)
	if err != nil {
		h.cpu.forget(id)
		return err
	}
	size := sizes[sb.Size]
	pct, err := h.cpuUsedPct(r.Context(), c, id, u, size[0])
	if err != nil {
		return err
	}
	now := h.now().UTC()
	writeJSON(w, http.StatusOK, []metricJSON{{
		Timestamp: now, TimestampUnix: now.Unix(), CPUCount: size[0], CPUUsedPct: pct, MemUsed: u.MemoryBytes,
		MemTotal: int64(size[1]) << 20, DiskUsed: u.DiskUsedBytes,
		DiskTotal: cmp.Or(u.DiskTotalBytes, int64(sb.StorageGB*(1<<30))),
	}})
	return nil
}

// network serves PUT /sandboxes/{id}/network: boxkite's sandboxes reach
// nothing outside, so only a configuration that keeps it so is accepted.
func (h *Handler) network(w http.ResponseWriter, r *http.Request, c Caller) error {
	var req networkConfig
	if err := apihttp.DecodeText(w, r, &req, maxBody); err != nil {
		return err
	}
	if _, err := h.cp.Sandbox(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	if err := checkNetwork(req); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
