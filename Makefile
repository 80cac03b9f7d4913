# Everything a newcomer needs: `make demo` and `make test` on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install test lint freeze demo up down bench bench-chunk bench-index bench-search bench-mcp bench-cold bench-graph bench-watch eval

install: $(STAMP)

# Re-installs only when pyproject.toml changes.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

test: install
	$(BIN)/pytest

lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy

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

bench: bench-chunk bench-index bench-search bench-mcp bench-cold bench-graph bench-watch

bench-chunk: install
	$(BIN)/python bench/bench_chunk.py

bench-index: install
	$(BIN)/python bench/bench_index.py $(BENCH_ARGS)

bench-search: install
	$(BIN)/python bench/bench_search.py

bench-graph: install
	$(BIN)/python bench/bench_graph.py

bench-mcp: install
	$(BIN)/python bench/bench_mcp.py

# A new `rag search` process with the default model, next to importing torch.
bench-cold: install
	$(BIN)/python bench/bench_cold.py

bench-watch: install
	$(BIN)/python bench/bench_watch.py

# Retrieval quality of every search mode on evaluation sets built at run time.
eval: install
	$(BIN)/python eval/run_eval.py

up:
	docker compose up -d

down:
	docker compose down
