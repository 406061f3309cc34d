package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// mcpServerName is the key of boxkite's entry in every client's config.
const mcpServerName = "boxkite"

// mcpEntry is the boxkite server entry written into an MCP client's config.
type mcpEntry struct {
	Command string
	Args    []string
	Env     map[string]string // nil: none
}

// mcpClient is an MCP client `boxkite mcp init` knows how to configure.
type mcpClient struct {
	name  string // as typed: claude-code
	title string // as shown: Claude Code
	toml  bool   // codex: TOML [mcp_servers.NAME]; the others: JSON "mcpServers"
	stdio bool   // the JSON entry says "type": "stdio" (Claude Code)
	// path is the config file under the user's home, for goos; getenv
	// reads APPDATA and XDG_CONFIG_HOME.
	path func(home, goos string, getenv func(string) string) string
}

// mcpClients lists the supported clients, in the order help shows them.
func mcpClients() []mcpClient {
	return []mcpClient{
		{name: "claude-code", title: "Claude Code", stdio: true, path: func(home, _ string, _ func(string) string) string {
			return filepath.Join(home, ".claude.json") // user scope: every project sees it
		}},
		{name: "cursor", title: "Cursor", path: func(home, _ string, _ func(string) string) string {
			return filepath.Join(home, ".cursor", "mcp.json")
		}},
		{name: "windsurf", title: "Windsurf", path: func(home, _ string, _ func(string) string) string {
			return filepath.Join(home, ".codeium", "windsurf", "mcp_config.json")
		}},
		{name: "claude-desktop", title: "Claude Desktop", path: claudeDesktopPath},
		{name: "codex", title: "Codex", toml: true, path: func(home, _ string, _ func(string) string) string {
			return filepath.Join(home, ".codex", "config.toml")
		}},
	}
}

func claudeDesktopPath(home, goos string, getenv func(string) string) string {
	switch goos {
	case "darwin":
		return filepath.Join(home, "Library", "Application Support", "Claude", "claude_desktop_config.json")
	case "windows":
		if d := getenv("APPDATA"); d != "" {
			return filepath.Join(d, "Claude", "claude_desktop_config.json")
		}
		return filepath.Join(home, "AppData", "Roaming", "Claude", "claude_desktop_config.json")
	}
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "Claude", "claude_desktop_config.json")
	}
	return filepath.Join(home, ".config", "Claude", "claude_desktop_config.json")
}

func lookupMCPClient(name string) (mcpClient, bool) {
	for _, c := range mcpClients() {
		if c.name == name {
			return c, true
		}
	}
	return mcpClient{}, false
}

// mcpChange is what merging did to a config file.
type mcpChange int

const (
	mcpAdded mcpChange = iota
	mcpUpdated
	mcpUnchanged
)

// jsonEntry is the JSON shape of an entry, in the order clients document.
type jsonEntry struct {
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
}

func (c mcpClient) jsonEntry(e mcpEntry) jsonEntry {
	je := jsonEntry{Command: e.Command, Args: e.Args, Env: e.Env}
	if je.Args == nil {
		je.Args = []string{}
	}
	if c.stdio {
		je.Type = "stdio"
	}
	return je
}

// merge returns the config file data with boxkite's entry set to e.
func (c mcpClient) merge(data []byte, e mcpEntry) ([]byte, mcpChange, error) {
	if c.toml {
		return mergeTOML(data, e)
	}
	return mergeJSON(data, c.jsonEntry(e))
}

// member is one member of a JSON object, kept in its file order.
type member struct {
	key string
	val json.RawMessage
}

// parseObject reads a JSON object keeping its members' order and their
// values byte for byte. Empty input is an empty object.
func parseObject(data []byte) ([]member, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var ms []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		ms = append(ms, member{tok.(string), raw})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON object")
	}
	return ms, nil
}

// setMember replaces the value of key in ms, or appends it. Of duplicate
// keys the last counts, as for encoding/json and every JSON reader we know.
func setMember(ms []member, key string, val json.RawMessage) []member {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].key == key {
			ms[i].val = val
			return ms
		}
	}
	return append(ms, member{key, val})
}

func getMember(ms []member, key string) (json.RawMessage, bool) {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].key == key {
			return ms[i].val, true
		}
	}
	return nil, false
}

