# gpuplatform developer commands. `make demo` and `make test` work on a fresh machine with
# Python 3.11; everything is installed into .venv (an existing .venv, even a symlink, is used).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := var/install.stamp

.PHONY: install demo test lint clean bench

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

# Every benchmark table and plot of BENCHMARKS.md: trace replays (tables, CSV, PNG; needs the
# traces in ../shared/traces or $GPUPLATFORM_TRACES_DIR), their findings, the scale sweep and the
# engine benchmark. Minutes on a 2-core machine (BENCHMARKS.md says how long); matplotlib comes
# with the bench extra.
bench: install
	$(PY) -c 'import matplotlib' 2>/dev/null || $(PY) -m pip install --quiet -e '.[bench]'
	$(PY) benchmarks/run_traces.py --keep-reports
	$(PY) benchmarks/trace_findings.py
	$(PY) benchmarks/scale_sweep.py
	$(PY) benchmarks/engine_bench.py > benchmarks/results/engine_bench.txt
	cat benchmarks/results/engine_bench.txt

clean:
	rm -rf var staticfiles .pytest_cache .mypy_cache .ruff_cache
