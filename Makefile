# hexstate: `make run` runs the demo (an embedded RocksDB, no server);
# `make test` runs vet and the race-enabled tests of the library, of the
# go-ethereum oracle module and of the go-ethereum bridge module trie/gethstate.
# Both install what is missing first.

GO      ?= go
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
ORACLE  := cmd/trie-bench
GETHSTATE := trie/gethstate

.PHONY: deps run test vet bench fuzz

# librocksdb-dev (RocksDB 7.8.3 on Debian 12, matching grocksdb v1.7.14) and C
# and C++ compilers for cgo (rocks/ingest.cc calls RocksDB's C++ API).
deps:
	@if [ ! -f /usr/include/rocksdb/c.h ] || ! command -v gcc >/dev/null || ! command -v g++ >/dev/null; then \
		echo "installing librocksdb-dev, gcc and g++"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq librocksdb-dev gcc g++ >/dev/null; \
	fi
	@command -v $(GO) >/dev/null || { echo "Go 1.25+ is required: https://go.dev/dl"; exit 1; }

run: deps
	$(GO) run ./cmd/hexstate-demo

vet: deps
	$(GO) vet ./...
	cd $(ORACLE) && $(GO) vet ./...
	cd $(GETHSTATE) && $(GO) vet ./...

# The core packages must build and pass without cgo (RocksDB stays in rocks/);
# -race needs cgo, so that check runs without it.
test: vet
	CGO_ENABLED=0 $(GO) test ./trie/... ./vertex/... ./hashkey/...
	$(GO) test -race -timeout 40m ./...
	cd $(ORACLE) && $(GO) test -race -timeout 40m ./...
	cd $(GETHSTATE) && $(GO) test -race -timeout 40m ./...

bench: deps
	cd $(ORACLE) && $(GO) test -run XXX -bench . -benchmem -count 6 .

fuzz: deps
	$(GO) test ./vertex -run XXX -fuzz FuzzDecode -fuzztime 60s
	$(GO) test ./vertex -run XXX -fuzz FuzzAccountStorage -fuzztime 30s
