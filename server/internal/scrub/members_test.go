package scrub

import (
	"bytes"
	"encoding/json"
	"testing"
)

// upper replaces every string member "s" with "S", and reports each key.
func upper(keys *[]string) func(string, json.RawMessage) json.RawMessage {
	return func(k string, v json.RawMessage) json.RawMessage {
		*keys = append(*keys, k)
		if k == "s" {
			return json.RawMessage(`"S"`)
		}
		return nil
	}
}

// FuzzRewriteValid: the decoder-free rewrite gives what the decoder's
// gives (bytes, keys seen, error or not) for every input it takes.
func FuzzRewriteValid(f *testing.F) {
	for _, s := range []string{
		`{"exit_code":0,"stdout":"done\n","stderr":""}`,
		` { "s" : "x" , "a" : [1, {"b": "}"}], "n": -1.5e3, "t": true, "z": null } `,
		`{"k\u00e9\"y<>&":"v","s":"a\\\"b"}`, `{}`, `[]`, `"x"`, `{"a":1} trailing`, `{"a":`,
		`{"s":"one","s":"two"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var k1, k2 []string
		got, ok := rewriteValid(b, upper(&k1))
		if !ok {
			return
		}
		want, err := rewriteDecoded(b, upper(&k2))
		if err != nil {
			t.Fatalf("%q: the decoder fails (%v), rewriteValid gives %q", b, err, got)
		}
		if !bytes.Equal(got, want) || len(k1) != len(k2) {
			t.Fatalf("%q: rewriteValid %q keys %q, decoder %q keys %q", b, got, k1, want, k2)
		}
		for i := range k1 {
			if k1[i] != k2[i] {
				t.Fatalf("%q: keys %q, decoder %q", b, k1, k2)
			}
		}
	})
}
