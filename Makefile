# The two commands a user needs: `make run` (standalone registry) and `make test`
# (every test of every language plus the conformance suite). Everything a target
# needs is installed by the target itself, so a fresh machine works.

SHELL := /bin/bash
GO ?= go
export GOFLAGS := -buildvcs=false
export GOWORK := $(CURDIR)/go.work

BIN  := $(CURDIR)/bin
DATA ?= $(CURDIR)/.data
ADDR ?= 127.0.0.1:49134
III_URL ?= ws://$(ADDR)

GO_PKGS := ./sdk-go/... ./server/... ./examples/go/...

# Language-specific fragments (mk/*.mk) append their targets to these lists.
TEST_TARGETS :=
BENCH_TARGETS :=
LINT_TARGETS :=

.PHONY: all build run test test-go conformance bench bench-go lint lint-go fmt tidy clean \
        example-go

all: build

build:
	@mkdir -p $(BIN)
	cd server && $(GO) build -o $(BIN)/skills ./cmd/skills

## run: the standalone registry (embedded iii engine + skills worker) on $(ADDR)
##      (SKILLS_FOLDER=examples/skills also serves a skills folder)
run: build
	@mkdir -p $(DATA)
	$(BIN)/skills --standalone --url $(III_URL) --data $(DATA) $(if $(SKILLS_FOLDER),--skills-folder $(SKILLS_FOLDER))

-include mk/*.mk

## test: every test of every language, then the conformance suite; one line per
## target (full logs in bin/test-logs/, printed in full only when a target fails)
test:
	@MAKE="$(MAKE)" scripts/quiet-make lint test-go $(TEST_TARGETS) conformance

# The interop tests (server/internal/interop) run once, in test-interop, with
# the official clients installed.
test-go:
	$(GO) test -count=1 $$($(GO) list $(GO_PKGS) | grep -v '/server/internal/interop')

## bench: Go benchmarks (ops/s, p50/p99 latency, bytes)
bench: bench-go $(BENCH_TARGETS)

bench-go:
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$${BENCHTIME:-2s} $(GO_PKGS)

lint: lint-go $(LINT_TARGETS)

lint-go:
	@out=$$(gofmt -l sdk-go server conformance examples/go); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet $(GO_PKGS) ./conformance/...

fmt:
	gofmt -w sdk-go server conformance examples/go

example-go:
	cd examples/go && III_URL=$(III_URL) $(GO) run .

clean:
	rm -rf $(BIN)
