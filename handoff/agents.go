package handoff

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/boxkite/boxkite/client/api"
)

// Agent is what a sandbox needs to run one tool: its command, the npm
// package it comes in (the image recipe) and the model API it talks to.
type Agent struct {
	Tool    string // the name boxkite handoff takes
	CLI     string // the command the package installs
	Package string // npm package
	// Version is the package version agent images are built from. A
	// session written by a newer tool may not resume in an older one:
	// pass --agent-version to match the version used here.
	Version string
	APIHost string // the model API's host, reached on port 443
	// BaseURLEnv is the variable that moves the model API elsewhere (a
	// proxy, a gateway); when it is set here it goes along, and its host
	// is granted instead of APIHost.
	BaseURLEnv string
}

// Agents returns the agents by tool name. The versions are pinned so the
// same recipe gives the same image; .ci/run fetches the same ones for the
// tests.
func Agents() map[string]Agent {
	return map[string]Agent{
		"claude-code": {Tool: "claude-code", CLI: "claude", Package: "@anthropic-ai/claude-code", Version: "2.1.332", APIHost: "api.anthropic.com", BaseURLEnv: "ANTHROPIC_BASE_URL"},
		"codex":       {Tool: "codex", CLI: "codex", Package: "@openai/codex", Version: "0.171.0", APIHost: "api.openai.com", BaseURLEnv: "OPENAI_BASE_URL"},
		"opencode":    {Tool: "opencode", CLI: "opencode", Package: "opencode-ai", Version: "1.18.33"},
		"gemini":      {Tool: "gemini", CLI: "gemini", Package: "@google/gemini-cli", Version: "0.61.0", APIHost: "generativelanguage.googleapis.com", BaseURLEnv: "GOOGLE_GEMINI_BASE_URL"},
	}
}

// ImageSpec is the recipe of the agent's image at version ("" means the
// pinned one): the host's system with the package installed globally, so
// its command is on PATH (/usr/local/bin). Identical recipes are one image.
func (a Agent) ImageSpec(version string) api.ImageSpec {
	if version == "" {
		version = a.Version
	}
	return api.ImageSpec{NPMPackages: []string{a.Package + "==" + version}}
}

// ImageLabel names the agent's image in image listings.
func (a Agent) ImageLabel(version string) string {
	if version == "" {
		version = a.Version
	}
	return "agent-" + a.Tool + "-" + version
}

// ValidVersion reports whether v can pin the agent's package.
func ValidVersion(v string) bool { return ValidIdent(v) && !strings.HasPrefix(v, "-") }

// Launch is what a tool is started with besides its session: the
// credentials and settings of the env file, the egress it needs and its
// login steps. A handoff and --retry make it alike, from this machine.
type Launch struct {
	Credentials []Credential
	Settings    []Setting
	Egress      []string // host or host:port
	Login       []Step
	Warnings    []string
}

