package main

import (
	"encoding/json"
	"testing"

	"github.com/boxkite/boxkite/client/api"
)

// TestFrameFitsLargestCall checks that the stdio transport takes the
// longest line a valid call can make: a file_create at the 10 MiB limit
// whose every byte JSON escapes to six (a control character). The SDK's
// default bound (16 MiB) is less, and a line past it ends the server,
// taking every tool from the agent (a 9 MiB file of newlines did).
func TestFrameFitsLargestCall(t *testing.T) {
	// The call with one such byte, then the rest of the limit at its
	// escaped size (encoding all 10 MiB takes seconds under -race).
	call, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": "file_create", "arguments": map[string]any{"session_id": "sb-1", "path": "a.txt", "content": "\x01"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	one, _ := json.Marshal("\x01")
	need := len(call) + (len(one)-2)*(api.MaxFileContent-1) + 1 // and the newline
	if n := stdioTransport(nil, nil).MaxLineLength; n < need {
		t.Errorf("stdio frame bound = %d bytes, want at least %d (a file_create at the content limit, escaped)", n, need)
	}
}
