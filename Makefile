# Every target works as the first command on a fresh machine: it builds .venv first, and the
# reproduce targets fetch N-MNIST with tonic unless $NMNIST_ROOT (or the default folder) holds a copy.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python

.PHONY: install test reproduce reproduce-quick reproduce-best bench

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@

test: install
	$(PY) -m pytest -q

reproduce: install
	$(PY) run.py reproduce --config paper --download

reproduce-quick: install
	$(PY) run.py reproduce --config quick --download

reproduce-best: install
	$(PY) run.py reproduce --config best --download

bench: install
	$(PY) run.py bench --json bench.json
