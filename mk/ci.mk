# Checks in anyone's CI (docs/ci.md): the shipped binaries and their proof.
# Included by the root Makefile.
#
#   make dist-bin   dist/skills (with `skills check`) and dist/skills-conformance, the
#                   compiled conformance suite; the Go part of `make dist`, and what the
#                   repository's action.yml builds
#   make test-ci    proof, part of `make test`: the shipped runner from dist/ against our
#                   standalone server (every spec in its JUnit report, 0 failures); `skills
#                   check` on ../shared/corpora (its findings pinned) and on the committed
#                   broken skills (each mistake at file:line, exit 1); action.yml and the
#                   workflows of docs/ci.md through a YAML parser and actionlint

ACTIONLINT_VERSION := v1.7.12
ACTIONLINT := $(BIN)/tools/actionlint-$(ACTIONLINT_VERSION)
# The planning repo's corpora sit beside this repository (../shared/corpora).
CORPORA ?= $(firstword $(wildcard $(CURDIR)/../shared/corpora $(CURDIR)/../../shared/corpora))

.PHONY: dist-bin test-ci

# bin/skills is what `make build` already made; the runner is one more go build.
dist-bin: build
	@mkdir -p $(DIST)
	cp $(BIN)/skills $(DIST)/skills
	cd conformance && $(GO) build -o $(DIST)/skills-conformance ./cmd/skills-conformance

$(ACTIONLINT):
	@mkdir -p $(BIN)/tools
	GOWORK=off GOFLAGS= GOBIN=$(BIN)/tools $(GO) install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)
	mv $(BIN)/tools/actionlint $@

test-ci: dist-bin $(ACTIONLINT) sandbox-deps
	GO="$(GO)" ACTIONLINT="$(ACTIONLINT)" CORPORA="$(CORPORA)" scripts/test-ci $(DIST)

TEST_TARGETS += test-ci
