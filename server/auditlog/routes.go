package auditlog

import (
	"github.com/boxkite/boxkite/client/api"
	"github.com/boxkite/boxkite/server/internal/httpx"
)

// Routes lists the audit log's routes. The watch stream also takes
// ?api_key= (EventSource cannot send headers).
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/sandboxes/{id}/log", Summary: "A page of the sandbox's hash-chained audit log, oldest first", Response: api.LogPage{}, Query: []string{"limit", "offset"}}, Cred: httpx.CredAPIKey, Handler: s.getLog},
		{RouteDoc: httpx.RouteDoc{Pattern: "GET /v1/sandboxes/{id}/watch", Summary: "Server-sent events: the newest 100 audit entries, then each new one as it is written (id: entry id, data: LogEntry JSON); Last-Event-ID resumes", Response: api.LogEntry{}, Produces: "text/event-stream", Query: []string{"last_event_id"}}, Cred: httpx.CredAPIKeyQuery, Handler: s.watch},
	}
}
