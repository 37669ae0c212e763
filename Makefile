# tensoradbook: `make lab` to read the book, `make test` to check it.
# Everything runs from the virtual environment .venv/ at the repository root.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
comma  := ,
# What each command installs (EXTRAS=... on the command line instead): reading needs the book's libraries and
# JupyterLab (lab); the tests, the benchmarks and executing every chapter also PyTorch and JAX (models: chapters 10
# and 11, tensoradbook.torch / .jax), the test tools and the class server (hub); make hub the class server, whose
# students read every chapter (models).
ifneq ($(filter test lint fuzz book notebooks,$(MAKECMDGOALS)),)
EXTRAS ?= lab,test,models,hub
else ifneq ($(filter hub,$(MAKECMDGOALS)),)
EXTRAS ?= lab,models,hub
else
EXTRAS ?= lab
endif
# The extras .venv/ has (the stamp lists them) and those asked for that it has not: those install on top.
INSTALLED_EXTRAS := $(subst $(comma), ,$(shell cat $(STAMP) 2>/dev/null))
MISSING_EXTRAS   := $(filter-out $(INSTALLED_EXTRAS),$(subst $(comma), ,$(EXTRAS)))
EVERY_EXTRA      := $(subst $() ,$(comma),$(sort $(INSTALLED_EXTRAS) $(subst $(comma), ,$(EXTRAS))))

# make lab PORT=9999 IP=0.0.0.0
IP   ?= 127.0.0.1
PORT ?= 8888
# The chapters a reader runs and edits in make lab: a working copy of notebooks/ in the git-ignored work/ (at the
# same depth, so the chapters' ../tensoradbook/... links and ../benchmarks/results/ still resolve). The committed
# notebooks/ keep their outputs as nbval and the site need them.
WORK ?= work
START_PAGE ?= $(WORK)/00_start_here.ipynb
# make site BINDER_REPO=owner/name: the repository the "Run this chapter live" links open on Binder (GitHub, or a
# GitHub or GitLab URL); by default the checkout's origin remote, and no link where that is not on either
BINDER_REPO ?=
# make demo CHAPTER=04a_integer_equations, make slides CHAPTER=06a_kernels
CHAPTER ?=
# the widgets' presentation scale in demos and slides (figure size, dpi and fonts together)
SCALE ?= 2

# nbgrader runs alembic (and the demos run jupyter) as subprocesses: the venv's bin comes first on PATH.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

