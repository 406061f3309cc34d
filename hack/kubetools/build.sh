#!/usr/bin/env bash
# Builds kube-apiserver, etcd and kubectl (Kubernetes v1.37.2, etcd v3.7.0)
# from the Go module proxy into DESTDIR, for the kube driver's tests
# (BOXKITE_KUBE_ASSETS). A binary already present in DESTDIR with a matching
# stamp is not rebuilt, so a warm cache costs nothing. The flags never change:
# -trimpath is part of every cache key, and a varying flag set would rebuild
# everything.
set -euo pipefail
dest=${1:?usage: build.sh DESTDIR}
cd "$(dirname "$0")"
version=v1.37.2
stamp="$version $(sha256sum go.sum | cut -c1-16)"
mkdir -p "$dest"
if [ -f "$dest/.stamp" ] && [ "$(cat "$dest/.stamp")" = "$stamp" ] &&
	[ -x "$dest/kube-apiserver" ] && [ -x "$dest/etcd" ] && [ -x "$dest/kubectl" ]; then
	echo "kube assets up to date in $dest"
	exit 0
fi
rm -f "$dest/.stamp"
ldflags="-s -w"
ldflags+=" -X k8s.io/component-base/version.gitVersion=$version"
ldflags+=" -X k8s.io/component-base/version.gitMajor=1"
ldflags+=" -X k8s.io/component-base/version.gitMinor=37"
ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$version"
# Build into a temporary directory and rename, so a killed build never leaves
# a half-written binary that looks present.
tmp=$(mktemp -d "$dest/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for bin in kube-apiserver etcd kubectl; do
	CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$ldflags" -o "$tmp/$bin" "./cmd/$bin"
	mv "$tmp/$bin" "$dest/$bin"
done
echo "$stamp" >"$dest/.stamp"
echo "kube assets built in $dest"
