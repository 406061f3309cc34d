package storagesync

import (
	"context"
	"encoding/json"
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
)

// A store's error can carry a credential: the Azure SDK's transport error
// names the request's URL, and with a SAS that URL holds the token; a
// message may quote what it could not parse. Every error a Backend from
// Open returns, and Open's own, is cut of the Config's credentials (and
// of any SAS signature) before anyone sees it: the sync status, the
// audit log, the server's log and `boxkite up`'s output all get it from
// there.

// secrets lists the credentials c holds: each as given, and the parts a
// message could quote alone (a connection string's key and SAS, a SAS
// URL's query and signature, a service account key file's private key,
// line by line).
func (c Config) secrets() []string {
	out := []string{c.SecretKey, c.SessionToken, c.AccountKey, c.ConnectionString, c.SASURL}
	for _, part := range strings.Split(c.ConnectionString, ";") {
		k, v, _ := strings.Cut(part, "=")
		if strings.EqualFold(k, "AccountKey") || strings.EqualFold(k, "SharedAccessSignature") {
			out = append(out, v)
			out = append(out, sasParts(v)...)
		}
	}
	if _, q, ok := strings.Cut(c.SASURL, "?"); ok {
		out = append(out, q)
		out = append(out, sasParts(q)...)
	}
	if c.CredentialsFile != "" {
		out = append(out, keyFileSecrets(c.CredentialsFile)...)
	}
	return out
}

// sasParts is a SAS token's signature, as written and decoded.
func sasParts(q string) []string {
	vals, err := url.ParseQuery(strings.TrimPrefix(q, "?"))
	if err != nil {
		return nil
	}
	var out []string
	for _, sig := range vals["sig"] {
		out = append(out, sig, url.QueryEscape(sig))
	}
	return out
}

// keyFileSecrets are the secrets of a GCS credentials file: the private
// key whole and each of its lines, its id, and an authorized user's
// client secret and refresh token. A file that cannot be read or parsed
// yields none (Open then fails on it, saying why).
func keyFileSecrets(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var k struct {
		PrivateKey   string `json:"private_key"`
		PrivateKeyID string `json:"private_key_id"`
		ClientSecret string `json:"client_secret"`
		RefreshToken string `json:"refresh_token"`
	}
	if json.NewDecoder(io.LimitReader(f, 1<<20)).Decode(&k) != nil {
		return nil
	}
	out := []string{k.PrivateKey, k.PrivateKeyID, k.ClientSecret, k.RefreshToken}
	for line := range strings.SplitSeq(k.PrivateKey, "\n") {
		if !strings.HasPrefix(line, "-----") {
			out = append(out, line)
		}
	}
	return out
}

// sasSignature matches a SAS token's (or a presigned URL's) signature.
var sasSignature = regexp.MustCompile(`(?i)\b(sig|x-amz-signature|x-amz-credential|x-amz-security-token)=[^\s&;"'<>]*`)

// newRedactor returns a function that cuts secrets (those of at least 8
// bytes: shorter ones would cut words of the message) and any signature
// out of a text.
func newRedactor(secrets []string) func(string) string {
	var ss []string
	for _, v := range secrets {
		if len(v) >= 8 {
			ss = append(ss, v)
		}
	}
	// Longer first: a secret that holds another is cut whole.
	slices.SortFunc(ss, func(a, b string) int { return len(b) - len(a) })
	return func(msg string) string {
		for _, v := range ss {
			msg = strings.ReplaceAll(msg, v, "[redacted]")
		}
		return sasSignature.ReplaceAllString(msg, "$1=[redacted]")
	}
}

// redactedError is an error whose text had a secret cut out; it still
// unwraps to the error it was (errors.Is, errors.As hold).
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactErr is err, or when its text holds a secret, err with it cut.
func redactErr(redact func(string) string, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if r := redact(msg); r != msg {
		return &redactedError{msg: r, err: err}
	}
	return err
}

// guarded is a Backend whose errors are redacted (Open returns one).
type guarded struct {
	b      Backend
	redact func(string) string
	// keys are the credentials, for the Service's own redaction of the
	// errors it keeps (a flush's error also names the workspace).
	keys []string
}

func (g *guarded) Kind() string { return g.b.Kind() }

func (g *guarded) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	return redactErr(g.redact, g.b.Put(ctx, key, r, size))
}

func (g *guarded) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	rc, err := g.b.Get(ctx, key)
	if err != nil {
		return nil, redactErr(g.redact, err)
	}
	return &guardedReader{ReadCloser: rc, redact: g.redact}, nil
}

func (g *guarded) Delete(ctx context.Context, key string) error {
	return redactErr(g.redact, g.b.Delete(ctx, key))
}

func (g *guarded) List(ctx context.Context, prefix string, fn func(Object) error) error {
	return redactErr(g.redact, g.b.List(ctx, prefix, fn))
}

func (g *guarded) secrets() []string { return g.keys }

func (g *guarded) createsBucket() bool {
	m, ok := g.b.(bucketMaker)
	return ok && m.createsBucket()
}

func (g *guarded) ensureBucket(ctx context.Context) (bool, error) {
	m, ok := g.b.(bucketMaker)
	if !ok {
		return false, nil
	}
	made, err := m.ensureBucket(ctx)
	return made, redactErr(g.redact, err)
}

// guardedReader redacts the errors of a read that breaks off.
type guardedReader struct {
	io.ReadCloser
	redact func(string) string
}

func (r *guardedReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	return n, redactErr(r.redact, err) // io.EOF stays itself
}
