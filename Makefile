# gpuplatform developer commands. `make demo` and `make test` work on a fresh machine with
# Python 3.11; everything is installed into .venv (an existing .venv, even a symlink, is used).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := var/install.stamp

.PHONY: install demo test lint clean

$(VENV)/pyvenv.cfg:
	$(PYTHON) -m venv $(VENV)

# Install once per checkout; again when pyproject.toml changes or the venv is recreated.
$(STAMP): pyproject.toml $(VENV)/pyvenv.cfg
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	mkdir -p var
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(PY) manage.py migrate --no-input
	$(PY) manage.py seed_demo --history 30
	DEMO_TRAFFIC=1 $(PY) scripts/demo.py

test: install
	$(PY) -m pytest

lint: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy
	$(PY) manage.py check
	$(PY) manage.py makemigrations --check --dry-run

clean:
	rm -rf var staticfiles .pytest_cache .mypy_cache .ruff_cache
