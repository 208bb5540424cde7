"""Constrained requests are honoured on every model the server runs in process: a few
trials of every mode of ``bench/check_enforcement.py`` (which runs 200 of each) against
``openchatml serve --model NAME`` for the random-weight gpt-oss and two chat-template
families, through the official SDK. No trial may violate its mode; a random model must
still finish nearly every one within its budget."""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import openai
import pytest
from cli_server import CliServer

pytest.importorskip("torch", reason="the demo models need torch (pip install 'openchatml[transformers]')")

_BENCH = Path(__file__).resolve().parents[2] / "bench" / "check_enforcement.py"
_spec = importlib.util.spec_from_file_location("check_enforcement", _BENCH)
assert _spec is not None and _spec.loader is not None
check_enforcement: Any = importlib.util.module_from_spec(_spec)
sys.modules["check_enforcement"] = check_enforcement
_spec.loader.exec_module(check_enforcement)

TRIALS = 4
BUDGET = 320
MODELS = ["tiny-random", "tiny-chat-qwen3", "tiny-chat-llama"]
REFUSED = {("tiny-chat-qwen3", "lark custom"), ("tiny-chat-llama", "lark custom")}
"""A chat template's calls carry JSON arguments: a Lark grammar cannot hold the text inside
a JSON string, so the request is refused (400) before any generation."""


@pytest.fixture(scope="module", params=MODELS)
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    home = tmp_path_factory.mktemp(f"enforce-{request.param}")
    server = CliServer(["--model", request.param, "--device", "cpu", "--store", "none"], home, timeout=600)
    yield request.param, server
    server.stop()


@pytest.mark.parametrize("mode", list(check_enforcement.MODES))
def test_every_mode_is_honoured(served: Any, mode: str) -> None:
    model, server = served
    client = server.client()
    tally: Counter[str] = Counter()
    for seed in range(TRIALS):
        trial = check_enforcement.run_trial(client, model, check_enforcement.MODES[mode], seed, BUDGET)
        if (model, mode) in REFUSED:
            assert trial.verdict == "refused", trial
            assert "Lark" in trial.why
            return
        assert trial.verdict != "violating", trial.why
        assert trial.verdict != "refused", trial.why
        tally[trial.verdict] += 1
    assert tally["conforming"] >= TRIALS - 1, tally


def test_reasoning_comes_before_a_forced_call(tmp_path: Path) -> None:
    server = CliServer(
        ["--model", "tiny-random", "--device", "cpu", "--store", "none"], tmp_path, timeout=600
    )
    try:
        client = server.client()
        body = check_enforcement.MODES["required"].body
        kinds = []
        for seed in range(3):
            response = client.responses.create(
                model="tiny-random",
                input="Weather?",
                max_output_tokens=BUDGET,
                extra_body={"seed": seed},
                **body,
            )
            kinds.append([item.type for item in response.output])
        assert all(k[-1] == "function_call" for k in kinds), kinds
        assert any("reasoning" in k[:-1] for k in kinds), kinds
    finally:
        server.stop()


UPSTREAM_TRIALS = 2


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("vllm", marks=pytest.mark.vllm),
        pytest.param("llamacpp", marks=pytest.mark.llamacpp),
    ],
)
def upstream(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``openchatml serve --upstream`` over the session's vLLM or llama-server (tiny gpt-oss)."""
    base_url = request.getfixturevalue(f"{request.param}_server").base_url
    home = tmp_path_factory.mktemp(f"enforce-{request.param}")
    server = CliServer(["--upstream", base_url, "--store", "none"], home, timeout=600)
    yield request.param, server
    server.stop()


@pytest.mark.parametrize("mode", list(check_enforcement.MODES))
def test_every_mode_holds_over_an_upstream(upstream: Any, mode: str) -> None:
    """Over vLLM and llama-server nothing violates a mode either. llama-server's GBNF cannot
    hold every JSON Schema keyword (``pattern``, ``format``): what it misses is checked after
    parsing, and fails the response (``failed``) rather than reach the client."""
    engine, server = upstream
    client = server.client()
    served = client.models.list().data[0].id
    for seed in range(UPSTREAM_TRIALS):
        trial = check_enforcement.run_trial(client, served, check_enforcement.MODES[mode], seed, BUDGET)
        assert trial.verdict not in ("violating", "refused"), (engine, trial.why)
        if engine == "vllm":
            assert trial.verdict != "failed", (engine, trial.why)


def test_a_custom_grammar_gbnf_cannot_carry_is_refused_over_llama_cpp(upstream: Any) -> None:
    """llama-server's grammars are GBNF: a custom tool's Lark grammar that GBNF cannot carry
    (a lazy lexeme) is a 400 before any generation."""
    engine, server = upstream
    if engine != "llamacpp":
        pytest.skip("vLLM's llguidance takes every grammar the request checks took")
    lazy = {"type": "grammar", "syntax": "lark", "definition": 'start: x "!"\nx[lazy]: /[a-z]+/\n'}
    tool = {"type": "custom", "name": "note", "description": "Take a note.", "format": lazy}
    client = server.client()
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(
            model=client.models.list().data[0].id,
            input="Note it.",
            tools=[tool],
            tool_choice={"type": "custom", "name": "note"},
            max_output_tokens=64,
        )
    assert raised.value.code == "unsupported_custom_tool", raised.value


def test_a_forced_code_interpreter_call_comes_in_every_trial(tmp_path: Path) -> None:
    """``tool_choice: {"type": "code_interpreter"}`` on the random gpt-oss: every trial's
    first step ends in a python call (its code random text, which the kernel runs or
    refuses); the response completes or runs out of budget, never fails."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "tools" / "python"))
    from bwrap_setup import ensure_bwrap

    if ensure_bwrap() is None:
        pytest.skip("bwrap is not installed and cannot be installed here")
    python = ["--python", "--python-timeout", "20"]
    server = CliServer(
        ["--model", "tiny-random", "--device", "cpu", "--store", "none", *python], tmp_path, timeout=600
    )
    try:
        client = server.client()
        for seed in range(TRIALS):
            response = client.responses.create(
                model="tiny-random",
                input="What is 6 * 7? Use python.",
                tools=[{"type": "code_interpreter", "container": {"type": "auto"}}],
                tool_choice={"type": "code_interpreter"},
                include=["code_interpreter_call.outputs"],
                max_output_tokens=BUDGET,
                extra_body={"seed": seed},
            )
            kinds = [item.type for item in response.output]
            assert response.status in ("completed", "incomplete"), (response.status, response.error)
            assert "code_interpreter_call" in kinds, kinds
            first = kinds.index("code_interpreter_call")
            assert set(kinds[:first]) <= {"reasoning", "message"}, kinds  # thoughts and preambles only
    finally:
        server.stop()
