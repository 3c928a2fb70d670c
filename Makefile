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

GO_PKGS := ./sdk-go/... ./server/... ./examples/go/... ./tools/...

# Language-specific fragments (mk/*.mk) append their targets to these lists.
TEST_TARGETS :=
BENCH_TARGETS :=
LINT_TARGETS :=

.PHONY: all help build run test test-go conformance bench bench-go lint lint-go fmt tidy clean \
        clean-deps example-go

all: build

## help: this list: every target with a description (Makefile and mk/*.mk)
help:
	@scripts/make-help Makefile $(sort $(wildcard mk/*.mk)) | sed 's/$$(ADDR)/$(ADDR)/; s/$$(III_URL)/$$III_URL/'

## build: bin/skills
build:
	@mkdir -p $(BIN)
	cd server && $(GO) build -o $(BIN)/skills ./cmd/skills

## run: the standalone registry (embedded iii engine + skills worker) on $(ADDR), with the
##      example skills folder and Skills Protocol bundle; variables: SKILLS_FOLDER, SP_BUNDLES
##      (empty: none), DATA, ADDR, MCP_ADDR, RUN_FLAGS (any other flags of bin/skills)
SKILLS_FOLDER ?= examples/skills
SP_BUNDLES ?= examples/skills-protocol
MCP_ADDR ?= 127.0.0.1:49135
RUN_FLAGS ?=
run: build
	@mkdir -p $(DATA)
	$(BIN)/skills --standalone --url $(III_URL) --data $(DATA) --mcp-addr '$(MCP_ADDR)' \
		$(if $(SKILLS_FOLDER),--skills-folder $(SKILLS_FOLDER)) $(if $(SP_BUNDLES),--sp-bundles $(SP_BUNDLES)) $(RUN_FLAGS)

-include mk/*.mk

## test: every test of every language, then the conformance suite; one line per
##       target with its test counts (full logs in bin/test-logs/, printed in full only
##       when a target fails); the last line counts targets
test:
	@MAKE="$(MAKE)" scripts/quiet-make lint test-go $(TEST_TARGETS) conformance

## test-go: every Go test but the interop ones (with its test count)
# The interop tests (server/internal/interop) run once, in test-interop, with
# the official clients installed.
# Every Go suite of `make test` runs `go test -json … 2>&1 | $(GOTESTSUMMARY)`
# (with set -o pipefail): the plain go test output (failing tests in full) plus
# a count of tests, which plain go test does not print (tools/gotestsummary).
GOTESTSUMMARY := $(BIN)/gotestsummary

.PHONY: gotestsummary
gotestsummary:
	@mkdir -p $(BIN)
	cd tools && $(GO) build -o $(GOTESTSUMMARY) ./gotestsummary

test-go: gotestsummary
	set -o pipefail; $(GO) test -count=1 -json $$($(GO) list $(GO_PKGS) | grep -v '/server/internal/interop') 2>&1 \
		| $(GOTESTSUMMARY)

## bench: Go benchmarks (ops/s, p50/p99 latency, bytes)
bench: bench-go $(BENCH_TARGETS)

bench-go:
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$${BENCHTIME:-2s} $(GO_PKGS)

## lint: gofmt + go vet, and the other languages' checks
lint: lint-go $(LINT_TARGETS)

lint-go:
	@out=$$(gofmt -l sdk-go server conformance examples/go tools); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet $(GO_PKGS) ./conformance/...

## fmt: gofmt -w on every Go module
fmt:
	gofmt -w sdk-go server conformance examples/go tools

## example-go: the Go resend publisher against $(III_URL) (start `make run` first)
example-go:
	cd examples/go && III_URL=$(III_URL) $(GO) run .

## clean: remove bin/ (binaries, test logs)
clean:
	rm -rf $(BIN)

# Folders where targets run `npm ci` (mk/*.mk); clean-deps removes their node_modules.
NODE_MODULE_DIRS := sdk-node examples/node server/internal/mcp/testdata/node-clients server/internal/interop/node \
	server/internal/downloads/testdata/skills-cli \
	server/internal/skillcheck/testdata/skills-ref

## clean-deps: remove what the targets installed in the clone: virtualenvs and node_modules
clean-deps:
	rm -rf $(CURDIR)/.venv $(CURDIR)/.venv-* $(addsuffix /node_modules,$(NODE_MODULE_DIRS))
