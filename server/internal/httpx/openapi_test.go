package httpx

import (
	"strings"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TokenResponse has the name of api.TokenResponse, as a second
// package's type of that name would.
type TokenResponse struct {
	AccessToken string `json:"access_token"`
}

// TestOpenAPINameClash: two routes whose types share a name but not a
// package stop the document's build, instead of one schema describing
// both; the same type on two routes is one component.
func TestOpenAPINameClash(t *testing.T) {
	same := OpenAPI([]RouteDoc{
		{Pattern: "POST /a", Response: api.TokenResponse{}},
		{Pattern: "POST /b", Response: api.TokenResponse{}},
	})
	schemas := same["components"].(map[string]any)["schemas"].(map[string]any)
	if _, ok := schemas["TokenResponse"]; !ok {
		t.Fatalf("no TokenResponse component: %v", schemas)
	}
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, "both named TokenResponse") {
			t.Errorf("recovered %q, want a panic naming the clash", msg)
		}
	}()
	OpenAPI([]RouteDoc{
		{Pattern: "POST /a", Response: api.TokenResponse{}},
		{Pattern: "POST /b", Response: TokenResponse{}},
	})
}
