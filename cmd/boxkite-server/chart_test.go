package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestChartSettings reads the server settings the Helm chart writes (the
// ConfigMap's server.toml in each of deploy's goldens, the chart rendered
// for its defaults and each values file) as boxkite-server reads its
// --config file: every key the chart or its values set must be a setting
// the server has, or the server pods never start.
func TestChartSettings(t *testing.T) {
	goldens, err := filepath.Glob("../../deploy/testdata/golden/*.yaml")
	if err != nil || len(goldens) == 0 {
		t.Fatalf("no chart goldens: %v", err)
	}
	for _, g := range goldens {
		t.Run(filepath.Base(g), func(t *testing.T) {
			data, err := os.ReadFile(g)
			if err != nil {
				t.Fatal(err)
			}
			var settings string
			for doc := range bytes.SplitSeq(data, []byte("\n---\n")) {
				var obj struct {
					Kind string            `json:"kind"`
					Data map[string]string `json:"data"`
				}
				if err := yaml.Unmarshal(doc, &obj); err != nil {
					t.Fatal(err)
				}
				if s, ok := obj.Data["server.toml"]; ok && obj.Kind == "ConfigMap" {
					settings = s
				}
			}
			if settings == "" {
				t.Fatal("no ConfigMap with server.toml")
			}
			file := filepath.Join(t.TempDir(), "server.toml")
			if err := os.WriteFile(file, []byte(settings), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := parseOptions([]string{"--config", file}, envFunc(nil), io.Discard); err != nil {
				t.Errorf("the chart's settings:\n%s\nboxkite-server: %v", settings, err)
			}
		})
	}
}
