package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// config is where boxkite-mcp sends its calls.
type config struct {
	BaseURL   string
	APIKey    string
	KeySource string // "env BOXKITE_API_KEY" or the file it came from
	URLSource string // "env BOXKITE_BASE_URL", "env BOXKITE_URL" or the file
}

// hintError is a startup error with a line saying how to fix it.
type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string { return e.err.Error() }
func (e *hintError) Unwrap() error { return e.err }

// fileConfig is the CLI's config.toml / local.toml (cli/config.go); read
// here, not imported, because boxkite-mcp does not link the CLI.
type fileConfig struct {
	Version int    `toml:"version,omitempty"`
	BaseURL string `toml:"base_url,omitempty"`
	APIKey  string `toml:"api_key,omitempty"`
}

// loadConfig resolves the control plane and key: the environment first
// (BOXKITE_BASE_URL, or the CLI's BOXKITE_URL; BOXKITE_API_KEY), then the
// CLI's files as the CLI picks them: config.toml when it names both a URL
// and a key, else local.toml. Values never mix across files, so one
// server's key is never sent to another.
func loadConfig(getenv func(string) string) (*config, error) {
	home := getenv("BOXKITE_HOME")
	if home == "" {
		uh, err := os.UserHomeDir()
		if err != nil {
			return nil, &hintError{fmt.Errorf("find home directory: %w", err), "set BOXKITE_BASE_URL and BOXKITE_API_KEY"}
		}
		home = filepath.Join(uh, ".boxkite")
	}
	var file fileConfig
	var from string
	for _, name := range []string{"config.toml", "local.toml"} {
		p := filepath.Join(home, name)
		fc, err := readFileConfig(p)
		if err != nil {
			return nil, err
		}
		if fc.BaseURL != "" && fc.APIKey != "" {
			file, from = fc, p
			break
		}
	}
	cfg := &config{BaseURL: file.BaseURL, APIKey: file.APIKey, KeySource: "file " + from}
	urlFrom := "file " + from
	for _, env := range []string{"BOXKITE_URL", "BOXKITE_BASE_URL"} {
		if v := getenv(env); v != "" {
			cfg.BaseURL, urlFrom = v, "env "+env
		}
	}
	if v := getenv("BOXKITE_API_KEY"); v != "" {
		cfg.APIKey, cfg.KeySource = v, "env BOXKITE_API_KEY"
	}
	cfg.BaseURL, cfg.URLSource = strings.TrimRight(cfg.BaseURL, "/"), urlFrom
	switch {
	case cfg.BaseURL == "" && cfg.APIKey == "":
		return nil, &hintError{
			errors.New("no boxkite server configured: BOXKITE_BASE_URL and BOXKITE_API_KEY are not set and " + filepath.Join(home, "config.toml") + " has no base_url and api_key"),
			"run `boxkite up` for a local server, or `boxkite config set-url URL` and `boxkite config set-key KEY`, or set BOXKITE_BASE_URL and BOXKITE_API_KEY in the MCP client's config",
		}
	case cfg.BaseURL == "":
		return nil, &hintError{errors.New("BOXKITE_API_KEY is set but no server URL is"), "set BOXKITE_BASE_URL, e.g. https://boxkite.example.com"}
	case cfg.APIKey == "":
		return nil, &hintError{fmt.Errorf("no API key for %s", cfg.BaseURL), "set BOXKITE_API_KEY (bxk_live_…); create one with `boxkite keys create`"}
	}
	if err := checkBaseURL(cfg.BaseURL); err != nil {
		return nil, &hintError{fmt.Errorf("invalid base URL %q (from %s): %w", cfg.BaseURL, urlFrom, err), "use https://…, or http:// for localhost only"}
	}
	return cfg, nil
}

// checkBaseURL accepts https URLs, and http only to this machine: the API
// key travels in every request.
func checkBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Host == "" {
		return errors.New("the URL has no host")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
			return nil
		}
		return errors.New("http is allowed only for localhost; the API key would travel in clear text")
	}
	return errors.New("the scheme must be https (or http for localhost)")
}

func readFileConfig(path string) (fileConfig, error) {
	var fc fileConfig
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fc, nil
	}
	if err != nil {
		return fc, fmt.Errorf("read %s: %w", path, err)
	}
	if err := toml.NewDecoder(bytes.NewReader(b)).Decode(&fc); err != nil {
		return fc, &hintError{fmt.Errorf("read %s: %w", path, err), "fix or remove the file, or set BOXKITE_BASE_URL and BOXKITE_API_KEY"}
	}
	return fc, nil
}