func encodeObject(ms []member) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key) // a string
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// mergeJSON sets mcpServers.boxkite in a JSON config, keeping every other
// member and the members' order; only whitespace is rewritten.
func mergeJSON(data []byte, entry jsonEntry) ([]byte, mcpChange, error) {
	top, err := parseObject(data)
	if err != nil {
		return nil, 0, fmt.Errorf("the file is not valid JSON (%v); fix it or move it away, then run this again", err)
	}
	newEntry, _ := json.Marshal(entry) // strings only
	servers := []member(nil)
	if raw, ok := getMember(top, "mcpServers"); ok && string(raw) != "null" {
		if servers, err = parseObject(raw); err != nil {
			return nil, 0, errors.New(`its "mcpServers" is not a JSON object; fix it by hand`)
		}
	}
	change := mcpAdded
	if old, ok := getMember(servers, mcpServerName); ok {
		change = mcpUpdated
		if sameJSON(old, newEntry) {
			change = mcpUnchanged
		}
	}
	servers = setMember(servers, mcpServerName, newEntry)
	top = setMember(top, "mcpServers", encodeObject(servers))
	var out bytes.Buffer
	if err := json.Indent(&out, encodeObject(top), "", "  "); err != nil {
		return nil, 0, fmt.Errorf("format the new config: %w", err)
	}
	out.WriteByte('\n')
	if err := sameExceptEntry(data, out.Bytes(), json.Unmarshal, "mcpServers"); err != nil {
		return nil, 0, err
	}
	return out.Bytes(), change, nil
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// sameExceptEntry checks that a merge kept everything but boxkite's entry
// under section: a guard against a bug here eating someone's config.
func sameExceptEntry(before, after []byte, unmarshal func([]byte, any) error, section string) error {
	strip := func(data []byte) (map[string]any, error) {
		m := map[string]any{}
		if len(bytes.TrimSpace(data)) > 0 {
			if err := unmarshal(data, &m); err != nil {
				return nil, err
			}
		}
		if s, ok := m[section].(map[string]any); ok {
			delete(s, mcpServerName)
			if len(s) == 0 {
				delete(m, section)
			}
		} else if m[section] == nil {
			delete(m, section)
		}
		return m, nil
	}
	b, err := strip(before)
	if err != nil {
		return err
	}
	a, err := strip(after)
	if err != nil {
		return fmt.Errorf("merging would break the file (%v); it was left alone: add the entry by hand", err)
	}
	if !reflect.DeepEqual(a, b) {
		return errors.New("merging would change more than the boxkite entry; it was left alone: add the entry by hand")
	}
	return nil
}

// tomlHeader matches a table header of boxkite's entry or its subtables:
// [mcp_servers.boxkite], [mcp_servers."boxkite".env], with a comment.
var tomlHeader = regexp.MustCompile(`^\s*\[\s*mcp_servers\s*\.\s*("boxkite"|'boxkite'|boxkite)\s*(\.[^\]]*)?\]\s*(#.*)?$`)

// anyHeader matches any table or array-of-tables header.
var anyHeader = regexp.MustCompile(`^\s*\[`)

// mergeTOML sets [mcp_servers.boxkite] in a Codex config.toml. Other
// lines, comments included, are kept as they are: boxkite's old table (and
// its subtables) is replaced where it was, or the new one is appended.
func mergeTOML(data []byte, e mcpEntry) ([]byte, mcpChange, error) {
	var before map[string]any
	if err := toml.Unmarshal(data, &before); err != nil {
		return nil, 0, fmt.Errorf("the file is not valid TOML (%v); fix it or move it away, then run this again", err)
	}
	section := tomlSection(e)
	lines := strings.SplitAfter(string(data), "\n")
	var out, skipped []string
	found, inOurs := false, false
	for _, l := range lines {
		switch {
		case tomlHeader.MatchString(l):
			if !found {
				out = append(out, section)
			}
			found, inOurs, skipped = true, true, nil
			continue
		case inOurs && anyHeader.MatchString(l):
			// Blank and comment lines right before the next table belong
			// to it, not to the entry being replaced.
			keep := len(skipped)
			for keep > 0 && isBlankOrComment(skipped[keep-1]) {
				keep--
			}
			out = append(out, skipped[keep:]...)
			inOurs = false
		}
		if inOurs {
			skipped = append(skipped, l)
			continue
		}
		out = append(out, l)
	}
	servers, _ := before["mcp_servers"].(map[string]any)
	old, had := servers[mcpServerName]
	if had && !found {
		return nil, 0, errors.New("it defines mcp_servers.boxkite without a [mcp_servers.boxkite] table (inline or dotted keys); change it by hand or remove it, then run this again")
	}
	merged := strings.Join(out, "")
	if !found {
		if merged != "" && !strings.HasSuffix(merged, "\n") {
			merged += "\n"
		}
		if merged != "" {
			merged += "\n"
		}
		merged += section
	}
	if err := sameExceptEntry(data, []byte(merged), toml.Unmarshal, "mcp_servers"); err != nil {
		return nil, 0, err
	}
	change := mcpAdded
	if had {
		change = mcpUpdated
		var now map[string]any
		_ = toml.Unmarshal([]byte(section), &now) // our own output
		if reflect.DeepEqual(old, now["mcp_servers"].(map[string]any)[mcpServerName]) {
			change = mcpUnchanged
		}
	}
	return []byte(merged), change, nil
}

// tomlSection renders e as Codex's [mcp_servers.boxkite] table.
func tomlSection(e mcpEntry) string {
	var b strings.Builder
	b.WriteString("[mcp_servers." + mcpServerName + "]\n")
	b.WriteString("command = " + tomlString(e.Command) + "\n")
	args := make([]string, len(e.Args))
	for i, a := range e.Args {
		args[i] = tomlString(a)
	}
	b.WriteString("args = [" + strings.Join(args, ", ") + "]\n")
	if len(e.Env) > 0 {
		keys := sortedKeys(e.Env)
		pairs := make([]string, len(keys))
		for i, k := range keys {
			pairs[i] = tomlKey(k) + " = " + tomlString(e.Env[k])
		}
		b.WriteString("env = { " + strings.Join(pairs, ", ") + " }\n")
	}
	return b.String()
}

func isBlankOrComment(l string) bool {
	t := strings.TrimSpace(l)
	return t == "" || strings.HasPrefix(t, "#")
}

var bareKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// tomlKey is k as a bare key when TOML allows it, else quoted.
func tomlKey(k string) string {
	if bareKey.MatchString(k) {
		return k
	}
	return tomlString(k)
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
