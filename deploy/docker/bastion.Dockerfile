# syntax=docker/dockerfile:1
# boxkite-bastion, the SSH bastion (ssh <sandbox-id>@host -p 2222). Build
# from the repository root:
#
#   docker build -f deploy/docker/bastion.Dockerfile -t boxkite-bastion .
#
# For a release, pin both base images by digest (see server.Dockerfile).
ARG GO_IMAGE=golang:1.26-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot

FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" \
      -o /out/boxkite-bastion ./cmd/boxkite-bastion

FROM ${RUNTIME_IMAGE}
COPY --from=build /out/boxkite-bastion /usr/local/bin/boxkite-bastion
USER 65532:65532
EXPOSE 2222
ENTRYPOINT ["/usr/local/bin/boxkite-bastion"]
