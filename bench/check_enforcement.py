"""Is every constrained request honoured? Trials per mode against ``openchatml serve``,
through the official SDK, over random-weight models that left alone never call a tool.

Usage: ``.venv/bin/python bench/check_enforcement.py [--trials 200] [--upstream-trials 50]
[--engines transformers,vllm,llamacpp] [--models tiny-random,tiny-chat-qwen3,tiny-chat-llama]
[--templates qwen3:PATH.jinja,…] [--modes required,named,…] [--markdown]``
(``make check-enforcement``).

Each engine serves each model it can: in process (``openchatml serve --model NAME``), or
through a real vLLM (CPU) / llama-server started here (``--upstream``; the tiny gpt-oss).
``--templates`` adds, in process, a random-weight model of a family (``qwen3``, ``llama``)
around any chat template (:func:`~openchatml.demo_models.tiny_chat.ensure_tiny_chat_model`):
a template whose prompt opens the reasoning (DeepSeek-R1's ``<think>\\n``, Qwen3.5's) is
checked so, with the modes of :data:`REASONING_MODES` besides.
Each trial is one response at temperature 1 with its own seed, judged from what the client
receives:

* ``conforming`` — complete, and everything the mode asks holds: a call where one is forced,
  of an allowed tool only, its arguments valid against the tool's JSON Schema
  (``jsonschema``), a custom tool's input in its grammar's language, no call under ``none``,
  a structured answer that ``responses.parse`` reads into its pydantic model, in exactly
  one message;
* ``incomplete`` — the response ran out of ``max_output_tokens`` (counted apart, never as
  conforming);
* ``failed`` — the server refused what the model wrote (a call it could not enforce),
  saying so in the response's error: nothing invalid reached the client;
* ``violating`` — a complete response that breaks the contract (the goal: none); under
  ``reasoning.effort: "none"`` (:data:`REASONING_MODES`, template models only) a reasoning
  item with text breaks it too.

Per mode, ``reasoned`` counts the conforming trials whose output has reasoning before the
call or the answer (a forced call does not skip the thinking the model starts with).

A mode the model's format cannot express (a Lark custom tool on a chat template whose calls
carry JSON arguments) is refused with a 400 before any generation: shown as ``refused``.

Schemas bound their strings, numbers and arrays so that a random model can finish them. The table
prints counts per (engine, model, mode) and the share complete.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import jsonschema
import openai
import pydantic

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "server"))

from cli_server import CliServer

from openchatml.engines.guidance import in_language

Verdict = Literal["conforming", "incomplete", "failed", "violating", "refused"]
VERDICTS: tuple[Verdict, ...] = ("conforming", "incomplete", "failed", "violating")

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "maxLength": 16},
            "unit": {"enum": ["celsius", "fahrenheit"]},
            "days": {
                "type": "array",
                "items": {"type": "integer", "minimum": 0, "maximum": 99},
                "maxItems": 3,
            },
        },
        "required": ["city", "unit"],
    },
}
TIME = {
    "type": "function",
    "name": "get_time",
    "description": "The time in a zone.",
    "parameters": {"type": "object", "properties": {"zone": {"type": "string", "maxLength": 8}}},
}
TRIP = {
    "type": "function",
    "name": "plan_trip",
    "description": "Plan a trip.",
    "parameters": {
        "type": "object",
        "properties": {
            "route": {
                "type": "object",
                "properties": {
                    "from": {"type": "string", "maxLength": 10},
                    "to": {"type": "string", "maxLength": 10},
                    "legs": {
                        "type": "array",
                        "maxItems": 3,
                        "items": {
                            "type": "object",
                            "properties": {
                                "mode": {"enum": ["train", "bus", "boat"]},
                                "hours": {"type": "integer", "minimum": 0, "maximum": 99},
                                "night": {"type": "boolean"},
                            },
                            "required": ["mode", "hours"],
                        },
                    },
                },
                "required": ["from", "to", "legs"],
            },
            "class": {"enum": ["first", "second"]},
        },
        "required": ["route", "class"],
    },
}
PATCH_GRAMMAR = 'start: "*** Begin\\n" op op? op? "*** End"\nop: /[+-][a-z ]{0,12}\\n/\n'
PATCH = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Apply a patch.",
    "format": {"type": "grammar", "syntax": "lark", "definition": PATCH_GRAMMAR},
}
PIN_PATTERN = "[0-9]{4}-[a-z]{2,6}"
PIN = {
    "type": "custom",
    "name": "set_pin",
    "description": "Set a pin.",
    "format": {"type": "grammar", "syntax": "regex", "definition": PIN_PATTERN},
}


class Verdicts(pydantic.BaseModel):
    """The structured answer of the ``json_schema`` mode."""

    verdict: Literal["yes", "no", "maybe"]
    score: int = pydantic.Field(ge=0, le=100)
    reasons: list[Annotated[str, pydantic.Field(max_length=16)]] = pydantic.Field(max_length=3)
    note: str = pydantic.Field(max_length=12)


def _allowed(mode: str, *names: str) -> dict[str, Any]:
    return {"type": "allowed_tools", "mode": mode, "tools": [{"type": "function", "name": n} for n in names]}


@dataclass(frozen=True)
class Mode:
    """A constrained request (``body``: what it adds) and what must hold of its answer:
    calls required or not, the tools a call may name."""

    name: str
    body: dict[str, Any]
    must_call: bool
    may_call: frozenset[str]
    no_reasoning: bool = False


MODES: dict[str, Mode] = {
    mode.name: mode
    for mode in (
        Mode(
            "required",
            {"tools": [WEATHER, TIME], "tool_choice": "required"},
            True,
            frozenset({"get_weather", "get_time"}),
        ),
        Mode(
            "named",
            {"tools": [WEATHER, TIME], "tool_choice": {"type": "function", "name": "get_time"}},
            True,
            frozenset({"get_time"}),
        ),
        Mode(
            "allowed auto",
            {"tools": [WEATHER, TIME, TRIP], "tool_choice": _allowed("auto", "get_time")},
            False,
            frozenset({"get_time"}),
        ),
        Mode(
            "allowed required",
            {"tools": [WEATHER, TIME, TRIP], "tool_choice": _allowed("required", "get_weather", "plan_trip")},
            True,
            frozenset({"get_weather", "plan_trip"}),
        ),
        Mode("none", {"tools": [WEATHER, TIME], "tool_choice": "none"}, False, frozenset()),
        Mode("strict nested", {"tools": [TRIP], "tool_choice": "required"}, True, frozenset({"plan_trip"})),
        Mode("json_schema", {}, False, frozenset()),
        Mode(
            "lark custom",
            {"tools": [WEATHER, PATCH], "tool_choice": {"type": "custom", "name": "apply_patch"}},
            True,
            frozenset({"apply_patch"}),
        ),
        Mode(
            "regex custom",
            {"tools": [WEATHER, PIN], "tool_choice": {"type": "custom", "name": "set_pin"}},
            True,
            frozenset({"set_pin"}),
        ),
    )
}
REASONING_MODES: dict[str, Mode] = {
    mode.name: mode
    for mode in (
        Mode(
            "required effort-none",
            {"tools": [WEATHER, TIME], "tool_choice": "required", "reasoning": {"effort": "none"}},
            True,
            frozenset({"get_weather", "get_time"}),
            no_reasoning=True,
        ),
        Mode(
            "json_schema effort-none",
            {"reasoning": {"effort": "none"}},
            False,
            frozenset(),
            no_reasoning=True,
        ),
    )
}
"""Modes of template models only: ``reasoning.effort: "none"`` (gpt-oss reads it as ``low``)."""
SCHEMAS = {tool["name"]: tool["parameters"] for tool in (WEATHER, TIME, TRIP)}


@dataclass
class Trial:
    verdict: Verdict
    why: str = ""
    reasoned: bool = False
    """Reasoning with text came before the call or the answer."""


def reasoned(output: list[dict[str, Any]]) -> bool:
    """Whether ``output`` holds a reasoning item with text."""
    return any(item["type"] == "reasoning" and _reasoning_text(item) for item in output)


def _reasoning_text(item: dict[str, Any]) -> str:
    parts = [*(item.get("content") or []), *(item.get("summary") or [])]
    return "".join(str(part.get("text") or "") for part in parts).strip()


def judge_calls(mode: Mode, output: list[dict[str, Any]]) -> str:
    """What breaks the mode's contract in ``output`` (``""``: nothing)."""
    calls = [item for item in output if item["type"] in ("function_call", "custom_tool_call")]
    if mode.must_call and not calls:
        return "no call"
    for call in calls:
        name = call["name"]
        if name not in mode.may_call:
            return f"a call of {name!r}"
        if call["type"] == "function_call":
            try:
                jsonschema.validate(json.loads(call["arguments"]), SCHEMAS[name])
            except (ValueError, jsonschema.ValidationError) as exc:
                return f"arguments of {name}: {str(exc)[:80]}"
        elif name == "apply_patch" and not in_language("lark", PATCH_GRAMMAR, call["input"]):
            return f"patch input {call['input'][:60]!r}"
        elif name == "set_pin" and not re.fullmatch(PIN_PATTERN, call["input"]):
            return f"pin input {call['input'][:60]!r}"
    return ""


