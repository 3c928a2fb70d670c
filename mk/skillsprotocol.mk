# Skills Protocol runtime (server/skillsprotocol, server/sandbox): the sandbox needs
# bubblewrap, util-linux prlimit and the system Python (/usr/bin/python3), installed here
# on a fresh Debian/Ubuntu machine before any Go test runs, so the sandbox attack tests
# run in CI and are never skipped there. Included by the root Makefile.
#
#   make sandbox-deps     apt-get install bubblewrap python3 util-linux when missing

.PHONY: sandbox-deps

sandbox-deps:
	@missing=""; \
	command -v bwrap >/dev/null 2>&1 || missing="$$missing bubblewrap"; \
	test -x /usr/bin/python3 || missing="$$missing python3"; \
	test -x /usr/bin/prlimit || missing="$$missing util-linux"; \
	if [ -n "$$missing" ]; then \
		if ! command -v apt-get >/dev/null 2>&1; then \
			echo "sandbox-deps: install$$missing (no apt-get here)" >&2; exit 1; fi; \
		echo "sandbox-deps: apt-get install$$missing"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

# Every Go test and the conformance suite exercise the sandbox.
test-go: sandbox-deps
conformance: sandbox-deps
