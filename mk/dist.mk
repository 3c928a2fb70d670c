# Distribution: the SDK artifacts a user installs, the real-engine interop
# target, and the prerequisites that make each target work alone on a fresh clone.
# Included by the root Makefile.
#
#   make dist               dist/: the npm tarball (npm pack), the Python wheel + sdist, and
#                           the skills and skills-conformance binaries (make dist-bin, mk/ci.mk)
#   make test-dist          install each artifact into a clean temporary project (the Go
#                           module through a replace; the sdist also alone, into a fresh
#                           virtualenv) and run the three examples side by side against one
#                           fresh `skills --standalone`; every iii:// link an example publishes
#                           must resolve, and stopping one must leave the others registered
#   make interop-upstream   opt-in, not part of `make test`: our registry beside the real iii
#                           engine and upstream's mcp and skills workers found on this machine
#                           (III_BIN, III_MCP_BIN, UPSTREAM_SKILLS_BIN, UPSTREAM_BDD or PATH:
#                           scripts/interop-upstream); each missing program is "not run"
#   make test-python-matrix  the Python tests against the oldest and newest supported iii-sdk
#                           ($(PY_MATRIX), each in its own .venv-iii-VERSION)

# The publisher suite needs every driver: the Python one lives in the virtualenv.
conformance-publishers: venv node-build

.PHONY: interop-upstream

interop-upstream: build
	@SKILLS_BIN="$(BIN)/skills" GO="$(GO)" scripts/interop-upstream

# The iii-sdk releases the Python publisher claims (README "Client versions"): the oldest
# supported and the newest, each in its own virtualenv; the dev .venv pins the one between.
PY_MATRIX ?= 0.24.4 0.25.0

.PHONY: test-python-matrix

test-python-matrix: build
	@for v in $(PY_MATRIX); do \
		venv=$(CURDIR)/.venv-iii-$$v; stamp=$$venv/.installed; \
		if [ ! -e $$stamp ] || [ $(PY_REQUIREMENTS) -nt $$stamp ] || [ sdk-python/pyproject.toml -nt $$stamp ]; then \
			test -x $$venv/bin/python || $(PYTHON3) -m venv $$venv || exit 1; \
			grep -vE '^(iii-sdk|iii-helpers)==' $(PY_REQUIREMENTS) > $$venv/requirements.txt; \
			echo "iii-sdk==$$v" >> $$venv/requirements.txt; echo "iii-helpers==$$v" >> $$venv/requirements.txt; \
			$$venv/bin/python -m pip --disable-pip-version-check --no-input install -q -r $$venv/requirements.txt || exit 1; \
			$$venv/bin/python -m pip --disable-pip-version-check --no-input install -q --no-deps --no-build-isolation -e sdk-python || exit 1; \
			touch $$stamp; \
		fi; \
		echo "iii-sdk $$v:"; \
		(cd sdk-python && $$venv/bin/python -m pytest -q -p no:cacheprovider) || exit 1; \
	done

TEST_TARGETS += test-python-matrix

# Artifacts a user installs until the packages are published (READMEs: "Installing").
DIST := $(CURDIR)/dist

.PHONY: dist test-dist

dist: node-build venv
	@rm -rf $(DIST) sdk-python/dist && mkdir -p $(DIST)
	cd sdk-node && $(NPM) pack --silent --pack-destination $(DIST) >/dev/null
	cd sdk-python && $(VENV_PY) -m hatchling build -t wheel -t sdist >/dev/null && mv dist/* $(DIST)/ && rmdir dist
	@$(MAKE) --no-print-directory dist-bin >/dev/null
	@ls -1 $(DIST)

test-dist: build dist
	GO="$(GO)" PYTHON3="$(PYTHON3)" scripts/test-dist $(DIST)

TEST_TARGETS += test-dist
