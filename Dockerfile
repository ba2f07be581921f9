# ragd: a static binary on a distroless base, running as non-root.
#
#   docker build -t ragd .
#   docker run --rm -p 127.0.0.1:8080:8080 ragd serve --demo --listen 0.0.0.0:8080
#
# docker-compose.yml builds this image and runs it against PostgreSQL and
# Neo4j with deploy/rag.servers.yaml.
#
# The base images are build arguments: GO_IMAGE needs a Go toolchain at
# least as new as go.mod's, RUNTIME_IMAGE anything that runs a static
# Linux binary (the user is numeric, 65532 as distroless' nonroot, so the
# image needs no /etc/passwd entry). scripts/images.sh passes images it
# builds from Debian's packages, for machines without Docker Hub:
#
#   docker build --build-arg GO_IMAGE=ragd-local/golang:1.26.8 \
#     --build-arg RUNTIME_IMAGE=ragd-local/debian:trixie -t ragd:local .
ARG GO_IMAGE=golang:1.26-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot

FROM ${GO_IMAGE} AS build
WORKDIR /src
ARG GOPROXY=https://proxy.golang.org,direct
ENV GOPROXY=${GOPROXY}
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/ragd ./cmd/ragd \
 && mkdir -p /out/data

FROM ${RUNTIME_IMAGE}
WORKDIR /app
COPY --from=build /out/ragd /usr/local/bin/ragd
COPY rag.yaml /app/rag.yaml
COPY deploy/rag.servers.yaml /app/deploy/rag.servers.yaml
COPY --from=build --chown=65532:65532 /out/data /app/data
USER 65532:65532
ENV RAGD_LISTEN=0.0.0.0:8080 RAGD_DATA_DIR=/app/data
EXPOSE 8080
VOLUME ["/app/data"]
ENTRYPOINT ["/usr/local/bin/ragd"]
CMD ["serve", "--demo"]