def run_trial(client: openai.OpenAI, model: str, mode: Mode, seed: int, budget: int) -> Trial:
    """One response of ``mode``, judged."""
    common: dict[str, Any] = {"model": model, "max_output_tokens": budget, "temperature": 1.0, "store": False}
    extra = {"seed": seed}
    if mode.name.startswith("json_schema"):
        try:
            raw = client.responses.with_raw_response.parse(
                input="Is Paris nice? Answer as JSON.",
                text_format=Verdicts,
                extra_body=extra,
                **common,
                **mode.body,
            )
        except openai.BadRequestError as exc:
            return Trial("refused", str(exc)[:200])
        status = raw.http_response.json()["status"]
        if status == "incomplete":
            return Trial("incomplete")
        if status != "completed":
            return Trial("failed", str(raw.http_response.json().get("error")))
        try:
            parsed = raw.parse()
        except pydantic.ValidationError as exc:  # the SDK could not read a complete answer
            return Trial("violating", f"parse: {str(exc)[:80]}")
        messages = [item for item in parsed.output if item.type == "message"]
        if parsed.output_parsed is None or len(messages) != 1:
            return Trial("violating", f"{len(messages)} messages, parsed {parsed.output_parsed!r}")
        return _judged(mode, raw.http_response.json()["output"], "")
    try:
        response = client.responses.create(
            input="What is the weather in Paris, and the time there?", extra_body=extra, **common, **mode.body
        )
    except openai.BadRequestError as exc:  # the model's format cannot express the mode
        return Trial("refused", str(exc)[:200])
    body = response.model_dump()
    if body["status"] == "incomplete":
        return Trial("incomplete")
    if body["status"] == "failed":
        return Trial("failed", str(body.get("error")))
    return _judged(mode, body["output"], judge_calls(mode, body["output"]))


