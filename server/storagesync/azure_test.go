package storagesync

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// TestTerseAzure: Azure's refusal is told by its status and code, not by
// the SDK's dump of the whole response (`boxkite up` showed the XML body
// as the reason the server did not start), and stays an azcore error.
func TestTerseAzure(t *testing.T) {
	resp := &http.Response{
		StatusCode: http.StatusForbidden,
		Header:     http.Header{"X-Ms-Error-Code": {"AuthorizationFailure"}},
		Body:       io.NopCloser(strings.NewReader(`<?xml version="1.0"?><Error><Code>AuthorizationFailure</Code></Error>`)),
		Request:    httptest.NewRequest(http.MethodGet, "http://127.0.0.1:1/acct/c1", nil),
	}
	err := terseAzure(runtime.NewResponseError(resp))
	if got, want := err.Error(), "the store answered 403 AuthorizationFailure"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if _, ok := errors.AsType[*azcore.ResponseError](err); !ok {
		t.Errorf("%T does not unwrap to *azcore.ResponseError", err)
	}
	if plain := errors.New("dial tcp: refused"); terseAzure(plain) != plain {
		t.Error("another error was changed")
	}
}
