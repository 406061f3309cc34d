package api

import "time"

// ServerStopBound is the most a stopping boxkite-server (SIGTERM) spends
// on its sandboxes after it stopped serving: their final storage flush
// (docs/storage.md) and their stop. `boxkite down` waits longer than this
// (and the server's drain of requests in flight) before it SIGKILLs the
// server, so the final flush is never cut by the CLI.
const ServerStopBound = 30 * time.Second
