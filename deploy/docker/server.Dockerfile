# syntax=docker/dockerfile:1
# boxkite-server, the control plane, for the kube driver. Build from the
# repository root:
#
#   docker build -f deploy/docker/server.Dockerfile -t boxkite-server .
#
# For a release, pin both base images by digest:
#   --build-arg GO_IMAGE=golang:1.26-bookworm@sha256:… \
#   --build-arg RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot@sha256:…
ARG GO_IMAGE=golang:1.26-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot

FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
# Static (SQLite is modernc.org/sqlite, no cgo), reproducible, as goreleaser builds it.
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" \
      -o /out/boxkite-server ./cmd/boxkite-server

# distroless: no shell, no package manager, nothing for an intruder to use.
FROM ${RUNTIME_IMAGE}
COPY --from=build /out/boxkite-server /usr/local/bin/boxkite-server
USER 65532:65532
EXPOSE 8090
ENTRYPOINT ["/usr/local/bin/boxkite-server"]
# The chart replaces these with --config; they make a bare `docker run` useful.
CMD ["--listen=:8090", "--driver=kube"]
