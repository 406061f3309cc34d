package main

import (
	"bytes"
	"io"
	"net"
	"testing"
)

// scanAll feeds input to a preambleConn in chunks of size n and returns
// what it reported and what passed through.
func scanAll(t *testing.T, input string, n int) (found []string, passed string) {
	t.Helper()
	client, server := net.Pipe()
	go func() {
		for i := 0; i < len(input); i += n {
			client.Write([]byte(input[i:min(len(input), i+n)]))
		}
		client.Close()
	}()
	c := &preambleConn{Conn: server, found: func(id string) { found = append(found, id) }}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	return found, string(b)
}

func TestPreamble(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, input string
		want        []string
	}{
		{"none", "SSH-2.0-OpenSSH_9.2\r\nrest", nil},
		{"crlf", "BOXKITE-SANDBOX 3f2a-11\r\nSSH-2.0-OpenSSH_9.2\r\n", []string{"3f2a-11"}},
		{"lf", "BOXKITE-SANDBOX abc\nSSH-2.0-x\n", []string{"abc"}},
		{"not an id", "BOXKITE-SANDBOX ../etc\r\nSSH-2.0-x\r\n", nil},
		{"empty id", "BOXKITE-SANDBOX \r\nSSH-2.0-x\r\n", nil},
		{"after the version", "SSH-2.0-x\r\nBOXKITE-SANDBOX abc\r\n", nil},
		{"other lines first", "hello\r\nBOXKITE-SANDBOX abc\r\nSSH-2.0-x\r\n", []string{"abc"}},
		{"too long", string(bytes.Repeat([]byte("x"), 300)) + "\nBOXKITE-SANDBOX abc\n", nil},
	}
	for _, tt := range tests {
		for _, n := range []int{1, 3, 1 << 10} {
			found, passed := scanAll(t, tt.input, n)
			if passed != tt.input {
				t.Errorf("%s (chunks of %d): passed %q, want the input unchanged", tt.name, n, passed)
			}
			if len(found) != len(tt.want) || (len(found) > 0 && found[len(found)-1] != tt.want[len(tt.want)-1]) {
				t.Errorf("%s (chunks of %d): found %q, want %q", tt.name, n, found, tt.want)
			}
		}
	}
}

func FuzzPreamble(f *testing.F) {
	f.Add("BOXKITE-SANDBOX abc\r\nSSH-2.0-x\r\n", 2)
	f.Add("SSH-2.0-x\r\n", 1)
	f.Fuzz(func(t *testing.T, input string, n int) {
		if n < 1 || n > 64 || len(input) > 4096 {
			return
		}
		var found []string
		c := &preambleConn{found: func(id string) { found = append(found, id) }}
		for i := 0; i < len(input); i += n {
			c.scan([]byte(input[i:min(len(input), i+n)]))
		}
		for _, id := range found {
			if !sandboxIDPattern.MatchString(id) {
				t.Errorf("reported %q, which is not a sandbox id", id)
			}
		}
	})
}
