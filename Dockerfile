# seqsvr container image: storesvr, allocsvr and seqctl, static, non-root.
#
# Build it with `make image` (podman, or buildah when podman is missing).
# The build context is bin/image/, which make image-context fills:
#   usr/local/bin/{storesvr,allocsvr,seqctl}  CGO_ENABLED=0 go build -tags hashicorpmetrics
#                                             -trimpath -ldflags "-X ...version.Version=$(VERSION)"
#   ca-certificates.crt                       the build host's /etc/ssl/certs bundle
#   passwd, group                             deploy/image/ (user seqsvr, 65532)
#
# Why the binaries are built on the host and not in a golang:* stage: the
# machines this project is built and tested on reach the Go module proxy
# and Debian, but no container registry, so no base image can be pulled.
# Both stages therefore start FROM scratch; the Go toolchain stage is the
# host's `go build` (the same flags `make build` uses, plus CGO_ENABLED=0).
# Where a registry is reachable, stage 1 can become
#   FROM golang:1.26 AS rootfs ... RUN make image-context
# without changing stage 2.

# Stage 1: assemble the root file system, with ownership set, from the
# context.
FROM scratch AS rootfs
COPY usr/local/bin/ /usr/local/bin/
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY passwd group /etc/
# The data dir must exist and belong to the runtime user before VOLUME:
# a fresh named volume takes its owner from here.
COPY --chown=65532:65532 empty/ /var/lib/seqsvr/
COPY --chown=65532:65532 empty/ /tmp/

# Stage 2: the image, one layer holding only the above.
FROM scratch
ARG VERSION=devel
ARG REVISION=unknown
ARG CREATED=unknown
COPY --from=rootfs / /
LABEL org.opencontainers.image.title="seqsvr" \
      org.opencontainers.image.description="Distributed ID service: storesvr (Raft store), allocsvr (segment, snowflake and per-key IDs), seqctl" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="https://github.com/seqsvr/seqsvr"
ENV PATH=/usr/local/bin \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    SEQSVR_DATA_DIR=/var/lib/seqsvr
USER 65532:65532
WORKDIR /var/lib/seqsvr
VOLUME ["/var/lib/seqsvr"]
# 8081: storesvr API; 7001: storesvr Raft; 8080: allocsvr API.
EXPOSE 8080 8081 7001
# Every binary is on PATH: the command names it, e.g.
#   podman run IMAGE allocsvr --store http://s1:8081 --http-addr 0.0.0.0:8080
CMD ["storesvr", "--version"]
