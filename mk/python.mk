# Python publisher SDK (sdk-python, PyPI `iii-skills`): the virtualenv, its tests
# and the example. Included by the root Makefile (`-include mk/*.mk`).
#
#   make venv            .venv with the pinned dev dependencies + `pip install -e sdk-python`
#   make test-python     mypy --strict, then pytest (unit + against a real `skills --standalone`)
#   make example-python  the resend publisher, against `make run` (III_URL overrides the engine)

PYTHON3 ?= python3
VENV := $(CURDIR)/.venv
VENV_PY := $(VENV)/bin/python
# Lives inside .venv, so deleting .venv also forgets it.
VENV_STAMP := $(VENV)/.iii-skills-installed
PY_REQUIREMENTS := sdk-python/requirements-dev.txt
PY_PIP := $(VENV_PY) -m pip --disable-pip-version-check --no-input

.PHONY: venv test-python example-python

venv: $(VENV_STAMP)

# Reinstalled only when the pins or the package metadata change.
$(VENV_STAMP): $(PY_REQUIREMENTS) sdk-python/pyproject.toml
	@test -x $(VENV_PY) || $(PYTHON3) -m venv $(VENV)
	$(PY_PIP) install -q -r $(PY_REQUIREMENTS)
	$(PY_PIP) install -q --no-deps --no-build-isolation -e sdk-python
	@touch $@

# pytest exits 5 when it collected no tests; that is a failure here (the
# suite exists), so every non-zero status fails the target, 5 with a hint.
test-python: build venv
	cd sdk-python && $(VENV_PY) -m mypy
	@cd sdk-python && status=0; $(VENV_PY) -m pytest || status=$$?; \
	if [ $$status -eq 5 ]; then echo "test-python: pytest collected no tests" >&2; fi; \
	exit $$status

example-python: venv
	III_URL=$(III_URL) $(VENV_PY) examples/python/resend.py

TEST_TARGETS += test-python
