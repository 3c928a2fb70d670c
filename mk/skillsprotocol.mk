# Skills Protocol runtime (server/internal/skillsprotocol, server/internal/sandbox): the sandbox needs
# bubblewrap, util-linux prlimit and the system Python (/usr/bin/python3), installed here
# on a fresh Debian/Ubuntu machine before any Go test runs, so the sandbox attack tests
# run in CI and are never skipped there. Included by the root Makefile.
#
#   make sandbox-deps     apt-get install bubblewrap python3 util-linux when missing; where
#                         apt-get or sudo is unavailable it says "not run" (mk/deps.mk), and
#                         the sandbox tests then fail naming what to install: they are never
#                         skipped, the sandbox being where run_code's untrusted code runs
#   make conformance-skillsprotocol  the skills-protocol conformance group over HTTP (part of
#                         `make conformance`)

.PHONY: sandbox-deps

sandbox-deps:
	@missing=""; \
	command -v bwrap >/dev/null 2>&1 || missing="$$missing bubblewrap"; \
	test -x /usr/bin/python3 || missing="$$missing python3"; \
	test -x /usr/bin/prlimit || missing="$$missing util-linux"; \
	scripts/install-packages sandbox-deps $$missing

# Every Go test and the conformance suite exercise the sandbox.
test-go: sandbox-deps
conformance: sandbox-deps

# The skills-protocol conformance group (conformance/skillsprotocol) speaks only HTTP
# JSON-RPC to one URL: our `skills --standalone` serving the group's fixture bundles, or
# SKILLS_RPC_URL=http://host:port/rpc (serving conformance/skillsprotocol/testdata/bundles,
# with CONF_GRANTED_SECRET granted to conf.secret in skills_protocol.secret_grants).
# Against an external engine (III_URL given) without SKILLS_RPC_URL it is "not run".
.PHONY: conformance-skillsprotocol
SP_CONFORMANCE_EXTERNAL := $(if $(filter environment environment\ override command\ line,$(origin III_URL)),$(if $(SKILLS_RPC_URL),,yes))

conformance-skillsprotocol: sandbox-deps
	@mkdir -p $(CONFORMANCE_OUT)
	@rm -f $(CONFORMANCE_OUT)/skills-protocol.json
	$(if $(SP_CONFORMANCE_EXTERNAL),@echo "conformance: skills-protocol needs SKILLS_RPC_URL with an external III_URL",\
	-env -u III_URL $(GO) test -count=1 -timeout $(CONFORMANCE_TIMEOUT) ./conformance/skillsprotocol -args \
		$(if $(SKILLS_RPC_URL),--rpc-url=$(SKILLS_RPC_URL)) --ginkgo.json-report=$(CONFORMANCE_OUT)/skills-protocol.json $(CONFORMANCE_FLAGS))

conformance: conformance-skillsprotocol
CONFORMANCE_REPORTS += skills-protocol=$(if $(SP_CONFORMANCE_EXTERNAL),missing:SKILLS_RPC_URL,$(CONFORMANCE_OUT)/skills-protocol.json)
