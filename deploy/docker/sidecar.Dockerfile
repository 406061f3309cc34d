# syntax=docker/dockerfile:1
# The sandbox image: boxkite-sidecar plus the tools an agent expects
# (Python, Node, Go, git, a C toolchain, ripgrep, jq, the language servers
# the LSP tools start). Each sandbox pod runs it as uid 1001 with a
# read-only root; /workspace and /tmp are the pod's emptyDirs. Build from
# the repository root:
#
#   docker build -f deploy/docker/sidecar.Dockerfile -t boxkite-sidecar .
#
# For a release, pin both base images by digest (see server.Dockerfile).
# A slimmer image: --build-arg WITH_LSP=0 drops gopls, pyright and
# typescript-language-server.
ARG GO_IMAGE=golang:1.26-bookworm
ARG BASE_IMAGE=debian:bookworm-slim

FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
# Static: the sidecar must not depend on the image's libc.
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" \
      -o /out/boxkite-sidecar ./cmd/boxkite-sidecar
ARG WITH_LSP=1
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    mkdir -p /out/lsp && if [ "$WITH_LSP" = 1 ]; then \
      CGO_ENABLED=0 GOBIN=/out/lsp go install golang.org/x/tools/gopls@v0.23.0; fi

FROM ${BASE_IMAGE}
ARG WITH_LSP=1
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      bash ca-certificates curl wget git openssh-client less file patch \
      procps psmisc tmux jq ripgrep tree unzip zip xz-utils bzip2 \
      build-essential pkg-config make \
      python3 python3-pip python3-venv python3-dev \
      nodejs npm \
      sqlite3 \
 && if [ "$WITH_LSP" = 1 ]; then npm install -g --no-fund --no-audit pyright typescript typescript-language-server; fi \
 && npm cache clean --force \
 && rm -rf /var/lib/apt/lists/* /root/.npm
COPY --from=build /usr/local/go /usr/local/go
COPY --from=build /out/lsp/ /usr/local/bin/
COPY --from=build /out/boxkite-sidecar /usr/local/bin/boxkite-sidecar
# The sandbox user: uid 1001 as with the local driver. Its home is the
# workspace, the one writable place besides /tmp.
RUN groupadd --gid 1001 sandbox \
 && useradd --uid 1001 --gid 1001 --home-dir /workspace --no-create-home --shell /bin/bash sandbox \
 && install -d -o 1001 -g 1001 /workspace
ENV HOME=/workspace \
    LANG=C.UTF-8 \
    PYTHONUNBUFFERED=1 \
    PIP_USER=1 \
    PIP_BREAK_SYSTEM_PACKAGES=1 \
    NPM_CONFIG_PREFIX=/workspace/.local \
    GOPATH=/workspace/go \
    GOTOOLCHAIN=local \
    PATH=/workspace/.local/bin:/workspace/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /workspace
USER 1001:1001
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/boxkite-sidecar"]
# The kube driver sets the pod's command; this makes a bare `docker run` serve.
CMD ["serve", "--listen", "tcp:0.0.0.0:8080"]
