# The web page at / of the HTTP listener (server/internal/web) and its browser tests.
# Included by the root Makefile.
#
#   make web-deps         apt-get install Debian's chromium when none is on PATH
#                         (not run where apt-get or sudo is unavailable: mk/deps.mk)
#   make web-screenshots  retake docs/web/*.png with the browser tests
#
# The browser tests (server/cmd/skills TestWebPageInBrowser, chromedp driving
# headless Chromium against the real binary) run in test-go; under make a missing
# chromium fails them instead of skipping, unless web-deps could not install it here.
# Nothing downloads a browser.

.PHONY: web-deps web-screenshots

web-deps:
	@missing=""; \
	command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing=chromium; \
	scripts/install-packages web-deps $$missing

test-go: web-deps
test-go: export SKILLS_TEST_REQUIRE_CHROMIUM = $(call deps-installed,web-deps)

web-screenshots: web-deps
	SKILLS_WEB_SCREENSHOTS=$(CURDIR)/docs/web $(GO) test -count=1 -run TestWebPageInBrowser ./server/cmd/skills
