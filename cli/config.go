package cli

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
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// DefaultURL is where `boxkite up` listens unless told otherwise, and the
// base URL used when nothing is configured.
const DefaultURL = "http://127.0.0.1:8090"

// Configuration keys, as they appear in config.toml and local.toml.
const (
	keyBaseURL = "base_url"
	keyAPIKey  = "api_key"
	keyHome    = "home"
)

// Environment variables the CLI reads.
const (
	envHome   = "BOXKITE_HOME"
	envURL    = "BOXKITE_URL"
	envAPIKey = "BOXKITE_API_KEY"
)

// Names of the files under BOXKITE_HOME.
const (
	hostedFile = "config.toml" // written by config set-url/set-key (and later login, signup)
	localFile  = "local.toml"  // written by up
)

// Config is the resolved configuration of one invocation.
type Config struct {
	Home    string // BOXKITE_HOME, default ~/.boxkite
	BaseURL string // control-plane URL, no trailing slash
	APIKey  string // may be empty: the server then answers 401
	// Local is true when the CLI talks to a server on this machine: the
	// local.toml server, the default URL, or any loopback URL. Local mode
	// creates a sandbox on demand and suggests `boxkite up` when the server is down.
	Local bool
	// Context is the name of the context in use (local, hosted or an
	// added one); Sources[keyContext] says how it was chosen.
	Context string
	// File is the config file the values were read from, "" when none.
	File string
	// Bastion is boxkite-bastion's HOST:PORT from that file, "" when unset.
	Bastion string
	// Sources says where each value came from, by key (base_url, api_key,
	// home, context): "flag --url", "env BOXKITE_URL", "file PATH" or "default".
	Sources map[string]string
	// Org and OrgName are the organization the context acts for (`boxkite
	// org switch`), "" for the personal account. APIKey is then the key
	// of the organization the switch issued, and PersonalKey the file's
	// own api_key, with which the org commands act for the person.
	Org, OrgName string
	PersonalKey  string
}

// localStack reports whether the base URL is the one of the stack 'boxkite
// up' runs: local.toml's or the default, not another loopback server.
func (cfg *Config) localStack() bool {
	src := cfg.Sources[keyBaseURL]
	return src == "default" || src == "file "+filepath.Join(cfg.Home, localFile)
}

// fileConfig is the shape of config.toml and local.toml.
type fileConfig struct {
	Version int    `toml:"version,omitempty"`
	BaseURL string `toml:"base_url,omitempty"`
	APIKey  string `toml:"api_key,omitempty"`
	// Bastion is boxkite-bastion's HOST:PORT: written by up for the local
	// one, set by hand for a hosted one.
	Bastion string `toml:"bastion,omitempty"`
	// Org, OrgName and OrgAPIKey are written by `boxkite org switch`: the
	// organization the context acts for and the key of it issued to you,
	// used instead of api_key unless a flag or the environment sets one.
	Org       string `toml:"org,omitempty"`
	OrgName   string `toml:"org_name,omitempty"`
	OrgAPIKey string `toml:"org_api_key,omitempty"`
}

// LoadConfig resolves the configuration: flags > environment > file >
// defaults. The file is the chosen context's (--context, BOXKITE_CONTEXT,
// `boxkite context use`); when none was chosen, config.toml (hosted) wins
// when it names both a URL and a key, and local.toml (written by
// `boxkite up`) is used otherwise.
// Values are never mixed across files, so one server's key is never sent to
// another. flags may be nil (no command line).
func LoadConfig(flags *pflag.FlagSet) (*Config, error) {
	cfg := &Config{Sources: map[string]string{}}
	var err error
	if cfg.Home, cfg.Sources[keyHome], err = resolveHome(); err != nil {
		return nil, err
	}

	hostedPath, localPath := filepath.Join(cfg.Home, hostedFile), filepath.Join(cfg.Home, localFile)
	if err := chooseConfigFile(cfg, flags, hostedPath, localPath); err != nil {
		return nil, err
	}
	if err := resolveURLAndKey(cfg, flags); err != nil {
		return nil, err
	}
	if err := checkBaseURL(cfg.BaseURL); err != nil {
		err = fmt.Errorf("invalid base_url %q (from %s): %w", cfg.BaseURL, cfg.Sources[keyBaseURL], err)
		hint := "use a URL such as " + DefaultURL + " or https://boxkite.example.com"
		if strings.HasPrefix(cfg.Sources[keyBaseURL], "flag ") {
			return nil, &usageError{err: err, hint: hint} // a bad flag value: exit 2
		}
		return nil, &hintError{err: err, hint: hint}
	}
	src := cfg.Sources[keyBaseURL]
	cfg.Local = src == "default" || src == "file "+localPath || isLoopbackURL(cfg.BaseURL)
	cfg.PersonalKey = cfg.APIKey
	if cfg.File != "" && cfg.Sources[keyAPIKey] == "file "+cfg.File {
		fc, err := readFileConfig(cfg.File)
		if err != nil {
			return nil, err
		}
		if fc.OrgAPIKey != "" {
			cfg.Org, cfg.OrgName, cfg.APIKey = fc.Org, fc.OrgName, fc.OrgAPIKey
		}
	}
	return cfg, nil
}

