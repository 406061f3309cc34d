package sidecar

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/pkg/sftp"
)

// stdio is the sftp server's connection: the process's stdin and stdout,
// which the sidecar's interactive exec streams from and to the client.
type stdio struct {
	io.Reader
	io.Writer
}

func (stdio) Close() error { return nil }

// ServeSFTP serves SFTP on in and out until the client ends the session,
// with paths relative to dir. It is run as `boxkite-sidecar sftp-server
// DIR` by an interactive exec of the sftp subsystem: a process of its own,
// inside the jail and as the sandbox user, so it reaches exactly the files
// a command would, and nothing of the host.
func ServeSFTP(in io.Reader, out io.Writer, dir string) error {
	srv, err := sftp.NewServer(stdio{in, out}, sftp.WithServerWorkingDirectory(dir))
	if err != nil {
		return fmt.Errorf("start sftp server: %w", err)
	}
	if err := srv.Serve(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("serve sftp: %w", err)
	}
	return nil
}

// ServeSFTPStdio is ServeSFTP on the process's standard streams.
func ServeSFTPStdio(dir string) error { return ServeSFTP(os.Stdin, os.Stdout, dir) }
