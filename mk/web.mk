# The web page at / of the HTTP listener (server/internal/web) and its browser tests.
# Included by the root Makefile.
#
#   make web-deps         apt-get install Debian's chromium when none is on PATH
#   make web-screenshots  retake docs/web/*.png with the browser tests
#
# The browser tests (server/cmd/skills TestWebPageInBrowser, chromedp driving
# headless Chromium against the real binary) run in test-go; under make a missing
# chromium fails them instead of skipping. Nothing downloads a browser.

.PHONY: web-deps web-screenshots

web-deps:
	@if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then \
		if ! command -v apt-get >/dev/null 2>&1; then \
			echo "web-deps: install chromium (no apt-get here)" >&2; exit 1; fi; \
		echo "web-deps: apt-get install chromium"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; \
	fi

test-go: web-deps
test-go: export SKILLS_TEST_REQUIRE_CHROMIUM := 1

web-screenshots: web-deps
	SKILLS_WEB_SCREENSHOTS=$(CURDIR)/docs/web $(GO) test -count=1 -run TestWebPageInBrowser ./server/cmd/skills
