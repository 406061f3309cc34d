package secrets

import (
	"fmt"
	"net/http"

	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

// The /v1/secrets handlers. The control plane authenticates the caller
// and passes its account id; errors are *api.Error for refusals, any
// other error an internal failure the caller logs.

const maxBody = 1 << 20

// ServeCreate serves POST /v1/secrets.
func (s *Service) ServeCreate(w http.ResponseWriter, r *http.Request, accountID string) error {
	var req api.CreateSecretRequest
	if err := httpx.DecodeJSON(w, r, &req, maxBody); err != nil {
		return err
	}
	out, err := s.Create(r.Context(), accountID, req)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, out)
	return nil
}

// ServeList serves GET /v1/secrets.
func (s *Service) ServeList(w http.ResponseWriter, r *http.Request, accountID string) error {
	out, err := s.List(r.Context(), accountID)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// ServeUpdate serves PUT /v1/secrets/{id}.
func (s *Service) ServeUpdate(w http.ResponseWriter, r *http.Request, accountID string) error {
	var req api.UpdateSecretRequest
	if err := httpx.DecodeJSON(w, r, &req, maxBody); err != nil {
		return err
	}
	out, err := s.Update(r.Context(), accountID, r.PathValue("id"), req)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// ServeDelete serves DELETE /v1/secrets/{id}.
func (s *Service) ServeDelete(w http.ResponseWriter, r *http.Request, accountID string) error {
	if err := s.Delete(r.Context(), accountID, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// DecodeHTTPRequest reads the body of POST /v1/sandboxes/{id}/http-request.
// An absent timeout is the default; an explicit 0 is refused.
func DecodeHTTPRequest(w http.ResponseWriter, r *http.Request) (api.HTTPRequest, error) {
	var body struct {
		api.HTTPRequest
		Timeout *int `json:"timeout"`
	}
	if err := httpx.DecodeJSON(w, r, &body, api.MaxHTTPRequestBody+maxBody); err != nil {
		return api.HTTPRequest{}, err
	}
	req := body.HTTPRequest
	if body.Timeout != nil {
		if *body.Timeout < 1 || *body.Timeout > api.MaxHTTPRequestTimeout {
			return api.HTTPRequest{}, api.Invalid("timeout", fmt.Sprintf("timeout must be 1 to %d seconds, got %d", api.MaxHTTPRequestTimeout, *body.Timeout),
				fmt.Sprintf("omit timeout for the default of %d seconds", api.DefaultHTTPRequestTimeout))
		}
		req.Timeout = *body.Timeout
	}
	return req, nil
}
