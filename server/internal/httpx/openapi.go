package httpx

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/boxkite/boxkite/client/api"
)

// RouteDoc documents one route.
type RouteDoc struct {
	Pattern  string // as registered: "METHOD /path/{wildcard}"
	Summary  string
	Auth     AuthKind
	Request  any    // a value of the JSON request body type; nil for none
	Response any    // a value of the JSON answer type; nil for none
	Status   int    // the success status; 0 means 200
	Produces string // the answer's content type when it is not JSON
	Query    []string
	Upload   bool // the body is a streamed upload (files/raw, files/archive)
	// NDJSON is the item type of the answer when the request asks for
	// application/x-ndjson (a streamed exec); nil for none.
	NDJSON any
	// AlsoStatus is a second success status with the same answer (a build
	// of an identical spec answers 200, a new one 202); 0 for none.
	AlsoStatus int
	// RateLimited: the route counts against a rate-limit bucket (bucketOf),
	// so it may answer 429.
	RateLimited bool
}

// MaxIdempotencyKeyLen bounds the Idempotency-Key header; the reference
// takes UUIDs.
const MaxIdempotencyKeyLen = 255

// AuthKind is how /openapi.json says a route is authenticated (its
// security requirement). A mounted route's zero value (AuthKey) takes its
// credential kind's (Cred.DocAuth).
type AuthKind int

const (
	AuthKey          AuthKind = iota // Authorization: Bearer <API key>
	AuthNone                         // public
	AuthKeyQuery                     // the key, or ?api_key= (event streams)
	AuthToken                        // Authorization: Bearer <access token from signup or login>
	AuthTokenOrAdmin                 // an access token, or an admin API key
)

