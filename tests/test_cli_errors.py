"""Every ``openchatml`` command fails in one line on stderr, without a traceback, with the
exit status docs/cli.md gives: 1 for bad input, 2 for a usage error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from openchatml.cli import main

QWEN3 = str(Path(__file__).resolve().parent / "templates" / "data" / "templates" / "Qwen-Qwen3-0.6B.jinja")
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


def one_line_failure(result: Result, status: int) -> str:
    """The one error line of a failed command (checked: its status, nothing else on stderr)."""
    assert result.exit_code == status, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def resolved(args: list[str], files: dict[str, str]) -> list[str]:
    """``args`` with each ``{NAME}`` made the path of file ``NAME``."""
    return [files[arg[1:-1]] if arg.startswith("{") and arg.endswith("}") else arg for arg in args]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    """Named input files, good and bad, in a temporary folder."""
    data: dict[str, str | bytes] = {
        "bad.json": '{"messages": [',
        "chat.txt": "<|start|>user<|message|>hi<|end|>",
        "latin.txt": b"<|start|>user<|message|>h\xe9<|end|>",
        "bad.jinja": "{% if %}",
        "latin.jinja": b"{{ '\xe9' }}",
        "tools.json": json.dumps(TOOLS),
        "nameless.json": '[{"type": "function", "function": {}}]',
        "not-a-list.json": '{"tools": 5}',
        "numbers.json": "[1, 2]",
        "cases-bad.json": '[{"template": "x.jinja"}]',
        "cases-none.json": '{"nothing": []}',
    }
    out: dict[str, str] = {}
    for name, body in data.items():
        path = tmp_path / name
        if isinstance(body, bytes):
            path.write_bytes(body)
        else:
            path.write_text(body, encoding="utf-8")
        out[name] = str(path)
    (tmp_path / "folder").mkdir()
    out["folder"] = str(tmp_path / "folder")
    out["missing"] = str(tmp_path / "missing.txt")
    return out


BAD_INPUT = [
    (["render", "{bad.json}"], "error: E-INTERCHANGE: $: not valid JSON: "),
    (["render", "{chat.txt}"], "error: E-INTERCHANGE: $: expected a JSON conversation"),
    (["render", "{latin.txt}"], "error: E-PARSE: input is not UTF-8 (byte 25)"),
    (["parse", "{bad.json}"], "error: E-PARSE-DOCUMENT-HEADER: "),
    (["parse", "{latin.txt}"], "error: E-PARSE: input is not UTF-8 (byte 25)"),
    (["parse", "{latin.txt}", "--stream"], "error: E-PARSE: input is not UTF-8 (byte 25)"),
    (["convert", "{bad.json}", "--to", "ocm"], "error: E-INTERCHANGE: $: not valid JSON: "),
    (["convert", "{latin.txt}", "--to", "json"], "error: E-PARSE: input is not UTF-8"),
    (["template", "analyze", "{bad.jinja}"], "error: E-TEMPLATE-SYNTAX: bad.jinja: Expected an expression"),
    (["template", "analyze", "{latin.jinja}"], "error: E-TEMPLATE: "),
    (["template", "parse", "{bad.jinja}", "{chat.txt}"], "error: E-TEMPLATE-SYNTAX: "),
    (["template", "parse", QWEN3, "{latin.txt}"], "error: E-PARSE: "),
    (["template", "parse", QWEN3, "{chat.txt}", "--tools", "{bad.json}"], "error: E-TOOLS: "),
    (["template", "parse", QWEN3, "{chat.txt}", "--tools", "{numbers.json}"], "error: E-TOOLS: "),
    (["template", "grammar", "{bad.jinja}", "--tools", "{tools.json}"], "error: E-TEMPLATE-SYNTAX: "),
    (["template", "grammar", QWEN3, "--tools", "{bad.json}"], "error: E-TOOLS: "),
    (["template", "grammar", QWEN3, "--tools", "{not-a-list.json}"], "error: E-TOOLS: "),
    (["template", "grammar", QWEN3, "--tools", "{nameless.json}"], "error: E-TOOLS: "),
    (["template", "check", "{bad.json}", "--templates", "{folder}"], "error: E-CASES: "),
    (["template", "check", "{cases-bad.json}", "--templates", "{folder}"], "error: E-CASES: "),
    (["template", "check", "{cases-none.json}", "--templates", "{folder}"], "error: E-CASES: "),
]


@pytest.mark.parametrize(("args", "start"), BAD_INPUT, ids=[" ".join(a[:3]) for a, _ in BAD_INPUT])
def test_bad_input_is_one_line_and_status_1(files: dict[str, str], args: list[str], start: str) -> None:
    result = CliRunner().invoke(main, resolved(args, files))
    line = one_line_failure(result, 1)
    assert line.startswith(start), line
    assert result.stdout == "" or args[-1] == "--stream"


USAGE = [
    ["render", "{missing}"],
    ["render", "{folder}"],
    ["parse", "{missing}"],
    ["parse", "-", "--events", "ocm"],
    ["validate", "{missing}"],
    ["convert", "{chat.txt}"],
    ["convert", "{chat.txt}", "--to", "yaml"],
    ["template", "analyze", "{missing}"],
    ["template", "parse", QWEN3, "{chat.txt}", "--stream", "--chunk", "0"],
    ["template", "grammar", QWEN3],
    ["template", "grammar", QWEN3, "--tools", "{tools.json}", "--tool-choice", "nope"],
    ["template", "check", "{cases-bad.json}"],
    ["template", "frobnicate"],
    ["serve", "--port", "eighty"],
    ["serve", "--tokenizer", "x"],
    ["serve", "--mcp-server", "no-equals-sign"],
    ["frobnicate"],
    ["--bogus"],
]


@pytest.mark.parametrize("args", USAGE, ids=[" ".join(a[:3]) for a in USAGE])
def test_usage_errors_are_one_line_and_status_2(files: dict[str, str], args: list[str]) -> None:
    result = CliRunner().invoke(main, resolved(args, files), input="")
    line = one_line_failure(result, 2)
    assert line.endswith("--help')"), line


def test_usage_error_names_the_command_and_the_problem(files: dict[str, str]) -> None:
    result = CliRunner().invoke(main, ["render", files["missing"]], prog_name="openchatml")
    assert result.stderr == (
        f"error: Invalid value for 'FILE|-': File '{files['missing']}' does not exist "
        "(see 'openchatml render --help')\n"
    )
    grammar = CliRunner().invoke(
        main, ["template", "grammar", QWEN3, "--tools", files["tools.json"], "--tool-choice", "nope"]
    )
    assert "--tool-choice" in grammar.stderr and "'nope'" in grammar.stderr


def test_a_group_without_a_command_prints_its_help() -> None:
    result = CliRunner().invoke(main, ["template"])
    assert result.exit_code == 2
    assert "Commands:" in result.output and "analyze" in result.output


def test_parse_of_a_completion_hints_at_role() -> None:
    completion = "<|channel|>final<|message|>4.<|return|>"
    for extra in ([], ["--stream"]):
        result = CliRunner().invoke(main, ["parse", "-", *extra], input=completion)
        line = one_line_failure(result, 1)
        assert line.startswith("error: E-PARSE-UNEXPECTED-TOKEN: <|channel|> without <|start|>")
        assert line.endswith(
            "; hint: a completion that begins after its <|start|>ROLE needs --role ROLE (--role assistant)"
        )
    assert CliRunner().invoke(main, ["parse", "-", "--role", "assistant"], input=completion).exit_code == 0


def test_parse_of_json_hints_at_render() -> None:
    result = CliRunner().invoke(main, ["parse", "-"], input='{"messages": []}')
    line = one_line_failure(result, 1)
    assert line.endswith(
        "; hint: the input is a JSON conversation: `openchatml render` or `convert` reads it"
    )


def test_no_hint_where_the_error_is_elsewhere() -> None:
    text = "<|start|>user<|message|>hi<|end|><|channel|>final<|message|>4.<|return|>"
    result = CliRunner().invoke(main, ["parse", "-"], input=text)
    line = one_line_failure(result, 1)
    assert "hint" not in line
