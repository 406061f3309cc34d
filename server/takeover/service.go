package takeover

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/coder/websocket"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/audit"
	"github.com/boxkite/boxkite/server/model"
)

// Deps is what the takeover service needs of the control plane.
type Deps struct {
	Store model.Store
	Audit *audit.Log
	Log   *slog.Logger
	Now   func() time.Time
	// LoadSandbox loads the request's {id} sandbox for its caller;
	// LoadActive also refuses one that is not active, with NotActive's
	// answer (which the bastion's mint gives too).
	LoadSandbox func(r *http.Request) (*model.Sandbox, error)
	LoadActive  func(r *http.Request) (*model.Sandbox, error)
	NotActive   func(sb *model.Sandbox) *api.Error
	// DialSidecarWS opens a WebSocket route of the sandbox's sidecar; a
	// refusal is the *api.Error to answer.
	DialSidecarWS func(r *http.Request, sb *model.Sandbox, path string, q url.Values, failMsg string) (*websocket.Conn, error)
	// DetachesWhenIdle reports whether sandbox id's sidecar answers a
	// {"type":"detach","until_idle":true} frame (the protocol version its
	// last answer, the terminal's upgrade, stated). One that does not
	// ignores it; the relay then detaches at once.
	DetachesWhenIdle func(id string) bool
	// EndedAnswer is why a call to sb ended when the sandbox went with it
	// (destroyed, expired, lost; worded the same while the destroy runs
	// and after; paused), or nil while it is active.
	EndedAnswer func(ctx context.Context, sb *model.Sandbox) *api.Error
	// WatchCalls calls fn with the cause each time the calls to sandbox
	// id are ended (sidecar.Calls.Watch): a pause, under a terminal.
	WatchCalls func(id string, fn func(cause error)) (stop func())
	// AuthenticateKey authenticates the request by API key (the guard's).
	AuthenticateKey func(r *http.Request, token string) error
	// CredentialValid reports whether a credential id (API key or SSH key)
	// is still valid.
	CredentialValid func(ctx context.Context, id string) (bool, error)
	// KeyRole returns the role API key id acts with now ("" when it is not
	// valid) and its count of demotions (model.APIKey.Demotions), read
	// when a takeover token it minted is used.
	KeyRole func(ctx context.Context, id string) (role string, demotions int64, err error)
	// JWTKey is the key that signs tokens.
	JWTKey func(ctx context.Context) ([]byte, error)
	// BastionKey is what boxkite-bastion presents; "" turns its route off.
	BastionKey string
	// Recording keeps an asciicast of every takeover.
	Recording bool
	// FlushInterval is how often typed input goes to the audit log.
	FlushInterval time.Duration
}

// Service serves terminal takeovers.
type Service struct{ d Deps }

// New returns the service; every field of d but BastionKey and
// Recording is required.
func New(d Deps) (*Service, error) {
	if d.Store == nil || d.Audit == nil || d.Log == nil || d.Now == nil || d.LoadSandbox == nil || d.LoadActive == nil || d.NotActive == nil ||
		d.DialSidecarWS == nil || d.DetachesWhenIdle == nil || d.EndedAnswer == nil || d.WatchCalls == nil || d.AuthenticateKey == nil || d.CredentialValid == nil || d.KeyRole == nil || d.JWTKey == nil || d.FlushInterval <= 0 {
		return nil, errors.New("takeover: a dependency is missing")
	}
	return &Service{d: d}, nil
}

// loadAudited loads the request's active sandbox for an audited
// operation: refused while the audit log takes no entries.
func (s *Service) loadAudited(r *http.Request) (*model.Sandbox, error) {
	sb, err := s.d.LoadActive(r)
	if err != nil {
		return nil, err
	}
	if err := s.d.Audit.Open(); err != nil {
		return nil, err
	}
	return sb, nil
}
