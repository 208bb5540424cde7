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


def forced_trials(
    server_args: list[str], home: Path, model: str, tools: list[Any], choice: Any, kind: str, ask: str
) -> list[Any]:
    """Run ``TRIALS`` requests forcing ``choice`` on ``model`` served with ``server_args``:
    each completes or runs out of budget (never fails), and its output holds an item of
    ``kind`` with only thoughts, preambles (and an MCP server's tool list) before it. The
    first such item of each trial."""
    args = ["--model", model, "--device", "cpu", "--store", "none", *server_args]
    server = CliServer(args, home, timeout=600)
    firsts = []
    try:
        client = server.client()
        for seed in range(TRIALS):
            response = client.responses.create(
                model=model,
                input=ask,
                tools=tools,
                tool_choice=choice,
                max_output_tokens=BUDGET,
                extra_body={"seed": seed},
            )
            kinds = [item.type for item in response.output]
            assert response.status in ("completed", "incomplete"), (response.status, response.error)
            assert kind in kinds, kinds
            first = kinds.index(kind)
            assert set(kinds[:first]) <= {"reasoning", "message", "mcp_list_tools"}, kinds
            firsts.append(response.output[first])
    finally:
        server.stop()
    return firsts


def python_args() -> list[str]:
    """``serve`` options that turn the python tool on; skips where bubblewrap cannot be had."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "tools" / "python"))
    from bwrap_setup import ensure_bwrap

    if ensure_bwrap() is None:
        pytest.skip("bwrap is not installed and cannot be installed here")
    return ["--python", "--python-timeout", "20"]


CODE_INTERPRETER = [{"type": "code_interpreter", "container": {"type": "auto"}}]


def test_a_forced_code_interpreter_call_comes_in_every_trial(tmp_path: Path) -> None:
    """``tool_choice: {"type": "code_interpreter"}`` on the random gpt-oss: every trial's
    first step ends in a python call (its code random text, which the kernel runs or
    refuses); the response completes or runs out of budget, never fails."""
    choice = {"type": "code_interpreter"}
    ask = "What is 6 * 7? Use python."
    forced_trials(
        python_args(), tmp_path, "tiny-random", CODE_INTERPRETER, choice, "code_interpreter_call", ask
    )


def test_a_forced_code_interpreter_call_on_a_template_model(tmp_path: Path) -> None:
    """The same on the random tiny Qwen3 chat model: the template offers python as a
    function, and every trial's first turn calls it."""
    choice = {"type": "code_interpreter"}
    ask = "What is 6 * 7? Use python."
    model = "tiny-chat-qwen3"
    forced_trials(python_args(), tmp_path, model, CODE_INTERPRETER, choice, "code_interpreter_call", ask)


def test_a_forced_web_search_comes_in_every_trial(tmp_path: Path) -> None:
    """``tool_choice: {"type": "web_search_preview"}`` on the random gpt-oss, its browser over
    a corpus: every trial's first step ends in a ``browser.search`` call (its arguments
    random text, which the browser runs or refuses)."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "note.md").write_text("# A note\n\nThe answer is forty-two.\n")
    tools = [{"type": "web_search_preview"}]
    choice = {"type": "web_search_preview"}
    ask = "What does the note say? Search for it."
    args = ["--browser-corpus", str(corpus)]
    calls = forced_trials(args, tmp_path, "tiny-random", tools, choice, "web_search_call", ask)
    assert all(call.action.type == "search" for call in calls)


def test_a_forced_mcp_call_comes_in_every_trial(tmp_path: Path, mcp_server: Any) -> None:
    """``tool_choice: {"type": "mcp", "server_label": "demo"}`` on the random gpt-oss, with a
    live MCP server: every trial lists the server's tools and its first step calls one of
    them (random arguments, which the server runs or refuses)."""
    tool = {
        "type": "mcp",
        "server_label": "demo",
        "server_url": mcp_server.http_url,
        "headers": mcp_server.auth,
        "allowed_tools": ["add"],
        "require_approval": "never",
    }
    choice = {"type": "mcp", "server_label": "demo"}
    args = ["--mcp-allow", f"http://127.0.0.1:{mcp_server.http_port}/mcp"]
    ask = "Add 2 and 3 with the demo server."
    calls = forced_trials(args, tmp_path, "tiny-random", [tool], choice, "mcp_call", ask)
    assert all(call.name == "add" for call in calls)
