# ragd: a static binary on a distroless base, running as non-root.
#
#   docker build -t ragd .
#   docker run --rm -p 8080:8080 ragd serve --demo --listen 0.0.0.0:8080
#
# docker-compose.yml builds this image and runs it against PostgreSQL and
# Neo4j with deploy/rag.servers.yaml.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/ragd ./cmd/ragd \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
WORKDIR /app
COPY --from=build /out/ragd /usr/local/bin/ragd
COPY rag.yaml /app/rag.yaml
COPY deploy/rag.servers.yaml /app/deploy/rag.servers.yaml
COPY --from=build --chown=nonroot:nonroot /out/data /app/data
USER nonroot:nonroot
ENV RAGD_LISTEN=0.0.0.0:8080 RAGD_DATA_DIR=/app/data
EXPOSE 8080
VOLUME ["/app/data"]
ENTRYPOINT ["/usr/local/bin/ragd"]
CMD ["serve", "--demo"]
