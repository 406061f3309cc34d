package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/pflag"
)

// A context names a control plane the CLI talks to, as kubectl's do: its
// URL, its API key and its bastion, kept in a file of its own (0600).
// Two are built in:
//
//   - local: the stack `boxkite up` runs, in local.toml; always there.
//   - hosted: config.toml, written by login, signup and config set-url;
//     there once that file exists.
//
// `boxkite context add NAME URL` adds others, each in contexts/NAME.toml.
// The one commands use is --context, else BOXKITE_CONTEXT, else the one
// `boxkite context use` chose (context.toml), else the automatic choice
// of before contexts: hosted when config.toml has a URL and a key, local
// otherwise.
const (
	contextLocal  = "local"
	contextHosted = "hosted"

	envContext = "BOXKITE_CONTEXT"

	contextsDir = "contexts"     // under BOXKITE_HOME: NAME.toml per added context
	currentFile = "context.toml" // under BOXKITE_HOME: the context `context use` chose

	keyContext = "context" // in Config.Sources and config show
)

// contextNamePattern is what a context's name may be: it becomes a file
// name, so no dots, slashes or leading dashes.
var contextNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$`)

// checkContextName refuses a name that is not a plain word, which keeps
// contexts/NAME.toml inside contexts/.
func checkContextName(name string) error {
	if !contextNamePattern.MatchString(name) {
		return usageErrorf("a context name is letters, digits, - and _ (at most 63), starting with a letter or digit",
			"invalid context name %q", name)
	}
	return nil
}

// contextFile is the file that holds a context's URL and key.
func contextFile(home, name string) string {
	switch name {
	case contextLocal:
		return filepath.Join(home, localFile)
	case contextHosted:
		return filepath.Join(home, hostedFile)
	}
	return filepath.Join(home, contextsDir, name+".toml")
}

// contextExists reports whether name is a context of home: local always
// is, the others once their file exists.
func contextExists(home, name string) (bool, error) {
	if name == contextLocal {
		return true, nil
	}
	_, err := os.Stat(contextFile(home, name))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("read context %s: %w", name, err)
}

// contextNames lists home's contexts: local, hosted when config.toml
// exists, then the added ones by name.
func contextNames(home string) ([]string, error) {
	names := []string{contextLocal}
	if ok, err := contextExists(home, contextHosted); err != nil {
		return nil, err
	} else if ok {
		names = append(names, contextHosted)
	}
	entries, err := os.ReadDir(filepath.Join(home, contextsDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list contexts: %w", err)
	}
	var added []string
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".toml")
		if ok && e.Type().IsRegular() && contextNamePattern.MatchString(name) && name != contextLocal && name != contextHosted {
			added = append(added, name)
		}
	}
	slices.Sort(added)
	return append(names, added...), nil
}

// contextNotFound is the error for a context home does not have.
func contextNotFound(name string) error {
	return &notFoundError{
		err:  fmt.Errorf("no context named %q", name),
		hint: "list them with 'boxkite context ls'; add one with 'boxkite context add " + name + " URL'",
	}
}

// currentContext is context.toml.
type currentContext struct {
	Version int    `toml:"version,omitempty"`
	Current string `toml:"current,omitempty"`
}

// readCurrentContext returns the context `context use` chose, "" if none.
func readCurrentContext(home string) (string, error) {
	path := filepath.Join(home, currentFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	var cc currentContext
	dec := toml.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cc); err != nil {
		return "", &hintError{err: fmt.Errorf("read %s: %w", path, err), hint: "choose a context again with 'boxkite context use NAME'"}
	}
	if cc.Current != "" && !contextNamePattern.MatchString(cc.Current) {
		return "", &hintError{err: fmt.Errorf("read %s: invalid context name %q", path, cc.Current), hint: "choose a context again with 'boxkite context use NAME'"}
	}
	return cc.Current, nil
}

// writeCurrentContext records name as the current context ("" forgets it).
func writeCurrentContext(home, name string) error {
	path := filepath.Join(home, currentFile)
	if name == "" {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", path, err)
		}
		return nil
	}
	b, err := toml.Marshal(currentContext{Version: 1, Current: name})
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return writeFileAtomic(path, b, 0o600)
}

// chosenContext is the context asked for by --context, BOXKITE_CONTEXT or
// context.toml, with where that came from; "" when none was, and the
// automatic choice applies. The name is checked, not whether it exists.
func chosenContext(home string, flags *pflag.FlagSet) (name, source string, err error) {
	if f := lookupFlag(flags, "context"); f != nil && f.Changed {
		name, source = f.Value.String(), "flag --context"
	} else if v := os.Getenv(envContext); v != "" {
		name, source = v, "env "+envContext
	} else {
		if name, err = readCurrentContext(home); err != nil || name == "" {
			return "", "", err
		}
		source = "file " + filepath.Join(home, currentFile)
	}
	if err := checkContextName(name); err != nil {
		return "", "", err
	}
	return name, source, nil
}

// credentialsFile is the file login, signup, logout and config
// set-url/set-key change, and the context it belongs to: the chosen
// context's, or config.toml (hosted) when that is local or none was
// chosen, since local.toml's key is up's own.
func credentialsFile(app *App) (path, name string, err error) {
	home, _, err := resolveHome()
	if err != nil {
		return "", "", err
	}
	name, _, err = chosenContext(home, app.flags)
	if err != nil {
		return "", "", err
	}
	if name == "" || name == contextLocal {
		return contextFile(home, contextHosted), contextHosted, nil
	}
	if name != contextHosted {
		ok, err := contextExists(home, name)
		if err != nil {
			return "", "", err
		}
		if !ok {
			return "", "", contextNotFound(name)
		}
	}
	return contextFile(home, name), name, nil
}