def _judged(mode: Mode, output: list[dict[str, Any]], why: str) -> Trial:
    """The verdict on a complete response's ``output`` (``why``: what breaks the calls'
    contract, ``""``: nothing)."""
    thought = reasoned(output)
    if not why and mode.no_reasoning and thought:
        why = "reasoning under effort none"
    return Trial("violating", why, thought) if why else Trial("conforming", "", thought)


@contextlib.contextmanager
def serving(engine: str, model: str, home: Path) -> Iterator[CliServer]:
    """``openchatml serve`` over ``model``: in process, or through a vLLM / llama-server
    started here (the tiny gpt-oss)."""
    if engine == "transformers":
        served = str(template_model(model, home)) if is_template(model) else model
        server = CliServer(
            ["--model", served, "--device", "cpu", "--store", "none"], home / label(model), timeout=600
        )
        try:
            yield server
        finally:
            server.stop()
        return
    from openchatml.demo_models.tiny_random import ensure_tiny_model

    folder = ensure_tiny_model()
    if engine == "vllm":
        import vllm_harness

        venv = vllm_harness.ensure_vllm_venv()
        port = vllm_harness.free_port()
        upstream = vllm_harness.start_vllm(folder, port, venv=venv, log_path=home / "vllm.log")
    else:
        import llamacpp_harness

        binary = llamacpp_harness.ensure_llama_server()
        gguf = llamacpp_harness.ensure_tiny_gguf(folder)
        port = llamacpp_harness.free_port()
        upstream = llamacpp_harness.start_llama_server(
            gguf, port, binary=binary, log_path=home / "llama-server.log"
        )
    with upstream as running:
        server = CliServer(["--upstream", running.base_url, "--store", "none"], home / engine, timeout=600)
        try:
            yield server
        finally:
            server.stop()


def is_template(model: str) -> bool:
    """Whether ``model`` is ``FAMILY:PATH`` of a chat template (see :func:`template_model`)."""
    return model.endswith(".jinja")


