package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pelletier/go-toml/v2"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestMCPInitGolden (issue 8, acceptance 3): the file `mcp init` writes for
// every client, new and merged into existing files, against goldens in
// testdata/mcpinit (go test ./cli -run MCPInitGolden -update rewrites them).
func TestMCPInitGolden(t *testing.T) {
	entry := mcpEntry{Command: "/opt/boxkite/bin/boxkite-mcp"}
	withEnv := mcpEntry{Command: "/opt/boxkite/bin/boxkite-mcp", Env: map[string]string{"BOXKITE_HOME": "/home/u/.boxkite", "BOXKITE_API_KEY": `bxk_live_"q"\`}}
	cases := []struct {
		name  string
		input string // file in testdata/mcpinit; "" means no file yet
		entry mcpEntry
		want  mcpChange
	}{
		{"new", "", entry, mcpAdded},
		{"merge", "existing", entry, mcpAdded},
		{"replace", "replace", withEnv, mcpUpdated},
	}
	for _, c := range mcpClients() {
		for _, tc := range cases {
			t.Run(c.name+"/"+tc.name, func(t *testing.T) {
				var in []byte
				if tc.input != "" {
					ext := ".json"
					if c.toml {
						ext = ".toml"
					}
					in = readTestdata(t, tc.input+ext)
				}
				got, change, err := c.merge(in, tc.entry)
				if err != nil {
					t.Fatalf("merge: %v", err)
				}
				if change != tc.want {
					t.Errorf("change = %v, want %v", change, tc.want)
				}
				golden(t, filepath.Join("testdata", "mcpinit", c.name+"-"+tc.name+".golden"), got)

				// Merging again changes nothing, byte for byte.
				again, change, err := c.merge(got, tc.entry)
				if err != nil || change != mcpUnchanged || !bytes.Equal(again, got) {
					t.Errorf("second merge: change %v, err %v, same bytes %v", change, err, bytes.Equal(again, got))
				}
				checkParses(t, c, got)
			})
		}
	}
}

func TestMCPInitTOMLWithoutNewline(t *testing.T) {
	c, _ := lookupMCPClient("codex")
	got, _, err := c.merge(readTestdata(t, "nonewline.toml"), mcpEntry{Command: "boxkite-mcp"})
	if err != nil {
		t.Fatal(err)
	}
	want := "model = \"o3\"\n\n[mcp_servers.boxkite]\ncommand = \"boxkite-mcp\"\nargs = []\n"
	if string(got) != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestMCPInitRefuses(t *testing.T) {
	tests := []struct {
		client, input, want string
	}{
		{"cursor", `{"mcpServers": `, "not valid JSON"},
		{"cursor", `[1, 2]`, "not valid JSON"},
		{"cursor", `{"a": 1} {"b": 2}`, "not valid JSON"},
		{"claude-code", `{"mcpServers": [1]}`, `"mcpServers" is not a JSON object`},
		{"codex", "model = \n", "not valid TOML"},
		{"codex", "[mcp_servers]\nboxkite = { command = \"x\" }\n", "without a [mcp_servers.boxkite] table"},
		{"codex", "[mcp_servers]\nboxkite.command = \"x\"\n", "without a [mcp_servers.boxkite] table"},
		// A multi-line string whose line looks like our header: the check
		// that nothing else changed catches it.
		{"codex", "notes = '''\n[mcp_servers.boxkite]\n'''\nx = 1\n", "it was left alone"},
	}
	for _, tc := range tests {
		c, _ := lookupMCPClient(tc.client)
		_, _, err := c.merge([]byte(tc.input), mcpEntry{Command: "boxkite-mcp"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s merge of %q: err %v, want %q", tc.client, tc.input, err, tc.want)
		}
	}
}

func TestClaudeDesktopPath(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	tests := []struct {
		goos string
		env  map[string]string
		want string
	}{
		{"darwin", nil, "/h/Library/Application Support/Claude/claude_desktop_config.json"},
		{"linux", nil, "/h/.config/Claude/claude_desktop_config.json"},
		{"linux", map[string]string{"XDG_CONFIG_HOME": "/x"}, "/x/Claude/claude_desktop_config.json"},
		{"windows", map[string]string{"APPDATA": "/appdata"}, "/appdata/Claude/claude_desktop_config.json"},
	}
	for _, tc := range tests {
		if got := filepath.ToSlash(claudeDesktopPath("/h", tc.goos, env(tc.env))); got != tc.want {
			t.Errorf("%s %v: %s, want %s", tc.goos, tc.env, got, tc.want)
		}
	}
}

// checkParses checks that data is a valid config for c with boxkite's entry.
func checkParses(t *testing.T, c mcpClient, data []byte) {
	t.Helper()
	var m map[string]any
	var err error
	key := "mcpServers"
	if c.toml {
		err, key = toml.Unmarshal(data, &m), "mcp_servers"
	} else {
		err = json.Unmarshal(data, &m)
	}
	if err != nil {
		t.Fatalf("result does not parse: %v\n%s", err, data)
	}
	servers, _ := m[key].(map[string]any)
	e, _ := servers[mcpServerName].(map[string]any)
	if e["command"] != "/opt/boxkite/bin/boxkite-mcp" {
		t.Errorf("%s.boxkite = %v", key, servers[mcpServerName])
	}
}

func FuzzMCPMergeJSON(f *testing.F) {
	f.Add(`{"mcpServers": {"a": {}}, "x": [1, 2.50]}`)
	f.Add(`{}`)
	f.Add(``)
	f.Add(`{"mcpServers": null}`)
	c, _ := lookupMCPClient("cursor")
	fuzzMerge(f, c)
}

func FuzzMCPMergeTOML(f *testing.F) {
	f.Add("a = 1\n[mcp_servers.boxkite]\ncommand = 'x'\n[b]\nc = 2\n")
	f.Add("[mcp_servers.x]\ncommand = \"y\"\n")
	f.Add("")
	c, _ := lookupMCPClient("codex")
	fuzzMerge(f, c)
}

// fuzzMerge: whatever the input, a successful merge is a valid config
// holding boxkite's entry that a second merge leaves alone.
func fuzzMerge(f *testing.F, c mcpClient) {
	entry := mcpEntry{Command: "/opt/boxkite/bin/boxkite-mcp", Env: map[string]string{"K": "v\n\"x"}}
	f.Fuzz(func(t *testing.T, in string) {
		got, _, err := c.merge([]byte(in), entry)
		if err != nil {
			return
		}
		checkParses(t, c, got)
		again, change, err := c.merge(got, entry)
		if err != nil || change != mcpUnchanged || !bytes.Equal(again, got) {
			t.Errorf("second merge of %q: change %v, err %v", got, change, err)
		}
	})
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "mcpinit", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cli -run '^%s$' -update)", err, strings.Split(t.Name(), "/")[0])
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}
