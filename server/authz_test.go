package server_test

import (
	"testing"

	"github.com/boxkite/boxkite/server"
)

// TestStoreBehindAuthorization: the server keeps no handle on its store
// but the authorization layer (server/internal/authz), which every
// subsystem is given; TestStoreAuthorized there covers each method.
func TestStoreBehindAuthorization(t *testing.T) {
	e := newEnv(t, server.Config{})
	if !e.Server.StoreAuthorized() {
		t.Fatal("the server's store is not behind server/internal/authz")
	}
}
