# agenthost — developer tasks. `make test` is the whole suite (it installs the
# pinned npm peer servers the e2e tests run against); `make demo` runs the demo.

GO ?= go

.PHONY: test sysdeps peers vet unit build demo bench proto

test: sysdeps peers vet
	$(GO) test -race -count=1 -timeout 20m ./...
	# allocation counts mean nothing under the race detector (its sync.Pool
	# drops items at random): they are checked once more without it
	$(GO) test -count=1 -run 'TestToolCheckArguments' ./host/secureparams/

# Debian packages the tests need, as COMMAND:PACKAGE pairs: `sysdeps`
# installs PACKAGE when COMMAND is found neither on the PATH nor in
# /usr/lib/postgresql/*/bin (where Debian keeps initdb and pg_ctl).
# The PostgreSQL tests start their own throwaway cluster (internal/pgtest);
# the approvals-page tests (serve, e2e) drive a headless chromium; the
# sandbox e2e runs servers under bubblewrap (sandbox.mechanism).
SYSDEPS = initdb:postgresql chromium:chromium bwrap:bubblewrap

sysdeps:
	@need=""; for p in $(SYSDEPS); do cmd=$${p%%:*}; pkg=$${p#*:}; \
	  command -v $$cmd >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/$$cmd >/dev/null 2>&1 || need="$$need $$pkg"; \
	done; \
	if [ -n "$$need" ]; then \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  echo "installing Debian packages for the tests:$$need"; \
	  $$sudo apt-get update -q && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$need; \
	fi

peers:
	cd e2e/peers && npm ci --no-audit --no-fund --loglevel=error

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1)
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

unit:
	$(GO) test -race -count=1 -short ./...

# -buildvcs=auto stamps the commit that `agenthost --version` prints, even
# where GOFLAGS turns VCS stamping off.
build:
	$(GO) build -buildvcs=auto -o bin/ ./cmd/... ./plugins/cmd/...

demo:
	$(GO) run ./cmd/agenthost demo
include plugins/proto.mk

# The performance report (docs/PERFORMANCE.md): runs the benchmark suite,
# interleaving the paired benchmarks, and prints the figures with their
# targets. A report, not a gate: it exits 0 whether targets are met or not.
# BENCHFLAGS passes options, e.g. BENCHFLAGS="-rounds 3 -profile prof".
bench: sysdeps
	$(GO) run ./internal/bench/cmd/benchtable $(BENCHFLAGS)
