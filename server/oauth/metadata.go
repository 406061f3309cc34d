package oauth

import (
	"fmt"
	"net/http"

	"github.com/boxkite/boxkite/server/internal/httpx"
)

// ServerMetadata is the authorization server's metadata (RFC 8414).
type ServerMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	RevocationEndpoint                string   `json:"revocation_endpoint"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	RevocationEndpointAuthMethods     []string `json:"revocation_endpoint_auth_methods_supported"`
	AuthorizationResponseIssParameter bool     `json:"authorization_response_iss_parameter_supported"`
}

// ResourceMetadata is the protected resource's metadata (RFC 9728).
type ResourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name"`
}

func (s *Service) serverMetadata(w http.ResponseWriter, r *http.Request) error {
	iss := s.issuer(r)
	httpx.WriteJSON(w, http.StatusOK, ServerMetadata{
		Issuer:                            iss,
		AuthorizationEndpoint:             iss + "/oauth/authorize",
		TokenEndpoint:                     iss + "/oauth/token",
		RegistrationEndpoint:              iss + "/oauth/register",
		RevocationEndpoint:                iss + "/oauth/revoke",
		ResponseTypesSupported:            []string{"code"},
		GrantTypesSupported:               []string{grantAuthorizationCode, grantRefreshToken},
		CodeChallengeMethodsSupported:     []string{"S256"},
		TokenEndpointAuthMethodsSupported: []string{"none"},
		RevocationEndpointAuthMethods:     []string{"none"},
		AuthorizationResponseIssParameter: true,
	})
	return nil
}

func (s *Service) resourceMetadata(w http.ResponseWriter, r *http.Request) error {
	httpx.WriteJSON(w, http.StatusOK, ResourceMetadata{
		Resource:               s.resource(r),
		AuthorizationServers:   []string{s.issuer(r)},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "boxkite hosted MCP",
	})
	return nil
}

// Challenge is the WWW-Authenticate value of a 401 from /mcp/ (RFC 9728
// §5.1): where a client finds the resource's metadata, and from it the
// authorization server.
func (s *Service) Challenge(r *http.Request) string {
	return fmt.Sprintf(`Bearer realm="boxkite", resource_metadata=%q`, s.issuer(r)+"/.well-known/oauth-protected-resource/mcp")
}