// chooseConfigFile picks the one file the settings come from (cfg.File,
// with its bastion and context name): the chosen context's, else
// config.toml when complete, else local.toml.
func chooseConfigFile(cfg *Config, flags *pflag.FlagSet, hostedPath, localPath string) error {
	hosted, err := readFileConfig(hostedPath)
	if err != nil {
		return err
	}
	local, err := readFileConfig(localPath)
	if err != nil {
		return err
	}
	name, source, err := chosenContext(cfg.Home, flags)
	if err != nil {
		return err
	}
	switch {
	case name != "":
		// A chosen context: its file alone, never another's key.
		if err := useContext(cfg, name, local); err != nil {
			return err
		}
		cfg.Sources[keyContext] = source
	case hosted.BaseURL != "" && hosted.APIKey != "":
		cfg.File, cfg.Bastion = hostedPath, hosted.Bastion
		if cfg.Bastion == "" && local.BaseURL != "" && strings.TrimRight(hosted.BaseURL, "/") == strings.TrimRight(local.BaseURL, "/") {
			// Signed up on the local server: its bastion is up's, wherever
			// up found a port for it.
			cfg.Bastion = local.Bastion
		}
	case local.BaseURL != "":
		cfg.File, cfg.Bastion = localPath, local.Bastion
	case hosted != (fileConfig{}):
		cfg.File, cfg.Bastion = hostedPath, hosted.Bastion // half-configured: still better than ignoring it
	}
	if name == "" {
		cfg.Context, cfg.Sources[keyContext] = contextLocal, "derived"
		if cfg.File == hostedPath {
			cfg.Context = contextHosted
		}
	}
	return nil
}

// resolveURLAndKey sets the base URL and API key from flag, environment,
// cfg.File or default, in that order, and where each came from.
func resolveURLAndKey(cfg *Config, flags *pflag.FlagSet) error {
	// One viper per invocation, never the global, and only ever read from.
	v := viper.New()
	v.SetDefault(keyBaseURL, DefaultURL)
	v.SetDefault(keyAPIKey, "")
	if err := v.BindEnv(keyBaseURL, envURL); err != nil {
		return fmt.Errorf("bind %s: %w", envURL, err)
	}
	if err := v.BindEnv(keyAPIKey, envAPIKey); err != nil {
		return fmt.Errorf("bind %s: %w", envAPIKey, err)
	}
	flagFor := map[string]string{keyBaseURL: "url", keyAPIKey: "api-key"}
	for key, name := range flagFor {
		if f := lookupFlag(flags, name); f != nil {
			if err := v.BindPFlag(key, f); err != nil {
				return fmt.Errorf("bind --%s: %w", name, err)
			}
		}
	}
	if cfg.File != "" {
		v.SetConfigFile(cfg.File)
		v.SetConfigType("toml")
		if err := v.ReadInConfig(); err != nil {
			return fmt.Errorf("read %s: %w", cfg.File, err)
		}
	}

	cfg.BaseURL = strings.TrimRight(v.GetString(keyBaseURL), "/")
	cfg.APIKey = v.GetString(keyAPIKey)
	envFor := map[string]string{keyBaseURL: envURL, keyAPIKey: envAPIKey}
	for _, key := range []string{keyBaseURL, keyAPIKey} {
		switch f := lookupFlag(flags, flagFor[key]); {
		case f != nil && f.Changed:
			cfg.Sources[key] = "flag --" + flagFor[key]
		case os.Getenv(envFor[key]) != "":
			cfg.Sources[key] = "env " + envFor[key]
		case cfg.File != "" && v.InConfig(key):
			cfg.Sources[key] = "file " + cfg.File
		default:
			cfg.Sources[key] = "default"
		}
	}
	return nil
}

