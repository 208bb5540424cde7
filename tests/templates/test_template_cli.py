"""``openchatml template …`` through click: analyze, parse (whole and streamed),
grammar, and check with its per-template counts, last line and exit status."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from data_paths import CASES, TEMPLATES

from openchatml.cli import main

QWEN3 = str(TEMPLATES / "Qwen-Qwen3-0.6B.jinja")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a word up.",
            "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        },
    }
]
OUTPUT = '<think>\nHm.\n</think>\n\nSure.<tool_call>\n{"name": "lookup", "arguments": {"n": 5}}\n</tool_call>'


def test_analyze_prints_a_table_and_json() -> None:
    result = CliRunner().invoke(main, ["template", "analyze", QWEN3])
    assert result.exit_code == 0, result.output
    table, _, rest = result.output.partition("\n\n")
    assert "reasoning.start" in table and "'<think>'" in table
    rows = dict(line.split(None, 1) for line in table.splitlines())
    assert (rows["reasoning.switch"], rows["reasoning.on"], rows["reasoning.off"]) == (
        "'enable_thinking'",
        "true",
        "false",  # a switch's off value shows, though false
    )
    fmt = json.loads(rest)
    assert fmt["tools"]["syntax"] == "json" and fmt["reasoning"]["end"] == "</think>"
    only = CliRunner().invoke(main, ["template", "analyze", "--json", QWEN3])
    assert json.loads(only.output) == fmt


def test_parse_whole_and_streamed(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS))
    whole = CliRunner().invoke(main, ["template", "parse", QWEN3, "-", "--tools", str(tools)], input=OUTPUT)
    assert whole.exit_code == 0, whole.output
    messages = json.loads(whole.output)["messages"]
    assert [m["channel"] for m in messages] == ["analysis", "final", "commentary"]
    assert messages[0]["thinking"] == "Hm." and messages[1]["content"] == "Sure."
    assert json.loads(messages[2]["tool_call"]["arguments"]) == {"n": 5}
    streamed = CliRunner().invoke(
        main, ["template", "parse", QWEN3, "--stream", "--chunk", "3"], input=OUTPUT
    )
    lines = streamed.output.split("\n{\n", 1)[0].splitlines()
    deltas = [json.loads(line) for line in lines]
    assert "".join(d.get("text", "") for d in deltas if d["kind"] == "content").strip() == "Sure."
    assert any(d["kind"] == "tool_call" and d["name"] == "lookup" for d in deltas)


def test_grammar_names_its_trigger(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS))
    result = CliRunner().invoke(main, ["template", "grammar", QWEN3, "--tools", str(tools)])
    assert result.exit_code == 0, result.output
    assert "lookup" in result.output and "<tool_call>" in result.output
    gbnf = CliRunner().invoke(main, ["template", "grammar", QWEN3, "--tools", str(tools), "--syntax", "gbnf"])
    assert gbnf.exit_code == 0 and "root ::=" in gbnf.output


def test_check_counts_per_template_and_fails_on_a_wrong_case(tmp_path: Path) -> None:
    cases = json.loads(CASES.read_text())["cases"]
    qwq = [c for c in cases if c["template"] == "Qwen-QwQ-32B.jinja"]
    wrong = json.loads(json.dumps(qwq[0]))
    wrong["expected"]["content"] = "something else"
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"cases": [*qwq, wrong]}))
    result = CliRunner().invoke(main, ["template", "check", str(path), "--templates", str(TEMPLATES), "-v"])
    assert result.exit_code == 1
    assert f"{len(qwq)}/{len(qwq) + 1}" in result.output and "Qwen-QwQ-32B.jinja" in result.output
    assert result.output.strip().splitlines()[-1] == f"{len(qwq)} passed, 1 failed"
    path.write_text(json.dumps({"cases": qwq}))
    good = CliRunner().invoke(main, ["template", "check", str(path), "--templates", str(TEMPLATES)])
    assert good.exit_code == 0 and good.output.strip().endswith(f"{len(qwq)} passed, 0 failed")
