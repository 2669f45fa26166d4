# Every target works as the first command on a fresh machine: it builds .venv first. `make reproduce`
# and `make reproduce-quick` train on this machine into results/local/$(DATA)/ (not committed) and
# compare with the paper and the committed runs; the other reproduce targets fetch N-MNIST with tonic
# unless $NMNIST_ROOT (or the default folder) holds a copy.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
# A path given to a target, quoted for the shell: any character but a newline is taken as it is.
quoted = '$(subst ','\'',$(1))'
# REAL_ROOT=path/to/nmnist: the reproduce targets also score every run on that N-MNIST copy (--real-root).
REAL_ROOT ?=
REAL_ROOT_OPTION = $(if $(REAL_ROOT),--real-root $(call quoted,$(REAL_ROOT)))
# DATA=emulated: the project's emulated N-MNIST, made from MNIST first (MNIST_ROOT=DIR: the four MNIST
# files there, else downloaded, 11 MB); DATA=nmnist: the real N-MNIST, downloaded by tonic (1.4 GB).
DATA ?= emulated
MNIST_ROOT ?=
DATA_OPTIONS = --data $(DATA) $(if $(MNIST_ROOT),--mnist $(call quoted,$(MNIST_ROOT)))
# one BLAS thread per run, as the committed runs were trained
ONE_THREAD = OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

.PHONY: install test lesson derivation reproduce reproduce-quick report reproduce-best reproduce-hyperscale reproduce-spike-cost reproduce-screen reproduce-parity bench mutation mutation-newer

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,mpi]"
	touch $@

# The suite on every core (pytest-xdist), each process at one BLAS thread so that they do not contend.
test: install
	$(ONE_THREAD) $(PY) -m pytest -q -n auto

# The lesson on the recordings of nmnist-sample/ (about 95 CPU seconds, at one BLAS thread): its figures into
# docs/lesson/ (known for the lesson's by their sha256 in docs/lesson/.figures.sha256) and its text, printed
# numbers and figures as the page docs/lesson.md.
lesson: install
	$(ONE_THREAD) $(PY) lesson.py --out docs/lesson --page docs/lesson.md --data-root nmnist-sample

# The toy of docs/derivation.md (about 30 CPU seconds, at one BLAS thread): EGGROLL on an 8 x 6 quadratic, its
# figures redrawn in place, derivation.png and derivation-staircase.png (known for the toy's by their sha256 in
# docs/.toy-figures.sha256).
derivation: install
	$(ONE_THREAD) $(PY) toy_eggroll.py --out docs/derivation.png

reproduce: install
	$(ONE_THREAD) $(PY) run.py reproduce --config paper $(DATA_OPTIONS) $(REAL_ROOT_OPTION)

reproduce-quick: install
	$(ONE_THREAD) $(PY) run.py reproduce --config quick $(DATA_OPTIONS) $(REAL_ROOT_OPTION)

# The committed report of results/paper/ rewritten from its run records, training nothing.
report: install
	$(PY) run.py reproduce --config paper --report-only

reproduce-best: install
	$(PY) run.py reproduce --config best --download $(REAL_ROOT_OPTION)

# Needs an NVIDIA GPU and CuPy (pip install -e ".[gpu]").
reproduce-hyperscale: install
	$(PY) run.py reproduce --config hyperscale --device gpu --download $(REAL_ROOT_OPTION)

reproduce-spike-cost: install
	$(PY) run.py reproduce --config spike-cost --download $(REAL_ROOT_OPTION)

reproduce-screen: install
	$(PY) run.py reproduce --config screen --download $(REAL_ROOT_OPTION)

# Needs an NVIDIA GPU and CuPy: EGGROLL r = 1 at 65,536 members beside BPTT's best recipe.
reproduce-parity: install
	$(PY) run.py reproduce --config parity --device gpu --download $(REAL_ROOT_OPTION)

bench: install
	$(PY) run.py bench --json bench.json

# Mutation testing of the core, not part of `make test` or CI (about 80 minutes on 2 cores): mutmut
# mutates eggroll.py, snn_eggroll.py, noise.py, snn.py, optim.py and baselines.py in a copy (mutants/) and runs each
# mutant against the tests that execute its function; tests/mutation_report.py then prints the score
# per file and every survivor not recorded as equivalent, and fails below 98 %.
mutation: $(VENV)/.mutation-installed
	rm -rf mutants
	mkdir mutants
	$(VENV)/bin/mutmut run --max-children 2 > mutants/run.log 2>&1 || { tail -n 40 mutants/run.log; exit 1; }
	$(PY) tests/mutation_report.py

# The same for the newer files (config.py, resources.py, exits.py, run_folder.py; NEWER in
# tests/mutation_report.py), in a copy of the project whose [tool.mutmut] names them: build/mutation-newer/.
mutation-newer: $(VENV)/.mutation-installed
	rm -rf build/mutation-newer
	$(PY) tests/mutation_report.py --newer --prepare build/mutation-newer
	mkdir build/mutation-newer/mutants
	cd build/mutation-newer && $(abspath $(VENV))/bin/mutmut run --max-children 2 > mutants/run.log 2>&1 \
		|| { tail -n 40 mutants/run.log; exit 1; }
	cd build/mutation-newer && $(abspath $(PY)) tests/mutation_report.py --newer

$(VENV)/.mutation-installed: $(VENV)/.installed
	$(PY) -m pip install --quiet -e ".[test,mpi,mutation]"
	touch $@
