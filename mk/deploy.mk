# Deployment files (deploy/, .dockerignore): the systemd unit, the Caddyfile, the nginx
# example and the Docker image, checked against the real tools by
# server/internal/deploytest. Included by the root Makefile; docs in docs/deploy.md.
#
#   make deploy-deps   apt-get install nginx-core, caddy, systemd (systemd-analyze) and
#                      openssl when missing (not run where apt-get or sudo is unavailable:
#                      the tests that need them skip; mk/deps.mk)
#   make test-deploy   systemd-analyze verify deploy/skills.service and docs/deploy.md's
#                      install run as written with the unit started as an unprivileged uid;
#                      caddy adapt deploy/Caddyfile; deploy/nginx.conf and deploy/Caddyfile
#                      on 127.0.0.1 with a throwaway certificate in front of bin/skills,
#                      reached as https://skills.example.com (/mcp with its SSE stream, /rpc,
#                      /readyz, the web page's sign-in and an action); the Dockerfile's rules,
#                      its entrypoint and build context
#
# The image is not built here (no Docker daemon on the test machines).

.PHONY: deploy-deps test-deploy

deploy-deps:
	@missing=""; \
	command -v nginx >/dev/null 2>&1 || test -x /usr/sbin/nginx || missing="$$missing nginx-core"; \
	command -v caddy >/dev/null 2>&1 || missing="$$missing caddy"; \
	command -v systemd-analyze >/dev/null 2>&1 || missing="$$missing systemd"; \
	command -v openssl >/dev/null 2>&1 || missing="$$missing openssl"; \
	scripts/install-packages --no-install-recommends deploy-deps $$missing

test-deploy: build deploy-deps gotestsummary
	set -o pipefail; DEPLOY_TESTS_REQUIRED=$(call deps-installed-sh,deploy-deps) SKILLS_BIN=$(BIN)/skills \
		$(GO) test -count=1 -json ./server/internal/deploytest/ 2>&1 | $(GOTESTSUMMARY)

TEST_TARGETS += test-deploy
