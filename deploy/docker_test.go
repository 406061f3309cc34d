package deploy

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	op, args string
	line     int
}

// parseDockerfile splits a Dockerfile into instructions. It knows comments,
// blank lines and backslash continuations: all these Dockerfiles use.
func parseDockerfile(data string) []instruction {
	var out []instruction
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(strings.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		cont := strings.HasSuffix(line, "\\")
		cur.WriteString(strings.TrimSuffix(line, "\\"))
		if cont {
			cur.WriteString(" ")
			continue
		}
		joined := strings.TrimSpace(cur.String())
		cur.Reset()
		if joined == "" { // a lone continuation
			continue
		}
		op, args := joined, ""
		if i := strings.IndexFunc(joined, unicode.IsSpace); i >= 0 {
			op, args = joined[:i], strings.TrimSpace(joined[i:])
		}
		out = append(out, instruction{op: strings.ToUpper(op), args: args, line: start})
	}
	return out
}

func FuzzParseDockerfile(f *testing.F) {
	for _, name := range []string{"server", "sidecar", "bastion"} {
		data, err := os.ReadFile(filepath.Join("docker", name+".Dockerfile"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	f.Add("RUN a \\\n b\n# c\nUSER 1")
	f.Fuzz(func(t *testing.T, data string) {
		for _, in := range parseDockerfile(data) {
			if in.op == "" || strings.IndexFunc(in.op, unicode.IsSpace) >= 0 || in.line < 1 {
				t.Fatalf("bad instruction %+v", in)
			}
		}
	})
}

// TestDockerfiles checks what can be checked without a Docker engine: each
// image is a multi-stage build of a command that exists, runs as a fixed
// non-root uid, and takes its base images from build arguments so a
// release can pin them by digest.
func TestDockerfiles(t *testing.T) {
	tests := []struct {
		file, cmd, binary, uid string
	}{
		{"server", "./cmd/boxkite-server", "boxkite-server", "65532:65532"},
		{"sidecar", "./cmd/boxkite-sidecar", "boxkite-sidecar", "1001:1001"},
		{"bastion", "./cmd/boxkite-bastion", "boxkite-bastion", "65532:65532"},
	}
	build := regexp.MustCompile(`CGO_ENABLED=0 go build -trimpath .*-o /out/(\S+) (\./cmd/\S+)`)
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("docker", tt.file+".Dockerfile"))
			if err != nil {
				t.Fatal(err)
			}
			ins := parseDockerfile(string(data))
			var froms, users []instruction
			var entry string
			built := false
			for _, in := range ins {
				switch in.op {
				case "FROM":
					froms = append(froms, in)
				case "USER":
					users = append(users, in)
				case "ENTRYPOINT":
					entry = in.args
				case "RUN":
					if m := build.FindStringSubmatch(in.args); m != nil {
						if m[1] != tt.binary || m[2] != tt.cmd {
							t.Errorf("line %d builds %s from %s, want %s from %s", in.line, m[1], m[2], tt.binary, tt.cmd)
						}
						built = true
					}
				}
			}
			if !built {
				t.Errorf("no static go build of %s", tt.cmd)
			}
			if _, err := os.Stat(filepath.Join("..", tt.cmd, "main.go")); err != nil {
				t.Errorf("%s: %v", tt.cmd, err)
			}
			if len(froms) < 2 {
				t.Fatalf("%d stages, want a build stage and a runtime stage", len(froms))
			}
			for _, f := range froms {
				if !strings.HasPrefix(f.args, "${") {
					t.Errorf("line %d: FROM %s: take the base image from an ARG so it can be pinned by digest", f.line, f.args)
				}
			}
			// The last USER decides who the container runs as.
			if len(users) == 0 || users[len(users)-1].args != tt.uid {
				t.Errorf("final USER = %v, want %s", users, tt.uid)
			}
			if lastFrom := froms[len(froms)-1].line; len(users) > 0 && users[len(users)-1].line < lastFrom {
				t.Error("USER is not set in the runtime stage")
			}
			if want := `["/usr/local/bin/` + tt.binary + `"]`; entry != want {
				t.Errorf("ENTRYPOINT %s, want %s", entry, want)
			}
			copied := slices.ContainsFunc(ins, func(in instruction) bool {
				return in.op == "COPY" && strings.Contains(in.args, "/out/"+tt.binary+" /usr/local/bin/"+tt.binary)
			})
			if !copied {
				t.Errorf("the runtime stage does not copy %s into /usr/local/bin", tt.binary)
			}
		})
	}
}