// useContext points cfg at the context name's file; local is there even
// before up has written local.toml (its URL is then the default).
func useContext(cfg *Config, name string, local fileConfig) error {
	cfg.Context = name
	if name == contextLocal {
		if local.BaseURL != "" {
			cfg.File, cfg.Bastion = filepath.Join(cfg.Home, localFile), local.Bastion
		}
		return nil
	}
	ok, err := contextExists(cfg.Home, name)
	if err != nil {
		return err
	}
	if !ok {
		return contextNotFound(name)
	}
	path := contextFile(cfg.Home, name)
	fc, err := readFileConfig(path)
	if err != nil {
		return err
	}
	cfg.File, cfg.Bastion = path, fc.Bastion
	return nil
}

// resolveHome returns boxkite's directory (BOXKITE_HOME, else ~/.boxkite)
// and where that came from.
func resolveHome() (dir, source string, err error) {
	if h := os.Getenv(envHome); h != "" {
		return h, "env " + envHome, nil
	}
	uh, err := os.UserHomeDir()
	if err != nil {
		return "", "", &hintError{err: fmt.Errorf("find home directory: %w", err), hint: "set " + envHome + " to a directory for boxkite's files"}
	}
	return filepath.Join(uh, ".boxkite"), "default", nil
}

func lookupFlag(flags *pflag.FlagSet, name string) *pflag.Flag {
	if flags == nil {
		return nil
	}
	return flags.Lookup(name)
}

// isLoopbackURL reports whether s points at this machine.
func isLoopbackURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// readFileConfig reads one of our TOML files; a missing file is empty. Unknown
// keys are an error, so a typo in a hand-edited file fails loudly.
func readFileConfig(path string) (fileConfig, error) {
	var fc fileConfig
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fc, nil
	}
	if err != nil {
		return fc, fmt.Errorf("read %s: %w", path, err)
	}
	dec := toml.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fc); err != nil {
		var strict *toml.StrictMissingError
		if errors.As(err, &strict) {
			return fc, &hintError{
				err:  fmt.Errorf("read %s: unknown key: %s", path, strings.TrimSpace(strict.String())),
				hint: "the known keys are base_url, api_key, bastion, org, org_name and org_api_key",
			}
		}
		return fc, fmt.Errorf("read %s: %w", path, err)
	}
	return fc, nil
}

// updateFileConfig changes one of our TOML files through change and writes
// it back atomically with mode 0600. Only what change sets is written: flags
// and environment variables never leak into the file.
func updateFileConfig(path string, change func(*fileConfig)) error {
	fc, err := readFileConfig(path)
	if err != nil {
		return err
	}
	change(&fc)
	fc.Version = 1
	b, err := toml.Marshal(fc)
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return writeFileAtomic(path, b, 0o600)
}

// writeFileAtomic writes data to a temporary file next to path and renames it
// into place, so readers see the old file or the new one, never half of one.
func writeFileAtomic(path string, data []byte, perm fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// maskKey shows enough of an API key to recognise it and no more: the
// "bxk_live_" prefix and the first four characters of the secret.
func maskKey(k string) string {
	if k == "" {
		return ""
	}
	prefix := ""
	if rest, ok := strings.CutPrefix(k, "bxk_"); ok {
		// The secret is URL-safe base64 and may itself contain '_', so cut
		// only at the underscore that ends the environment ("live").
		if i := strings.Index(rest, "_"); i >= 0 {
			prefix, k = k[:len("bxk_")+i+1], rest[i+1:]
		}
	}
	if len(k) < 12 {
		return prefix + "****"
	}
	return prefix + k[:4] + "…"
}
