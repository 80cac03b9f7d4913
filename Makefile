# Everything a newcomer needs: `make demo` and `make test` on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install test lint demo up down bench bench-chunk bench-index

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

# Nothing configured: embedded PostgreSQL, the bundled local model, this repository.
demo: install
	$(BIN)/rag init
	$(BIN)/rag index --path . --name local-rag
	$(BIN)/rag status

bench: bench-chunk bench-index

bench-chunk: install
	$(BIN)/python tests/bench/bench_chunk.py

bench-index: install
	$(BIN)/python tests/bench/bench_index.py

up:
	docker compose up -d

down:
	docker compose down
