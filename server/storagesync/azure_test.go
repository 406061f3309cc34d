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

// FuzzBlobName: every key maps to a blob name without '\' (which Azure
// reads as '/') and back to itself, so two keys never share a blob.
func FuzzBlobName(f *testing.F) {
	for _, s := range []string{`a\b`, "a/b", "%", "%5C", `%5C\`, "%25", "p%20q%zz", "", "%%5c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		name := blobName(key)
		if strings.Contains(name, `\`) {
			t.Errorf("blobName(%q) = %q holds a backslash", key, name)
		}
		if back := blobKey(name); back != key {
			t.Errorf("blobKey(blobName(%q)) = %q", key, back)
		}
	})
}
