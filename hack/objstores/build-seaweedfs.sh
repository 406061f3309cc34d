#!/usr/bin/env bash
# Builds SeaweedFS's weed (the S3-compatible server the storage sync tests
# run, internal/objtest) from the Go module proxy into DESTDIR. Its go.mod
# has replace directives, so `go install pkg@version` refuses it: the module
# is downloaded and built as the main module. A binary already in DESTDIR is
# not rebuilt; the directory names the version, so bumping it rebuilds.
set -euo pipefail
dest=${1:?usage: build-seaweedfs.sh DESTDIR}
version=v0.0.0-20261109003541-7506e5f91cd6
if [ -x "$dest/weed" ]; then
	echo "weed up to date in $dest"
	exit 0
fi
mkdir -p "$dest"
dir=$(GOFLAGS=-mod=mod go mod download -json "github.com/seaweedfs/seaweedfs@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$dir" ] || { echo "download seaweedfs $version failed" >&2; exit 1; }
tmp=$(mktemp -d "$dest/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(cd "$dir" && CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -trimpath -ldflags "-s -w" -o "$tmp/weed" ./weed)
mv "$tmp/weed" "$dest/weed"
echo "weed built in $dest"
