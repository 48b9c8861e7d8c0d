# seqsvr — run `make help` for the targets.
SHELL := /bin/bash
GO    ?= go
TAGS  := hashicorpmetrics
TOOLS := $(CURDIR)/.tools
BUF   := $(TOOLS)/npm/node_modules/.bin/buf
PROTOC_GEN_GO_VERSION         := v1.36.12
PROTOC_GEN_CONNECT_GO_VERSION := v1.21.1
BUF_VERSION                   := 1.75.0
FUZZTIME ?= 15s
export PATH := $(TOOLS)/bin:$(PATH)

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  %-16s %s\n", $$1, $$2}'

$(TOOLS)/bin/protoc-gen-go:
	GOBIN=$(TOOLS)/bin $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)

$(TOOLS)/bin/protoc-gen-connect-go:
	GOBIN=$(TOOLS)/bin $(GO) install connectrpc.com/connect/cmd/protoc-gen-connect-go@$(PROTOC_GEN_CONNECT_GO_VERSION)

$(BUF):
	npm install --no-audit --no-fund --silent --prefix $(TOOLS)/npm @bufbuild/buf@$(BUF_VERSION)

.PHONY: tools
tools: $(TOOLS)/bin/protoc-gen-go $(TOOLS)/bin/protoc-gen-connect-go $(BUF) ## install the pinned code generators into .tools/

.PHONY: generate
generate: tools ## regenerate gen/ from proto/ (buf with local plugins)
	$(BUF) lint
	$(BUF) generate

.PHONY: check-generate
check-generate: generate ## fail if the committed gen/ is stale
	@git diff --exit-code --stat -- gen/ || { echo "gen/ is stale: run make generate and commit"; exit 1; }

.PHONY: build
build: ## build bin/storesvr and bin/allocsvr
	$(GO) build -tags $(TAGS) -o bin/ ./cmd/storesvr ./cmd/allocsvr

.PHONY: run
run: build ## a local 3-member store cluster and an allocsvr, in the foreground (Ctrl-C stops all)
	$(GO) build -tags $(TAGS) -o bin/devcluster ./cmd/devcluster
	@# Ctrl-C is how a user stops it: exit status 130 is a clean stop, not a failure.
	@./bin/devcluster -bin bin -dir run; rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 130 ] || exit $$rc

.PHONY: test-unit
test-unit: ## the fast tier: unit tests only (-short: no Raft cluster, no real process), seconds
	$(GO) test -tags $(TAGS) -short -count=1 ./...

.PHONY: test
test: ## the whole suite: unit, in-process cluster, real-process integration, jepsen smoke
	$(GO) vet -tags $(TAGS) ./...
	$(GO) test -tags $(TAGS) -race -count=1 -timeout 20m ./...
	@# the planted bugs and fault hooks exist only in -tags faults builds
	$(GO) test -tags $(TAGS),faults -count=1 ./internal/faults/ ./storage/... ./alloc/...
	@# a short differential fuzz of the HTTP/1.1 front against plain net/http
	$(GO) test -run '^$$' -fuzz FuzzFrontMatchesNetHTTP -fuzztime $(FUZZTIME) ./internal/h1/

.PHONY: bench
bench: ## benchmarks with their same-run references (see README)
	@command -v redis-server >/dev/null || { apt-get update -qq && apt-get install -y -qq redis-server; } \
	  || echo "bench: redis-server could not be installed; the Redis INCR reference is skipped"
	$(GO) test -tags $(TAGS) -run '^$$' -bench . -benchmem -timeout 30m ./...
	cd alloc/peerbench && $(GO) test -run '^$$' -bench . -benchmem

# The etcd server the peer benchmark runs against, built from the version
# pinned in bench/peers/go.mod (a tool dependency there).
$(TOOLS)/bin/etcd: bench/peers/go.mod
	cd bench/peers && nice $(GO) build -o $(TOOLS)/bin/etcd go.etcd.io/etcd/server/v3

.PHONY: bench-peers
bench-peers: $(TOOLS)/bin/etcd ## seqsvr beside etcd, Leaf over MariaDB, Redis, snowflake libs: writes docs/benchmarks-peers.md + docs/plots/ (~12 min; SHORT=1: ~2 min)
	@{ command -v redis-server && { command -v mariadbd || test -x /usr/sbin/mariadbd; }; } >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server mariadb-server; } || \
	  echo "bench-peers: redis-server and mariadb-server could not be installed (apt needs root): the report leaves those peers out"
	nice $(GO) build -tags $(TAGS) -o bin/bench/ ./cmd/storesvr ./cmd/allocsvr ./bench/loadgen
	cd bench/peers && nice $(GO) build -o ../../bin/bench/ ./cmd/peerload ./cmd/leafsvr ./cmd/benchpeers
	nice bin/bench/benchpeers -bin bin/bench -etcd $(TOOLS)/bin/etcd -out docs $(if $(SHORT),-short)

.PHONY: jepsen
jepsen: ## the full fault-injection matrix (several minutes)
	$(GO) run -tags $(TAGS) ./jepsen/cmd/jepsen -mode full

.PHONY: lint
lint: tools ## gofmt, go vet, buf lint
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/')); [ -z "$$out" ] || { echo "gofmt: $$out"; exit 1; }
	$(GO) vet -tags $(TAGS) ./...
	$(GO) vet -tags faults ./...
	$(BUF) lint

.PHONY: clean
clean: ## remove build output and local run data
	rm -rf bin run
