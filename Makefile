# Quick start: `make run` (the main job) and `make test` (the whole suite).
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: run test lint bench clean

$(BIN)/openchatml: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

# The main job: render the example conversation to Harmony text, then parse it back.
run: $(BIN)/openchatml
	$(BIN)/openchatml render examples/weather.json --format text
	$(BIN)/openchatml render examples/weather.json --format text | $(BIN)/openchatml parse - --profile harmony

lint: $(BIN)/openchatml
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

test: lint
	$(BIN)/pytest

bench: $(BIN)/openchatml
	$(BIN)/python bench/bench_codec.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