NOTEBOOKS = $(sort $(wildcard notebooks/*.ipynb))
NBVAL_OPTS := --nbval --nbval-current-env --nbval-sanitize-with notebooks/nbval_sanitize.cfg \
              -p tests.plugins.nbval_semicolon
PYTEST_OPTS ?= -p no:cacheprovider
# two workers (pytest-xdist), each file on one of them: a notebook's cells run in order in one kernel
WORKERS ?= -n 2 --dist loadfile

.PHONY: help install assets proxy extras-missing lab work test lint fuzz book notebooks
.PHONY: assignments grade extend dashboard demo slides slides-pdf site hub clean

help:
	@echo "make lab        install, then start JupyterLab on $(START_PAGE), your working copy of the chapters in $(WORK)/ (IP=$(IP) PORT=$(PORT))"
	@echo "make work       copy the chapters not yet in $(WORK)/ there, never overwriting one (make lab does it first)"
	@echo "make test       install, then lint (ruff), run tests/ (unit, property, packaging, browser) and nbval over notebooks/"
	@echo "make lint       install, then ruff check (rules in pyproject.toml) over the code, tests and notebooks"
	@echo "make fuzz       install, then the differential tests of the kernels on new random cases for FUZZ_SECONDS (3600)"
	@echo "make book       install, then one edition: the quoted benchmarks, every chapter executed, the start page stamped"
	@echo "make notebooks  install, then re-execute every notebook in place, saving its outputs"
	@echo "make assignments  nbgrader: the student release of every chapter's assignment into course/release/"
	@echo "make grade      nbgrader: autograde what is new in course/submitted/ (answers in a bubblewrap sandbox), feedback, grades.csv, Canvas/Moodle CSV in course/export/, grading_report.csv (CHAPTER=...: one; FORCE=1: regrade all)"
	@echo "make extend STUDENT=alice CHAPTER=04a_integer_equations UNTIL=2026-12-20T23:59+01:00  nbgrader: one student's extension in the gradebook (due dates, cut-offs, penalties: course/deadlines.toml)"
	@echo "make dashboard  after make grade: course/dashboard.html, one offline page of score spreads per assignment and exercise, the most missed exercises, late and missing submissions, tampering rows (ROSTER=hub/students.csv: the class)"
	@echo "make demo       Voila on the demo gallery at http://$(IP):$(PORT)/ (CHAPTER=04a_integer_equations: one chapter)"
	@echo "make slides CHAPTER=06a_kernels  a chapter as reveal.js slides with live widgets (Voila, offline)"
	@echo "make slides-pdf  every chapter's slides as build/slides/<chapter>.pdf, printed offline by chromium (CHAPTER=...: one)"
	@echo "make site       the static HTML edition into site/ (every chapter with its outputs and widgets; BINDER_REPO=owner/name: its live links)"
	@echo "make hub        as root: the class server, JupyterHub for the course of hub/course.toml (users, nbgrader exchange, warm kernel cache)"
	@echo "make install    create $(VENV)/ (Python >= 3.11) with the project editable and extras [$(EXTRAS)] (each command its own: lab to read, lab,test,models,hub to test)"
	@echo "make assets     fetch reveal.js, the widget manager and MathJax from npm for offline slides, demos and site (they run it)"
	@echo "make clean      remove $(VENV)/ and build leftovers"

install: $(STAMP)

# Re-installs only when pyproject.toml (or this Makefile) changed, .venv/ is gone, or an extra asked for is missing
# (make lab, then make test: the test extras on top of what is there).
$(STAMP): pyproject.toml Makefile $(if $(MISSING_EXTRAS),extras-missing)
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { \
	  echo "error: tensoradbook needs Python 3.11 or newer; '$(PYTHON)' is $$($(PYTHON) --version 2>&1 || echo missing)." >&2; \
	  echo "       Install a newer Python and run e.g. 'make install PYTHON=python3.12'." >&2; \
	  exit 1; }
	@if [ ! -x $(VPY) ]; then \
	  echo "Creating $(VENV)/ with $$($(PYTHON) --version)"; \
	  $(PYTHON) -m venv $(VENV) || { \
	    echo "error: '$(PYTHON) -m venv' failed; on Debian/Ubuntu: apt-get install -y python3-venv" >&2; \
	    rm -rf $(VENV); exit 1; }; \
	fi
	@# pip, and the build backend (build-system.requires) for the wheel test's --no-build-isolation
	$(VPY) -m pip install --quiet --upgrade pip $$($(VPY) -c 'import tomllib; print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))')
	$(VPY) -m pip install --quiet -e '.[$(EVERY_EXTRA)]'
	@# A kernelspec inside the venv, so notebooks' "python3" kernel is the venv's Python.
	$(VPY) -m ipykernel install --sys-prefix --name python3 --display-name 'Python 3 (ipykernel)' >/dev/null
	@echo '$(EVERY_EXTRA)' > $@
	@echo "Installed into $(VENV)/ with the extras [$(EVERY_EXTRA)]"

extras-missing:

# reveal.js, the widget manager, require.js, jQuery and MathJax for offline slides, demos and the static site (npm
# pack, once per version): what reading in JupyterLab does not need, fetched when those are first built.
assets: install
	$(VPY) -m classroom.assets

# configurable-http-proxy (JupyterHub's proxy) from npm into the venv, once per version.
proxy: install
	$(VPY) -m classroom.hub install-proxy

lab: install work
	@echo "Starting JupyterLab on $(START_PAGE): open the http://$(IP):$(PORT)/lab/tree/$(START_PAGE)?token=... URL printed below (Ctrl-C to stop)."
	@# the chapters import notebooks/bookdata.py, which stays in the checkout; the Formgrader (nbgrader) finds the
	@# course in course/ whatever the start page (its nbgrader_config.py, gradebook and private exchange)
	PYTHONPATH="$(CURDIR)/notebooks$${PYTHONPATH:+:$$PYTHONPATH}" \
	$(VENV)/bin/jupyter lab --ServerApp.ip=$(IP) --ServerApp.port=$(PORT) \
	  --ServerApp.root_dir="$(CURDIR)" \
	  --CourseDirectory.root="$(CURDIR)/course" \
	  $(if $(DISPLAY),,--no-browser) $(if $(filter 0,$(shell id -u)),--allow-root) \
	  --LabApp.default_url=/lab/tree/$(START_PAGE) \
	  --LabApp.news_url=None --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate

# The working copy: a chapter not yet in $(WORK)/ is copied there (all of them on the first start, a new chapter
# after a git pull); one already there is the reader's and is never overwritten (delete it for a fresh copy).
work:
	@mkdir -p $(WORK)
	@for chapter in notebooks/*.ipynb; do \
	  [ -e "$(WORK)/$${chapter##*/}" ] || { cp -p "$$chapter" "$(WORK)/" && echo "copied $$chapter to $(WORK)/"; }; \
	done

# The linter first (seconds), then one pytest run: tests/ (including the browser test) plus strict nbval
# over notebooks/.
test: lint assets proxy
	$(VPY) -m pytest $(PYTEST_OPTS) $(WORKERS) $(NBVAL_OPTS) tests $(NOTEBOOKS) $(ARGS)

lint: install
	$(VENV)/bin/ruff check .

# Nightly-sized: random functions on both sides of every planning threshold, every target against the reference, for
# as long as FUZZ_SECONDS; prints each failure with its text and shapes (add it to FOUND in the test).
FUZZ_SECONDS ?= 3600
fuzz: install
	DIFFERENTIAL_SECONDS=$(FUZZ_SECONDS) $(VPY) -m pytest $(PYTEST_OPTS) -s tests/test_differential.py $(ARGS)

# One edition: the benchmarks whose figures the chapters quote (results in benchmarks/results/), then every
# chapter executed in place, the start page last with the build's stamp and the chapters' estimated times.
QUOTED_BENCHMARKS = gradients workloads programs capstone
book: install
	@for name in $(QUOTED_BENCHMARKS); do \
	  echo "== benchmarks/$$name.py"; \
	  $(VPY) benchmarks/$$name.py --json benchmarks/results/$$name.json; \
	done
	$(VPY) benchmarks/book.py

notebooks: install
	@test -n "$(NOTEBOOKS)" || { echo "no notebooks/*.ipynb to execute"; exit 0; }
	$(VENV)/bin/jupyter nbconvert --to notebook --execute --inplace \
	  --ExecutePreprocessor.kernel_name=python3 --ExecutePreprocessor.timeout=600 \
	  $(NOTEBOOKS)

# -B and PYTHONDONTWRITEBYTECODE: run as root on the class server, these would leave root's compiled copies of the
# classroom's modules in the repository; there they run each step as the course's instructor.
assignments: install
	PYTHONDONTWRITEBYTECODE=1 $(VPY) -B -m classroom.course assignments

grade: install
	PYTHONDONTWRITEBYTECODE=1 $(VPY) -B -m classroom.course grade $(CHAPTER) $(if $(filter 1,$(FORCE)),--force)

extend: install
	PYTHONDONTWRITEBYTECODE=1 $(VPY) -B -m classroom.course extend $(CHAPTER) --student "$(STUDENT)" --until "$(UNTIL)"

# make dashboard ROSTER=hub/students.csv: every student of the class counts, those who submitted nothing as missing
# (a CSV with a username or id column; on the class server its student list is the default)
ROSTER ?=
dashboard: install
	PYTHONDONTWRITEBYTECODE=1 $(VPY) -B -m classroom.dashboard $(if $(ROSTER),--roster $(ROSTER))

demo: assets
	$(VPY) -m classroom.voila_serve serve --ip $(IP) --port $(PORT) --scale $(SCALE) $(if $(CHAPTER),--chapter $(CHAPTER))

slides: assets
	@test -n "$(CHAPTER)" || { echo "usage: make slides CHAPTER=06a_kernels (a name from notebooks/)"; exit 2; }
	$(VPY) -m classroom.voila_serve slides --ip $(IP) --port $(PORT) --scale $(SCALE) --chapter $(CHAPTER)

slides-pdf: assets
	$(VPY) -m classroom.deck pdf $(CHAPTER)

site: assets
	$(VPY) -m classroom.site $(if $(BINDER_REPO),--binder-repo $(BINDER_REPO))

# The class server: as root, the users of hub/students.csv, nbgrader's exchange, the course, the warm kernel cache,
# then JupyterHub on hub/course.toml's address (HUB_SETTINGS=other.toml for another course). make assignments and
# make grade then release into and collect from its exchange.
HUB_SETTINGS ?=
hub: assets proxy
	$(VPY) -m classroom.hub serve $(if $(HUB_SETTINGS),--settings $(HUB_SETTINGS))

clean:
	rm -rf $(VENV) build dist site *.egg-info .pytest_cache .hypothesis
