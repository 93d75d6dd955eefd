# attnkit: the two set-up commands (`make demo`, `make test`) create .venv when it is missing.
# torch==2.13.0 is installed first: its CPU wheel is on this machine's disk; any other request for torch
# would pull a multi-GB CUDA build. The package itself only asks for torch>=2.4.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
STAMP := $(VENV)/.attnkit-installed

.PHONY: demo test test-slow lint format bench install clean

$(STAMP): pyproject.toml Makefile scripts/install-extras.sh
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install torch==2.13.0
	$(PIP) install -e '.[all,dev]'
	bash scripts/install-extras.sh $(PY)
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/attnkit demo

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench scripts
	$(VENV)/bin/ruff format --check src tests bench scripts

format: $(STAMP)
	$(VENV)/bin/ruff check --fix src tests bench scripts
	$(VENV)/bin/ruff format src tests bench scripts

# The suite runs in one worker per core (at most 4; CI has 2), whole test files per worker so that a module's
# fixtures (toy runs, trained models) are built once. `make test TEST_WORKERS=0` runs it in this process.
TEST_WORKERS ?= auto

test: lint
	$(PY) -m pytest -q -m "not slow" -n $(TEST_WORKERS) --maxprocesses 4 --dist loadfile

test-slow: $(STAMP)
	$(PY) -m pytest -q -m slow

bench: $(STAMP)
	$(PY) -m bench.run_all

clean:
	rm -rf $(VENV) build .pytest_cache .ruff_cache
