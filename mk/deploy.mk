# Deployment files (deploy/): the systemd unit, the Caddyfile and the nginx example,
# checked against the real tools by server/internal/deploytest. Included by the root
# Makefile; docs in docs/deploy.md.
#
#   make deploy-deps   apt-get install nginx-core, caddy and systemd (systemd-analyze)
#                      when missing
#   make test-deploy   systemd-analyze verify deploy/skills.service, caddy adapt
#                      deploy/Caddyfile, and deploy/nginx.conf on 127.0.0.1 with a
#                      throwaway certificate in front of bin/skills, reached as
#                      https://skills.example.com (/mcp with its SSE stream, /rpc, /readyz)
#
# The Dockerfile is not built here (no image registry on the test machines).

.PHONY: deploy-deps test-deploy

deploy-deps:
	@missing=""; \
	command -v nginx >/dev/null 2>&1 || test -x /usr/sbin/nginx || missing="$$missing nginx-core"; \
	command -v caddy >/dev/null 2>&1 || missing="$$missing caddy"; \
	command -v systemd-analyze >/dev/null 2>&1 || missing="$$missing systemd"; \
	if [ -n "$$missing" ]; then \
		if ! command -v apt-get >/dev/null 2>&1; then \
			echo "deploy-deps: install$$missing (no apt-get here)" >&2; exit 1; fi; \
		echo "deploy-deps: apt-get install$$missing"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq && DEBIAN_FRONTEND=noninteractive \
			$$SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends $$missing; \
	fi

test-deploy: build deploy-deps gotestsummary
	set -o pipefail; DEPLOY_TESTS_REQUIRED=1 SKILLS_BIN=$(BIN)/skills $(GO) test -count=1 -json ./server/internal/deploytest/ 2>&1 | $(GOTESTSUMMARY)

TEST_TARGETS += test-deploy
