package tools

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

var redactTests = []struct {
	name, in, want string
}{
	// Positives, one or more per pattern.
	{"api key", "api_key=abcdefghij0123456789", "[REDACTED_KEY]"},
	{"api key json", `{"apiKey": "abcdefghij0123456789xyz"}`, `{"[REDACTED_KEY]"}`},
	{"access token", "ACCESS_TOKEN: 'abcdefghij0123456789-_ab'", "[REDACTED_KEY]'"},
	{"aws key id", "id AKIAIOSFODNN7EXAMPLE here", "id [REDACTED_AWS_KEY] here"},
	{"aws secret", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "[REDACTED_AWS_SECRET]"},
	{"azure connection string", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=abc+/def==;EndpointSuffix=core.windows.net", "[REDACTED_AZURE_CONN_STRING];EndpointSuffix=core.windows.net"},
	{"azure account key", "AccountKey=abc+/def==", "AccountKey=[REDACTED]"},
	{"password", "password: hunter2hunter2", "password=[REDACTED]"},
	{"password env", "DB_PASSWORD=s3cr3tpassw0rd\nNEXT=1", "DB_PASSWORD=[REDACTED]\nNEXT=1"},
	{"password json", `"passwd": "correct-horse"`, `"passwd=[REDACTED]"`},
	{"pwd value", "pwd=hunter2hunter2", "pwd=[REDACTED]"},
	{"jwt", "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.c2lnbmF0dXJl ok", "token [REDACTED_JWT] ok"},
	{"github classic", "ghp_0123456789abcdefghijABCDEFGHIJ012345", "[REDACTED_GITHUB_TOKEN]"},
	{"github fine-grained", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP", "[REDACTED_GITHUB_TOKEN]"},
	{"gitlab", "glpat-abcdefghij0123456789", "[REDACTED_GITLAB_TOKEN]"},
	{"openssh key", "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----\ndone", "key:\n[REDACTED_SSH_PRIVATE_KEY]\ndone"},
	{"rsa key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow==\n-----END RSA PRIVATE KEY-----", "[REDACTED_SSH_PRIVATE_KEY]"},
	{"pkcs8 key", "-----BEGIN PRIVATE KEY-----\nMIIEvQ==\n-----END PRIVATE KEY-----", "[REDACTED_SSH_PRIVATE_KEY]"},
	{"pgp key", "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOY\n-----END PGP PRIVATE KEY BLOCK-----", "[REDACTED_PGP_PRIVATE_KEY]"},
	{"key cut off", "head\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE", "head\n[REDACTED_SSH_PRIVATE_KEY]"},
	{"two keys", "-----BEGIN EC PRIVATE KEY-----\na\n-----END EC PRIVATE KEY-----\nmid\n-----BEGIN EC PRIVATE KEY-----\nb\n-----END EC PRIVATE KEY-----", "[REDACTED_SSH_PRIVATE_KEY]\nmid\n[REDACTED_SSH_PRIVATE_KEY]"},
	{"boxkite key", "BOXKITE_API_KEY=bxk_live_Ab3-_xYz0123456789abcdefghijklmnopqrstuvwxy", "BOXKITE_API_KEY=[REDACTED_BOXKITE_KEY]"},
	{"bearer", "Authorization: Bearer abcdef0123456789abcdef.xyz", "Authorization: Bearer [REDACTED]"},
	{"basic", "http.extraheader=Authorization: Basic eC1hY2Nlc3MtdG9rZW46dG9r", "http.extraheader=Authorization: Basic [REDACTED]"},
	{"openai", "OPENAI=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD", "OPENAI=[REDACTED_KEY]"},
	{"anthropic", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789", "[REDACTED_KEY]"},
	{"stripe", "sk_live_51HabcdefGHIJKLMNOP", "[REDACTED_KEY]"},
	{"slack", "xoxb-123456789012-abcdefghij", "[REDACTED_SLACK_TOKEN]"},
	{"google", "AIzaSyA-abcdefghijklmnopqrstuvwxyz01234", "[REDACTED_KEY]"},
	{"pat", "token abcd_Ab3dEf6hIj9kLm2nOp5q end", "token [REDACTED_PAT] end"},
	{"url password", "psql postgres://app:Tr0ub4dor3@db.internal:5432/x", "psql postgres://app:[REDACTED]@db.internal:5432/x"},
	{"git remote token", "git clone https://oauth2:s3cret-t0k@git.example.com/a.git", "git clone https://oauth2:[REDACTED]@git.example.com/a.git"},

	// Near misses that must stay as they are.
	{"password prose", "the archive is password protected", "the archive is password protected"},
	{"pwd output", "$ pwd\n/workspace/project", "$ pwd\n/workspace/project"},
	{"PWD variable", "PWD=/workspace/project\nOLDPWD=/workspace", "PWD=/workspace/project\nOLDPWD=/workspace"},
	{"short password", "password=abc", "password=abc"},
	{"snake case identifier", "test_thisisaverylongfunctionname", "test_thisisaverylongfunctionname"},
	{"upper snake case", "CONFIG_SOMETHINGVERYLONGNAMEHERE", "CONFIG_SOMETHINGVERYLONGNAMEHERE"},
	{"short aws", "AKIA1234", "AKIA1234"},
	{"short github", "ghp_short", "ghp_short"},
	{"one jwt segment", "eyJhbGciOiJIUzI1NiJ9", "eyJhbGciOiJIUzI1NiJ9"},
	{"short api key", "api_key=short", "api_key=short"},
	{"sk-learn", "pip install scikit-learn # sk-learn", "pip install scikit-learn # sk-learn"},
	{"bearer word", "Bearer token required", "Bearer token required"},
	{"url without password", "ssh://git@github.com:22/a/b.git https://example.com:8443/a@b", "ssh://git@github.com:22/a/b.git https://example.com:8443/a@b"},
	{"public key", "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----", "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----"},
	{"certificate", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"},
	{"commit hash", "commit 1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b", "commit 1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"},
	{"uuid", "id 123e4567-e89b-12d3-a456-426614174000", "id 123e4567-e89b-12d3-a456-426614174000"},
	{"account name", "AccountName=foo;", "AccountName=foo;"},
	{"basic prose", "basic authentication is disabled", "basic authentication is disabled"},
}

func TestRedact(t *testing.T) {
	for _, tt := range redactTests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Redact(tt.in); got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestScrub(t *testing.T) {
	got := scrub("a tok3n and tok3n, but not ab", "tok3n", "ab", "")
	if want := "a [REDACTED_SECRET] and [REDACTED_SECRET], but not ab"; got != want {
		t.Errorf("scrub = %q, want %q", got, want)
	}
}

// FuzzRedact: Redact never panics, is idempotent, and leaves text without
// any of the trigger strings alone.
func FuzzRedact(f *testing.F) {
	for _, tt := range redactTests {
		f.Add(tt.in)
	}
	f.Add("password=password=password=12345678")
	f.Add("api_key: AKIAIOSFODNN7EXAMPLE0000")
	f.Fuzz(func(t *testing.T, s string) {
		once := Redact(s)
		if twice := Redact(once); twice != once {
			t.Errorf("Redact is not idempotent on %q:\nonce:  %q\ntwice: %q", s, once, twice)
		}
		if !strings.ContainsAny(s, "_-=:") && len(s) < 11 && once != s { // the shortest match, a JWT, is 11 bytes
			t.Errorf("Redact(%q) = %q; nothing in it is secret-shaped", s, once)
		}
	})
}

// stream feeds s to a StreamRedactor cut at the given offsets (ascending)
// and returns everything it passed on, Flush included.
func stream(s string, cuts ...int) string {
	var r StreamRedactor
	var out []byte
	prev := 0
	for _, c := range cuts {
		out = append(out, r.Write([]byte(s[prev:c]))...)
		prev = c
	}
	out = append(out, r.Write([]byte(s[prev:]))...)
	return string(append(out, r.Flush()...))
}

// TestStreamRedactorSplits: a secret split between two writes, at any
// byte, is redacted as if it had come whole (issue 17, finding 4).
func TestStreamRedactorSplits(t *testing.T) {
	for _, tt := range redactTests {
		in := "some output before it\n" + tt.in + "\nand after it\n"
		want := Redact(in)
		for cut := 0; cut <= len(in); cut++ {
			if got := stream(in, cut); got != want {
				t.Fatalf("%s: cut at %d of %q:\n got %q\nwant %q", tt.name, cut, in, got, want)
			}
		}
	}
	// Three pieces, each cut inside the secret.
	in := "x AKIAIOSFODNN7EXAMPLE and password: hunter2hunter2 and ghp_0123456789abcdefghijABCDEFGHIJ012345 y"
	want := Redact(in)
	for i := 0; i < len(in); i += 3 {
		for j := i; j < len(in); j += 5 {
			if got := stream(in, i, j); got != want {
				t.Fatalf("cuts %d, %d: got %q, want %q", i, j, got, want)
			}
		}
	}
}

// TestStreamRedactorHolds: what is passed on at once and what waits for
// more (or Flush).
func TestStreamRedactorHolds(t *testing.T) {
	tests := []struct {
		name, in string
		held     string // the end held back
	}{
		{"whole lines", "line one\nline two\n", ""},
		{"a prompt", "Enter your name: ", ""},
		{"a word in progress", "building 50", "50"},
		{"a keyword and its separator", "api_key = ", "api_key = "},
		{"a password prompt", "Password: ", "Password: "},
		{"a bearer header", "Authorization: Bearer ", "Authorization: Bearer "},
		{"a key block without its end", "x\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabcd\n", "-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabcd\n"},
		{"the start of a key block", "x\n-----BEG", "-----BEG"},
		{"a finished key block", "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n", ""},
		{"a JWT in progress", "tok eyJhbGciOiJIUzI1NiJ9.", "eyJhbGciOiJIUzI1NiJ9."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r StreamRedactor
			out := r.Write([]byte(tt.in))
			if got := tt.in[len(tt.in)-r.Held():]; got != tt.held || string(out) != Redact(tt.in[:len(tt.in)-r.Held()]) {
				t.Errorf("Write(%q) passed %q and held %q, want %q held", tt.in, out, got, tt.held)
			}
			if rest := string(r.Flush()); rest != Redact(tt.held) || r.Held() != 0 {
				t.Errorf("Flush = %q, want %q", rest, Redact(tt.held))
			}
		})
	}
	var r StreamRedactor
	r.Write([]byte(strings.Repeat("x", 3*maxRedactHold)))
	if r.Held() > maxRedactHold {
		t.Errorf("held %d bytes, more than %d", r.Held(), maxRedactHold)
	}
	if r.Redacted() {
		t.Error("Redacted after nothing secret")
	}
	r.Write([]byte(" AKIAIOSFODNN7EXAMPLE "))
	if !r.Redacted() {
		t.Error("not Redacted after an AWS key")
	}
}

// FuzzStreamRedactor: however a text is cut into pieces, what comes out is
// what Redact makes of it whole (for text without words longer than the
// trailing run a StreamRedactor holds), and never cuts a character.
func FuzzStreamRedactor(f *testing.F) {
	for _, tt := range redactTests {
		f.Add(tt.in, uint16(len(tt.in)/2), uint16(len(tt.in)/3))
	}
	f.Fuzz(func(t *testing.T, s string, a, b uint16) {
		if s == "" || !utf8.ValidString(s) || longestWord(s) >= maxTrailingRun || len(s) > redactWindow {
			return
		}
		i, j := int(a)%(len(s)+1), int(b)%(len(s)+1)
		i, j = min(i, j), max(i, j)
		for !utf8.RuneStart(s[min(i, len(s)-1)]) && i < len(s) {
			i++
		}
		for j < len(s) && !utf8.RuneStart(s[j]) {
			j++
		}
		j = max(i, j)
		got := stream(s, i, j)
		if want := Redact(s); got != want {
			t.Errorf("cuts %d, %d of %q:\n got %q\nwant %q", i, j, s, got, want)
		}
	})
}

func longestWord(s string) int {
	longest, n := 0, 0
	for i := 0; i < len(s); i++ {
		if isBlank(s[i]) {
			n = 0
			continue
		}
		n++
		longest = max(longest, n)
	}
	return longest
}

// benchOutput is n bytes of ordinary command output (a test run's lines),
// with no secret in it.
func benchOutput(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString("ok  \tgithub.com/example/project/internal/pkg_name\t0.123s\tcoverage: 81.2% of statements\n")
	}
	return b.String()[:n]
}

func BenchmarkRedact(b *testing.B) {
	for _, n := range []int{1 << 10, 1 << 20} {
		s := benchOutput(n)
		b.Run(strings.TrimSuffix(byteSize(n), " "), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				Redact(s)
			}
		})
	}
}

// BenchmarkStreamRedactor: 1 MiB of output through a StreamRedactor in
// pieces of the given size, as a stream delivers it.
func BenchmarkStreamRedactor(b *testing.B) {
	s := []byte(benchOutput(1 << 20))
	for _, piece := range []int{100, 4 << 10, 32 << 10} {
		b.Run(byteSize(piece)+"-pieces", func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				var r StreamRedactor
				for i := 0; i < len(s); i += piece {
					r.Write(s[i:min(i+piece, len(s))])
				}
				r.Flush()
			}
		})
	}
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}