// wildcardName finds {name} and {name...} in a route pattern.
var wildcardName = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)(\.\.\.)?\}`)

// OpenAPI turns docs into an OpenAPI 3.1 document.
func OpenAPI(docs []RouteDoc) map[string]any {
	g := &schemaGen{components: map[string]any{}, owners: map[string]reflect.Type{}, requests: map[reflect.Type]bool{}}
	g.requestTypes(docs)
	errResp := map[string]any{
		"description": "the error envelope",
		"content":     map[string]any{"application/json": map[string]any{"schema": g.schema(reflect.TypeFor[api.ErrorEnvelope]())}},
	}
	paths := map[string]map[string]any{}
	for _, d := range docs {
		method, path, ok := strings.Cut(d.Pattern, " ")
		if !ok {
			continue
		}
		path = wildcardName.ReplaceAllString(path, "{$1}")
		op := g.operation(method, path, d, errResp)
		if paths[path] == nil {
			paths[path] = map[string]any{}
		}
		paths[path][strings.ToLower(method)] = op
	}
	g.enum("Error", "code", errorCodes(), "stable: branch on it, never on message (docs/errors.md)")
	g.enum("Image", "failure_code", imageFailureCodes(), "why a build failed (a step failed, or the build's jail refused a connection or a write) or an import did (not an image archive, too big, the host's disk full, the server's fault)")
	stopReasons := []string{api.StopReasonTimeout, api.StopReasonOutputLimit, api.StopReasonMemoryLimit}
	const stopWhy = "why the sandbox killed the command: at its timeout (exit code 124), at the output cap on_output_limit stop asked for, or at the sandbox's memory limit (exit code 137, the OOM killer; a larger size raises it); absent when the command ended by itself"
	g.enum("ExecResult", "stop_reason", stopReasons, stopWhy)
	g.enum("ExecEvent", "stop_reason", stopReasons, stopWhy+" (exit events only)")
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "boxkite control plane",
			"version":     "1",
			"description": "Sandboxes for agent-generated code. Errors use one envelope: {\"error\": {code, message, hint, details, request_id}}; code is one of Error.code's enum. A path served for other methods than the one asked answers 405 method_not_allowed with an Allow header. Every answer carries the server's release in the " + api.HeaderServerVersion + " header (\"dev\" for builds without one), so clients can refuse a server older than they support. 429 and 503 answers may carry Retry-After (seconds).",
		},
		"paths": paths,
		"components": map[string]any{
			"schemas": g.components,
			"securitySchemes": map[string]any{
				"apiKey":      map[string]any{"type": "http", "scheme": "bearer", "description": "an API key, bxk_live_…"},
				"apiKeyQuery": map[string]any{"type": "apiKey", "in": "query", "name": "api_key"},
				"accessToken": map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": "JWT", "description": "from POST /v1/auth/signup or /v1/auth/login; 30 minutes"},
			},
		},
		"security": []any{map[string]any{"apiKey": []any{}}},
	}
}

// operation is the OpenAPI operation of route d, served as method path:
// its parameters, answers, security and request body.
func (g *schemaGen) operation(method, path string, d RouteDoc, errResp map[string]any) map[string]any {
	var params []any
	for _, m := range wildcardName.FindAllStringSubmatch(d.Pattern, -1) {
		params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
	}
	for _, q := range d.Query {
		params = append(params, map[string]any{"name": q, "in": "query", "schema": map[string]any{"type": "string"}})
	}
	responses := errorResponses(d, errResp)
	responses[statusKey(d.Status)] = g.response(d)
	if d.AlsoStatus != 0 {
		responses[statusKey(d.AlsoStatus)] = g.response(d)
	}
	if idempotent(method, d) {
		params = append(params, map[string]any{
			"name": api.HeaderIdempotencyKey, "in": "header",
			"description": "done at most once per credential, path and key for 24 h; a repeat gets the first answer again with Idempotent-Replayed: true",
			"schema":      map[string]any{"type": "string", "maxLength": MaxIdempotencyKeyLen},
		})
	}
	op := map[string]any{
		"summary":     d.Summary,
		"operationId": operationID(method, path),
		"responses":   responses,
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	switch d.Auth {
	case AuthNone:
		op["security"] = []any{}
	case AuthKeyQuery:
		op["security"] = []any{map[string]any{"apiKey": []any{}}, map[string]any{"apiKeyQuery": []any{}}}
	case AuthToken:
		op["security"] = []any{map[string]any{"accessToken": []any{}}}
	case AuthTokenOrAdmin:
		op["security"] = []any{map[string]any{"accessToken": []any{}}, map[string]any{"apiKey": []any{}}}
	}
	if d.Request != nil {
		op["requestBody"] = map[string]any{
			"required": true,
			"content":  map[string]any{"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(d.Request))}},
		}
	}
	return op
}

// errorCodes are the codes an error envelope may carry: every api.Code*
// constant except the image build failures (TestOpenAPIErrorCodes checks
// the list against client/api).
func errorCodes() []string {
	return []string{
		api.CodeBadRequest, api.CodeValidation, api.CodeUnauthorized, api.CodeInvalidAPIKey,
		api.CodeForbidden, api.CodeNotFound, api.CodeConflict, api.CodeLimitExceeded,
		api.CodeRateLimited, api.CodeSandboxFailed, api.CodeSidecarAuth, api.CodeSidecarNotReady,
		api.CodeInternal, api.CodeServiceUnavailable, api.CodeNotSupported, api.CodeMethodNotAllowed,
		api.CodeRequestTimeout, api.CodePayloadTooLarge, api.CodeUnsupportedMediaType, api.CodeHeadersTooLarge,
		api.CodeInsufficientStorage, api.CodeSandboxLost, api.CodeHostCapacity, api.CodeAuditUnavailable,
		api.CodeSandboxPaused, api.CodeSnapshotLimitReached, api.CodeVolumeLimitReached,
		api.CodeWrongCredentialType, api.CodeInvalidToken, api.CodeInvalidCredentials, api.CodeEmailTaken,
		api.CodeSSHKeyExists, api.CodeIdempotencyKeyReuse, api.CodeIdempotencyKeyInProgress,
		api.CodeGlobalCapacityReached, api.CodeConcurrentSandboxLimit, api.CodeMonthlyUsageLimit,
		api.CodeSandboxSizeLimitReached, api.CodeSandboxStorageLimitReached,
		api.CodeCommandNotAllowed, api.CodeTooManyRules, api.CodePatternTooLong, api.CodeInvalidPattern, api.CodeInvalidRules,
		api.CodeTakeoverNotPermitted, api.CodePermissionDenied, api.CodeNotADirectory, api.CodeMCPConnectionLabelTaken,
		api.CodeUnsafeWebhookURL, api.CodeWebhookLimitReached,
		api.CodeStorageUnavailable, api.CodeStorageFailed,
		api.CodeAlreadyMember, api.CodeLastOwner, api.CodeInviteUsed, api.CodeInviteExpired, api.CodeEmailMismatch,
		api.CodeSessionBudgetExceeded, api.CodeVolumeInUse, api.CodeImageInUse, api.CodeMCPConnectionNotFound,
		api.CodeSecretNameTaken, api.CodeInvalidAllowedHost, api.CodeUnsafeAllowedHost, api.CodeUnsupportedTrustTier,
		api.CodeSecretLimitReached, api.CodeSecretNotFound, api.CodeSecretNotReferenced, api.CodeDestinationNotAllowed, api.CodeSecretRequiresHTTPS,
		api.CodeSecretsUnavailable, api.CodeUpstreamTimeout, api.CodeUpstreamFailed,
		api.CodePreviewUnauthorized, api.CodePreviewUnreachable,
	}
}

// imageFailureCodes are Image.failure_code's values, never an HTTP answer's.
func imageFailureCodes() []string {
	return []string{
		api.CodeImageBuildFailed, api.CodeImageBuildEgressRefused, api.CodeImageBuildWriteRefused,
		api.CodeImageImportBadArchive, api.CodeImageImportTooBig, api.CodeImageImportDiskFull, api.CodeImageImportFailed,
	}
}

// enum makes a string property of a component schema an enum of values.
func (g *schemaGen) enum(schema, property string, values []string, description string) {
	obj, _ := g.components[schema].(map[string]any)
	props, _ := obj["properties"].(map[string]any)
	if props == nil {
		return
	}
	list := make([]any, len(values))
	for i, v := range values {
		list[i] = v
	}
	props[property] = map[string]any{"type": "string", "enum": list, "description": description}
}

// errorResponses lists the refusals d can get, each the error envelope
// (docs/errors.md): those of every request, those of a JSON body or an
// upload, 401 for a credential, 429 for a rate-limited route, and
// "default" for the rest. A path served for other methods answers them
// 405 with Allow; OpenAPI has no place for that, so the description says.
func errorResponses(d RouteDoc, errResp map[string]any) map[string]any {
	ref := func(why string) map[string]any {
		r := maps.Clone(errResp)
		r["description"] = why
		return r
	}
	out := map[string]any{
		"default": errResp,
		"400":     ref("bad_request: a malformed request (or body, where there is one)"),
		"431":     ref("headers_too_large: the header block is larger than 64 KiB"),
	}
	if d.Request != nil {
		out["408"] = ref("request_timeout: the body did not arrive within the body timeout")
		out["413"] = ref("payload_too_large: the body is larger than the route's limit")
		out["415"] = ref("unsupported_media_type: the body is not sent as application/json")
		out["422"] = ref("validation_error: a field has the wrong type or an out-of-range value; details name it")
	}
	if d.Upload {
		out["408"] = ref("request_timeout: the upload stalled for longer than the idle timeout")
	}
	if d.Auth != AuthNone {
		out["401"] = ref("unauthorized, invalid_api_key, invalid_token or wrong_credential_type")
	}
	if d.RateLimited {
		r := ref("rate_limited: too many requests this minute")
		r["headers"] = map[string]any{
			"Retry-After": map[string]any{"description": "seconds until the budget allows another", "schema": map[string]any{"type": "integer"}},
		}
		out["429"] = r
	}
	return out
}

// idempotent reports whether d honours Idempotency-Key (idempotency.go):
// credentialed POSTs whose body is not a streamed upload. The bastion's
// route has no account to scope a key to.
func idempotent(method string, d RouteDoc) bool {
	return method == http.MethodPost && d.Auth != AuthNone && !d.Upload &&
		d.Pattern != "POST /v1/bastion/takeover-token"
}

func statusKey(status int) string {
	if status == 0 {
		status = http.StatusOK
	}
	return strconv.Itoa(status)
}

// operationID names an operation from its method and path:
// "POST /v1/sandboxes/{id}/exec" → "post_sandboxes_id_exec".
func operationID(method, path string) string {
	var parts []string
	for p := range strings.SplitSeq(strings.TrimPrefix(path, "/v1"), "/") {
		p = strings.Trim(p, "{}")
		p = strings.NewReplacer("-", "_", ".", "_").Replace(p)
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.ToLower(method) + "_" + strings.Join(parts, "_")
}

// response documents d's success answer.
func (g *schemaGen) response(d RouteDoc) map[string]any {
	resp := map[string]any{"description": d.Summary}
	switch {
	case d.Produces == "text/event-stream" && d.Response != nil:
		resp["content"] = map[string]any{d.Produces: map[string]any{
			"schema":      map[string]any{"type": "string"},
			"itemSchema":  g.schema(reflect.TypeOf(d.Response)),
			"description": "each event's data is one JSON value of itemSchema",
		}}
	case d.Produces != "":
		content := map[string]any{}
		for ct := range strings.SplitSeq(d.Produces, ", ") {
			content[ct] = map[string]any{"schema": map[string]any{"type": "string"}}
		}
		resp["content"] = content
	case d.Response != nil:
		content := map[string]any{"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(d.Response))}}
		if d.NDJSON != nil {
			content[api.ContentTypeNDJSON] = map[string]any{
				"schema":      map[string]any{"type": "string"},
				"itemSchema":  g.schema(reflect.TypeOf(d.NDJSON)),
				"description": "with Accept: " + api.ContentTypeNDJSON + ", one JSON value of itemSchema a line",
			}
		}
		resp["content"] = content
	}
	return resp
}

// schemaGen generates JSON Schemas (2020-12, as OpenAPI 3.1 uses) for Go
// types, named structs as components.
type schemaGen struct {
	components map[string]any
	owners     map[string]reflect.Type // the Go type behind each component name
	requests   map[reflect.Type]bool   // types of request bodies (requestTypes)
}

// claim reports whether t's component still has to be written, and
// panics when another type of the same name wrote it: two packages'
// TokenResponse would otherwise share one schema, and the document would
// describe one of them wrongly. A route's type needs a name of its own.
func (g *schemaGen) claim(t reflect.Type) bool {
	if other, ok := g.owners[t.Name()]; ok {
		if other != t {
			panic(fmt.Sprintf("openapi: %s and %s are both named %s: rename one (component names must be unique)", other.PkgPath(), t.PkgPath(), t.Name()))
		}
		return false
	}
	g.owners[t.Name()] = t
	return true
}

var (
	timeType    = reflect.TypeFor[time.Time]()
	rawJSONType = reflect.TypeFor[json.RawMessage]()
)

// schemaOverrides are types whose JSON form is not their Go structure.
var schemaOverrides = map[reflect.Type]func(g *schemaGen) map[string]any{
	reflect.TypeFor[api.CommandRule](): func(*schemaGen) map[string]any {
		return map[string]any{"oneOf": []any{
			map[string]any{"type": "string", "description": "a program name: any arguments"},
			map[string]any{"type": "object", "required": []any{"command"}, "properties": map[string]any{
				"command":    map[string]any{"type": "string"},
				"args_allow": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
				"args_deny":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			}},
		}}
	},
}

func (g *schemaGen) schema(t reflect.Type) map[string]any {
	if f, ok := schemaOverrides[t]; ok {
		if t.Name() == "" {
			return f(g)
		}
		if g.claim(t) {
			g.components[t.Name()] = f(g)
		}
		return map[string]any{"$ref": "#/components/schemas/" + t.Name()}
	}
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == rawJSONType:
		return map[string]any{}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.schema(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem())}
	case reflect.Struct:
		if t.Name() == "" {
			return g.object(t)
		}
		if g.claim(t) { // claimed first: that stops recursion
			g.components[t.Name()] = g.object(t)
		}
		return map[string]any{"$ref": "#/components/schemas/" + t.Name()}
	}
	return map[string]any{} // interfaces: any JSON
}

// object is the schema of a struct's JSON fields, embedded structs
// inlined. An answer's field that is always written (no omitempty, a
// value that cannot be null) is required; request bodies (g.requests)
// list none, since the server fills in what they leave out.
func (g *schemaGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	g.fields(t, props, &required, !g.requests[t] && !marshalsItself(t))
	obj := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		slices.Sort(required)
		obj["required"] = required
	}
	return obj
}

var jsonMarshaler = reflect.TypeFor[json.Marshaler]()

// marshalsItself reports whether t has its own JSON encoding, whose
// fields reflection cannot tell are always there.
func marshalsItself(t reflect.Type) bool {
	return t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler)
}

// alwaysWritten reports whether encoding/json writes a field of type t
// without omitempty as a value, never null.
func alwaysWritten(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	case reflect.Struct:
		return !marshalsItself(t) || t == timeType
	}
	return false
}

func (g *schemaGen) fields(t reflect.Type, props map[string]any, required *[]string, mark bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				// A nil embedded pointer writes none of its fields.
				g.fields(ft, props, required, mark && f.Type.Kind() != reflect.Pointer)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		props[name] = g.schema(f.Type)
		omit := slices.Contains(strings.Split(opts, ","), "omitempty") || slices.Contains(strings.Split(opts, ","), "omitzero")
		if mark && !omit && alwaysWritten(f.Type) {
			*required = append(*required, name)
		}
	}
}

// requestTypes marks the named struct types reachable from the request
// bodies of docs, which object leaves without required fields.
func (g *schemaGen) requestTypes(docs []RouteDoc) {
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			walk(t.Elem())
		case reflect.Struct:
			if g.requests[t] || t == timeType {
				return
			}
			g.requests[t] = true
			for i := range t.NumField() {
				walk(t.Field(i).Type)
			}
		}
	}
	for _, d := range docs {
		if d.Request != nil {
			walk(reflect.TypeOf(d.Request))
		}
	}
}
