# Every target works as the first command on a fresh machine: it builds .venv first.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python

.PHONY: install test reproduce reproduce-quick bench

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@

test: install
	$(PY) -m pytest -q

reproduce: install
	$(PY) run.py reproduce --config paper

reproduce-quick: install
	$(PY) run.py reproduce --config quick

bench: install
	$(PY) run.py bench --json bench.json
