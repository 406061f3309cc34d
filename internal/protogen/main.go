// Command protogen generates Go code from .proto files without protoc: it
// compiles them with protocompile (a pure-Go protobuf compiler) and feeds
// the result to protoc plugins run as go tools (protoc-gen-go,
// protoc-gen-connect-go), as protoc would. `go generate` runs it, so
// regenerating needs nothing but the Go toolchain and the module cache.
//
// Usage:
//
//	go run ./internal/protogen -I DIR -module MODULE -out DIR -plugin NAME... FILE.proto...
//
// FILE names are relative to the -I directory. Each plugin is the name of a
// tool in go.mod ("protoc-gen-go" finds google.golang.org/protobuf's). The
// generated files are written under -out by their go_package with the
// plugin's module= option, so -out is the module's root.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/pluginpb"
	"mvdan.cc/gofumpt/format"
)

type pluginList []string

func (p *pluginList) String() string     { return strings.Join(*p, ",") }
func (p *pluginList) Set(v string) error { *p = append(*p, v); return nil }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "protogen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("protogen", flag.ContinueOnError)
	include := fs.String("I", ".", "directory the .proto names are relative to")
	module := fs.String("module", "", "Go module path; outputs are written relative to it")
	out := fs.String("out", ".", "the module's root directory")
	var plugins pluginList
	fs.Var(&plugins, "plugin", "protoc plugin to run as `go tool NAME` (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 || len(plugins) == 0 || *module == "" {
		return errors.New("want -module, at least one -plugin and one .proto file")
	}
	req, err := request(*include, fs.Args(), "module="+*module)
	if err != nil {
		return err
	}
	for _, p := range plugins {
		if err := runPlugin(p, req, *module, *out); err != nil {
			return err
		}
	}
	return nil
}

// request compiles files and builds the CodeGeneratorRequest protoc would
// send: every file the named ones need, dependencies first.
func request(include string, files []string, param string) (*pluginpb.CodeGeneratorRequest, error) {
	c := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{include}}),
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	compiled, err := c.Compile(context.Background(), files...)
	if err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	req := &pluginpb.CodeGeneratorRequest{FileToGenerate: files, Parameter: proto.String(param)}
	seen := map[string]bool{}
	var add func(f protoreflect.FileDescriptor)
	add = func(f protoreflect.FileDescriptor) {
		if seen[f.Path()] {
			return
		}
		seen[f.Path()] = true
		imports := f.Imports()
		for i := range imports.Len() {
			add(imports.Get(i).FileDescriptor)
		}
		req.ProtoFile = append(req.ProtoFile, protodesc.ToFileDescriptorProto(f))
	}
	for _, f := range compiled {
		add(f)
	}
	return req, nil
}

// runPlugin runs `go tool name` with req on its stdin and writes the files
// it answers with under out.
func runPlugin(name string, req *pluginpb.CodeGeneratorRequest, module, out string) error {
	in, err := proto.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	cmd := exec.Command("go", "tool", name)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stderr = os.Stderr
	raw, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("run %s: %w", name, err)
	}
	var resp pluginpb.CodeGeneratorResponse
	if err := proto.Unmarshal(raw, &resp); err != nil {
		return fmt.Errorf("%s: decode response: %w", name, err)
	}
	if resp.Error != nil {
		return fmt.Errorf("%s: %s", name, resp.GetError())
	}
	for _, f := range resp.File {
		if f.GetInsertionPoint() != "" {
			return fmt.Errorf("%s: insertion points are not supported (%s)", name, f.GetName())
		}
		p := filepath.Join(out, filepath.FromSlash(f.GetName()))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		content := []byte(f.GetContent())
		if strings.HasSuffix(p, ".go") {
			// The tree is checked with gofumpt, which groups the standard
			// library's imports apart; the plugins do not.
			if content, err = format.Source(content, format.Options{ModulePath: module}); err != nil {
				return fmt.Errorf("%s: format %s: %w", name, f.GetName(), err)
			}
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			return err
		}
	}
	return nil
}
