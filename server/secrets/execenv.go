package secrets

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
	"github.com/boxkite/boxkite/server/internal/scrub"
	"github.com/boxkite/boxkite/server/model"
)

// ExecEnv returns what resolves an exec's secret_env into its env, when
// the server allows that weaker mode (allowed: --allow-secret-env), and
// returns what wraps the JSON result so the values' echoes are redacted
// (nil for none). A stream is refused: its output could carry a value
// split across events. s may be nil (a server without secrets).
func (s *Service) ExecEnv(allowed bool) func(r *http.Request, sb *model.Sandbox, req *api.ExecRequest) (func(http.ResponseWriter) (http.ResponseWriter, func()), error) {
	return func(r *http.Request, sb *model.Sandbox, req *api.ExecRequest) (func(http.ResponseWriter) (http.ResponseWriter, func()), error) {
		return s.execEnv(allowed, r, sb, req)
	}
}

func (s *Service) execEnv(allowed bool, r *http.Request, sb *model.Sandbox, req *api.ExecRequest) (func(http.ResponseWriter) (http.ResponseWriter, func()), error) {
	if len(req.SecretEnv) == 0 {
		return nil, nil
	}
	if !allowed {
		return nil, httpx.NotSupported("secret_env", "the server keeps secrets out of sandboxes: use http_request, or start boxkite-server with --allow-secret-env (docs/secrets.md)")
	}
	if strings.Contains(r.Header.Get("Accept"), api.ContentTypeNDJSON) {
		return nil, httpx.Invalid("secret_env", "secret_env works with the JSON result, not a stream", "drop Accept: application/x-ndjson")
	}
	vars, values, err := s.EnvValues(r.Context(), sb.AccountID, sb.ID, req.SecretEnv)
	if err != nil {
		return nil, err
	}
	if req.Env == nil {
		req.Env = map[string]string{}
	}
	for k, v := range vars {
		if _, dup := req.Env[k]; dup {
			return nil, httpx.Invalid("secret_env", fmt.Sprintf("%s is in both env and secret_env", k), "")
		}
		if strings.ContainsRune(v, 0) {
			// The sidecar would refuse it as "env variable … contains a
			// NUL byte", after the exec reached the sandbox.
			name := req.SecretEnv[k]
			return nil, httpx.Invalid("secret_env", fmt.Sprintf("the value of secret %s holds a NUL byte, which an environment variable cannot", name),
				fmt.Sprintf("use it through http_request ({{secret:%s}}), or give it a value without one ('boxkite secrets set %s')", name, name))
		}
		req.Env[k] = v
	}
	red := NewRedactor(values)
	return func(w http.ResponseWriter) (http.ResponseWriter, func()) {
		j := scrub.NewJSONRewriter(w, func(b []byte) []byte { return []byte(red.Apply(string(b))) })
		return j, j.Finish
	}, nil
}