// LaunchFor is tool's Launch from env; provider is opencode's provider of
// the session (see Bundle.Provider).
func LaunchFor(tool string, env Env, provider string) Launch {
	var l Launch
	var warns []string
	switch tool {
	case "claude-code":
		l.Credentials = envCredentials(env, "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_API_KEY")
		if len(l.Credentials) == 0 {
			l.Warnings = append(l.Warnings, "no CLAUDE_CODE_OAUTH_TOKEN or ANTHROPIC_API_KEY set here (make one with `claude setup-token`); log in inside the sandbox instead")
		}
		l.Egress, l.Settings, warns = modelEgress(env, "api.anthropic.com", "ANTHROPIC_BASE_URL")
		// Updates, telemetry and error reports would be refused by the
		// egress proxy anyway (only the API is granted), and audited so.
		l.Settings = append(l.Settings, Setting{Name: "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", Value: "1"})
	case "codex":
		creds, warn := codexCredentials(env)
		l.Credentials = creds
		if warn != "" {
			l.Warnings = append(l.Warnings, warn)
		}
		// The TUI reads a key from auth.json only: codex's own login puts
		// it there, reading it from stdin.
		for _, c := range creds {
			flag := "--with-api-key"
			if c.Name == "CODEX_ACCESS_TOKEN" {
				flag = "--with-access-token"
			}
			l.Login = append(l.Login, Step{Argv: []string{"codex", "login", flag}, StdinEnv: c.Name})
		}
		// Codex reads its base URL from config.toml's openai_base_url
		// (it dropped OPENAI_BASE_URL in 0.119): the sandbox's
		// config.toml gets it (codexConfigFile), the setting shows it.
		raw, from := codexBaseURL(env)
		l.Egress, l.Settings, warns = baseURLEgress(raw, from, "api.openai.com", "OPENAI_BASE_URL")
	case "gemini":
		l.Credentials = envCredentials(env, "GEMINI_API_KEY", "GOOGLE_API_KEY")
		if len(l.Credentials) == 0 {
			l.Warnings = append(l.Warnings, "no GEMINI_API_KEY or GOOGLE_API_KEY set here; log in inside the sandbox")
		}
		l.Egress, l.Settings, warns = modelEgress(env, "generativelanguage.googleapis.com", "GOOGLE_GEMINI_BASE_URL")
	case "opencode":
		creds, warn := opencodeCredentials(env, provider)
		l.Credentials = creds
		if warn != "" {
			l.Warnings = append(l.Warnings, warn)
		}
		api, ok := opencodeAPIs[provider]
		if !ok {
			l.Warnings = append(l.Warnings, fmt.Sprintf("boxkite does not know the API host of provider %q; grant it with --allow-host", provider))
		}
		l.Egress, l.Settings, warns = modelEgress(env, api.host, api.baseEnv)
		// It would fetch updates and the model list from hosts the sandbox
		// is not granted; its built-in list serves.
		l.Settings = append(l.Settings, Setting{"OPENCODE_DISABLE_AUTOUPDATE", "1"}, Setting{"OPENCODE_DISABLE_MODELS_FETCH", "1"})
	}
	l.Warnings = append(l.Warnings, warns...)
	return l
}

// launch copies l into the bundle.
func (b *Bundle) launch(l Launch) {
	b.Credentials, b.Settings, b.Egress, b.Login = l.Credentials, l.Settings, l.Egress, l.Login
	b.Warnings = append(b.Warnings, l.Warnings...)
}

// modelEgress is what the sandbox must reach for a tool whose API is
// host (port 443), or the base URL in the variable baseEnv when it is
// set here: that URL goes along as a setting and its host:port is
// granted instead. A base URL on this machine's loopback is carried but
// not granted: in the sandbox it names the sandbox's own loopback.
func modelEgress(env Env, host, baseEnv string) (grants []string, settings []Setting, warnings []string) {
	raw := ""
	if baseEnv != "" {
		raw = env.get(baseEnv)
	}
	return baseURLEgress(raw, baseEnv, host, baseEnv)
}

// baseURLEgress is modelEgress for a base URL raw read from where
// (a variable's name, or a file's key), carried as the setting baseEnv.
func baseURLEgress(raw, where, host, baseEnv string) (grants []string, settings []Setting, warnings []string) {
	if raw == "" {
		if host == "" {
			return nil, nil, nil
		}
		return []string{host}, nil, nil
	}
	settings = []Setting{{Name: baseEnv, Value: raw}}
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, settings, []string{fmt.Sprintf("%s is not an http(s) URL; no egress is granted for it (use --allow-host)", where)}
	}
	h := strings.ToLower(u.Hostname())
	if h == "localhost" || strings.HasSuffix(h, ".localhost") || isLoopbackIP(h) {
		return nil, settings, []string{fmt.Sprintf("%s names loopback (%s); in the sandbox that is the sandbox's own, and no egress is granted for it", where, u.Host)}
	}
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	if port == "443" {
		return []string{h}, settings, nil
	}
	return []string{net.JoinHostPort(h, port)}, settings, nil
}

func isLoopbackIP(h string) bool {
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