def label(model: str) -> str:
    """A short name of ``model``: a template's file stem."""
    return Path(model.split(":", 1)[-1]).stem if is_template(model) else model


def template_model(spec: str, home: Path) -> Path:
    """The folder of a random-weight model of family ``FAMILY`` (``qwen3`` without one)
    around the chat template at ``PATH`` (``spec``: ``[FAMILY:]PATH``), built under ``home``."""
    from openchatml.demo_models.tiny_chat import ensure_tiny_chat_model

    family, _, path = spec.rpartition(":")
    return ensure_tiny_chat_model(home, Path(path), family=family or "qwen3")


def check(
    engine: str, model: str, modes: list[Mode], trials: int, budget: int, report: Callable[[str], None]
) -> dict[str, Counter[str]]:
    """Every mode's verdicts over ``trials`` trials on one served model."""
    out: dict[str, Counter[str]] = {}
    with tempfile.TemporaryDirectory() as scratch, serving(engine, model, Path(scratch)) as server:
        client = server.client()
        served = client.models.list().data[0].id
        for mode in modes:
            tally: Counter[str] = Counter()
            started = time.perf_counter()
            for seed in range(trials):
                trial = run_trial(client, served, mode, seed, budget)
                if trial.verdict == "refused":
                    report(f"  REFUSED {engine}/{model}/{mode.name}: {trial.why}")
                    tally["refused"] = trials
                    break
                tally[trial.verdict] += 1
                tally["reasoned"] += trial.verdict == "conforming" and trial.reasoned
                if trial.verdict == "violating":
                    report(f"  VIOLATING {engine}/{model}/{mode.name} seed {seed}: {trial.why}")
            out[mode.name] = tally
            report(
                f"{engine:12} {label(model):16} {mode.name:17} "
                + " ".join(f"{v} {tally[v]:4}" for v in (*VERDICTS, "reasoned"))
                + f"  ({time.perf_counter() - started:.0f} s)"
            )
    return out


def table(results: dict[tuple[str, str], dict[str, Counter[str]]], markdown: bool) -> str:
    head = ["engine", "model", "mode", *VERDICTS, "complete", "reasoned"]
    rows = []
    for (engine, model), modes in results.items():
        for mode, tally in modes.items():
            if tally["refused"]:
                rows.append([engine, label(model), mode, *("-" for _ in VERDICTS), "refused (400)", "-"])
                continue
            total = sum(tally[v] for v in VERDICTS) or 1
            complete = 100 * (total - tally["incomplete"]) / total
            counts = [str(tally[v]) for v in VERDICTS]
            rows.append([engine, label(model), mode, *counts, f"{complete:.0f}%", str(tally["reasoned"])])
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in [head, *rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=200, help="trials per mode in process")
    parser.add_argument(
        "--upstream-trials", type=int, default=50, help="trials per mode over vLLM / llama.cpp"
    )
    parser.add_argument("--engines", default="transformers,vllm,llamacpp")
    parser.add_argument("--models", default="tiny-random,tiny-chat-qwen3,tiny-chat-llama", help="in process")
    parser.add_argument(
        "--templates", default="", help="in process, comma-separated FAMILY:PATH.jinja (qwen3 or llama)"
    )
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated")
    parser.add_argument(
        "--reasoning-modes",
        default=",".join(REASONING_MODES),
        help="comma-separated, template models only ('' for none)",
    )
    parser.add_argument("--budget", type=int, default=320, help="max_output_tokens of each trial")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    modes = [MODES[name.strip()] for name in args.modes.split(",") if name.strip()]
    extra = [REASONING_MODES[name.strip()] for name in args.reasoning_modes.split(",") if name.strip()]
    results: dict[tuple[str, str], dict[str, Counter[str]]] = {}
    for engine in args.engines.split(","):
        models = [m for m in args.models.split(",") if m] if engine == "transformers" else ["tiny-gpt-oss"]
        if engine == "transformers":
            models += [t for t in args.templates.split(",") if t]
        trials = args.trials if engine == "transformers" else args.upstream_trials
        for model in models:
            own = modes + (extra if model.startswith("tiny-chat") or is_template(model) else [])
            results[engine, model] = check(engine, model, own, trials, args.budget, print)
    print()
    print(table(results, args.markdown))
    violating = sum(t["violating"] for modes in results.values() for t in modes.values())
    sys.exit(1 if violating else 0)


if __name__ == "__main__":
    main()
