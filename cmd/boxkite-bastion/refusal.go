package main

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gliderlabs/ssh"
	gossh "golang.org/x/crypto/ssh"

	"github.com/boxkite/boxkite/client/api"
)

// refusalText says why a key was refused and what to do, as far as the
// bastion may tell someone who has not authenticated: an unregistered key
// and a sandbox that is not the key's account's look the same.
func refusalText(sandbox string, key ssh.PublicKey, err error) (string, string) {
	e, ok := errors.AsType[*api.Error](err)
	switch {
	case !ok || e.Status >= 500:
		return "the control plane did not answer", "check that boxkite-server is running: `boxkite status`"
	case e.Status == 401 && e.Code == api.CodeUnauthorized:
		return "the bastion's key does not match the server's", "restart both with the same key (`boxkite down && boxkite up` locally)"
	case (e.Status == 409 || e.Status == 410) && e.Message != "":
		// The server says so only once the key is of the sandbox's
		// account: paused (resume it), destroyed, lost, each with its hint.
		return e.Message, cmp.Or(e.Hint, "create one with `boxkite session create`")
	case e.Status == 409:
		return fmt.Sprintf("sandbox %s is not active", sandbox), "create one with `boxkite session create`"
	}
	// ssh offers its keys one by one and the bastion cannot tell which is
	// the last: a later one may log in, and this banner is then moot.
	what := fmt.Sprintf("key %s is not registered to the account of sandbox %s, or there is no such sandbox "+
		"(if ssh logs in with another key, ignore this)", gossh.FingerprintSHA256(key), shownUser(sandbox))
	if !fullIDPattern.MatchString(sandbox) {
		// A label or an id prefix: only the proxy of ssh-config resolves those.
		return what, "the user name must be the sandbox's full id (`boxkite session ls`); " +
			"a label or an id prefix works through `boxkite ssh-config` (ssh LABEL.boxkite) or `boxkite ssh -s LABEL`"
	}
	return what, "register it with `boxkite ssh-keys add " + defaultPubFile(key.Type()) + "`, check the id with `boxkite session ls`, " +
		"or run `boxkite ssh -s ID`, which needs no key"
}

// defaultPubFile is where ssh-keygen puts the public half of a key of
// type typ by default: the file to register for the key ssh offered.
func defaultPubFile(typ string) string {
	switch {
	case typ == gossh.KeyAlgoRSA:
		return "~/.ssh/id_rsa.pub"
	case typ == gossh.KeyAlgoSKECDSA256:
		return "~/.ssh/id_ecdsa_sk.pub"
	case typ == gossh.KeyAlgoSKED25519:
		return "~/.ssh/id_ed25519_sk.pub"
	case strings.HasPrefix(typ, "ecdsa-"):
		return "~/.ssh/id_ecdsa.pub"
	}
	return "~/.ssh/id_ed25519.pub"
}

// fullIDPattern is a sandbox id as the control plane makes them (a UUID).
var fullIDPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// bannerSentKey marks a connection that was sent a banner of its kind
// ("" for any: the keyboard-interactive instruction is left out then).
type bannerSentKey struct{ kind string }

// refusal is a denied authentication attempt that shows the person why,
// in a banner (ssh prints it at its default log level), the first time on
// a connection for its kind: ssh may offer several keys, and one
// unregistered key's message is enough, but a registered key's own
// sandbox's state (kind: the message) is shown even after it.
func refusal(ctx ssh.Context, kind, what, hint string) error {
	if ctx.Value(bannerSentKey{kind}) != nil {
		return errDenied
	}
	ctx.SetValue(bannerSentKey{kind}, true)
	ctx.SetValue(bannerSentKey{}, true)
	return &gossh.BannerError{Err: errDenied, Message: "boxkite-bastion: " + what + "\r\nhint: " + hint + "\r\n"}
}

// maxUserShown is how much of a user name (a sandbox id, or what was
// typed in its place) a refusal echoes: a whole id (36 characters), and
// not a probe's thousands.
const maxUserShown = 40

// shownUser is user as a refusal names it: quoted and escaped like %q,
// its first maxUserShown characters (counted escaped) and an ellipsis
// when there are more.
func shownUser(user string) string {
	var b strings.Builder
	b.WriteByte('"')
	n := 0
	for i := 0; i < len(user); {
		_, w := utf8.DecodeRuneInString(user[i:])
		q := strconv.Quote(user[i : i+w])
		q = q[1 : len(q)-1]
		if n += utf8.RuneCountInString(q); n > maxUserShown {
			b.WriteString("…")
			break
		}
		b.WriteString(q)
		i += w
	}
	b.WriteByte('"')
	return b.String()
}
