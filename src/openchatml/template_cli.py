"""``openchatml template …``: analyse a chat template, parse a model's output with the
parser derived from it, print grammars for its tool calls, and run parse cases.

``analyze FILE`` prints the detected format as a table and as JSON; ``parse FILE
[OUTPUT]`` turns model output into messages (``--stream`` prints the parser's deltas as
JSON lines); ``grammar FILE --tools tools.json`` prints the tool-call grammar;
``check CASES.json [--templates DIR]`` runs every case whole and streamed, prints the pass
count per template and ends with ``N passed, M failed`` (exit status 1 if any failed).

A template that is not valid Jinja, a ``--tools`` or cases file that is not what it should
be, or a file that is not UTF-8 is reported in one line (``error: E-CODE: …``, exit
status 1) by the ``openchatml`` group (:mod:`openchatml.cli_errors`).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from .cli_errors import InputError
from .core.errors import text_position
from .core.interchange import conversation_to_json
from .core.messages import Conversation
from .templates.analysis import analyze
from .templates.check import Checker
from .templates.environment import ChatTemplate
from .templates.format import TemplateFormat
from .templates.grammar import tool_call_grammar
from .templates.grammar.tool_choice import function_tools
from .templates.parsing import KIND_NAMES, ParseOptions, open_parser

_FILE = click.Path(dir_okay=False, exists=True, path_type=Path)


@click.group("template")
def template() -> None:
    """Any model's chat template: analyse it, parse its output, build grammars."""


def _load(path: Path) -> ChatTemplate:
    return ChatTemplate(_text(path, "E-TEMPLATE"), name=path.name)


def _text(path: Path, code: str) -> str:
    """The UTF-8 text of ``path``; raises :class:`InputError` with ``code`` where it is not UTF-8."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{code}: {path}: not UTF-8 (byte {exc.start})") from None


def _json(path: Path, code: str) -> Any:
    """The JSON value in ``path``; raises :class:`InputError` with ``code`` where it is not JSON."""
    text = _text(path, code)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        where = text_position(text, exc.pos)
        raise InputError(f"{code}: {path}: not valid JSON: {exc.msg} (at {where})") from None
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{code}: {path}: not valid JSON: {exc}") from None


def _rows(value: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    """``(field, value)`` rows of a format, nested fields dotted, empty ones left out."""
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, dict):
            yield from _rows(item, f"{name}.")
        elif _shown(key, item, value):
            yield name, json.dumps(item, ensure_ascii=False) if not isinstance(item, str) else repr(item)


def _shown(key: str, item: Any, parent: dict[str, Any]) -> bool:
    """Whether a field says something: not empty, not a default mode; a thinking
    switch's values shown whatever they are (``off: false``, ``off: 0``)."""
    if key in ("on", "off") and parent.get("switch"):
        return item is not None
    if isinstance(item, bool):
        return item
    return item not in ("", (), [], None) and not (key == "mode" and item in ("none", "plain"))


def format_table(fmt: TemplateFormat) -> str:
    """The non-empty fields of ``fmt`` as an aligned two-column table."""
    rows = list(_rows(fmt.to_json()))
    width = max((len(name) for name, _ in rows), default=0)
    return "\n".join(f"{name.ljust(width)}  {value}" for name, value in rows)


@template.command("analyze")
@click.argument("path", type=_FILE, metavar="FILE")
@click.option("--json", "as_json", is_flag=True, help="Print only the JSON.")
@click.option(
    "--response-template",
    "shipped_path",
    type=_FILE,
    help="The model's tokenizer_config.json (or a response_template JSON) to check against the"
    " analysis (default: a tokenizer_config.json beside FILE that has one).",
)
def analyze_command(path: Path, as_json: bool, shipped_path: Path | None) -> None:
    """Print the format detected in a chat template FILE, as a table and as JSON, and
    where the model's own response_template disagrees with it."""
    from .templates.response_template import check_response_template

    fmt = analyze(_load(path))
    if not as_json:
        click.echo(format_table(fmt))
        click.echo()
    click.echo(fmt.dumps())
    beside = path.parent / "tokenizer_config.json"
    config = _json(shipped_path, "E-RESPONSE-TEMPLATE") if shipped_path else None
    if config is None and beside.is_file():
        config = _json(beside, "E-RESPONSE-TEMPLATE")
    shipped = config.get("response_template", config) if isinstance(config, dict) else None
    if shipped_path is not None and not (isinstance(shipped, dict) and "fields" in shipped):
        raise InputError(f"E-RESPONSE-TEMPLATE: {shipped_path}: no response_template in it")
    if isinstance(shipped, dict) and "fields" in shipped:
        problems = check_response_template(shipped, fmt)
        click.echo(f"response_template: {len(problems)} disagreement(s) with the analysis", err=as_json)
        for problem in problems:
            click.echo(f"  {problem}", err=as_json)


@template.command("export")
@click.argument("path", type=_FILE, metavar="FILE")
@click.option(
    "--response-template",
    "output",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    required=True,
    help="Write the format as a Hugging Face response_template (JSON) to this file (- for stdout).",
)
def export_command(path: Path, output: Path) -> None:
    """Export the format derived from a chat template FILE as a response_template that
    transformers' tokenizer.parse_response reads."""
    from .templates.errors import UnsupportedTemplateError
    from .templates.response_template import response_template

    try:
        spec = response_template(analyze(_load(path)))
    except UnsupportedTemplateError as exc:
        raise InputError(str(exc)) from None
    text = json.dumps(spec, indent=2, ensure_ascii=False)
    if str(output) == "-":
        click.echo(text)
    else:
        output.write_text(text + "\n", encoding="utf-8")


def _tools(path: Path | None) -> tuple[Mapping[str, Any], ...]:
    """The tools of a ``--tools`` file: a JSON list of tool objects (or ``{"tools": [...]}``),
    OpenAI-style or bare functions; raises :class:`InputError` (``E-TOOLS``) otherwise."""
    if path is None:
        return ()
    data = _json(path, "E-TOOLS")
    tools = data.get("tools", data) if isinstance(data, dict) else data
    if not isinstance(tools, list) or not all(isinstance(tool, dict) for tool in tools):
        raise InputError(f'E-TOOLS: {path}: expected a JSON list of tool objects (or {{"tools": [...]}})')
    try:
        function_tools(tools)
    except (ValueError, TypeError, AttributeError) as exc:
        raise InputError(f"E-TOOLS: {path}: {exc}") from None
    return tuple(tools)  # OpenAI-style or bare function objects: every consumer takes both


@template.command("parse")
@click.argument("path", type=_FILE, metavar="FILE")
@click.argument("output", type=click.Path(dir_okay=False, allow_dash=True, exists=True), default="-")
@click.option("--tools", "tools_path", type=_FILE, help="JSON list of the tools offered (types arguments).")
@click.option(
    "--prefix", default="", help="Text the prompt already wrote of the message (e.g. '<think>\\n')."
)
@click.option("--keep-reasoning", is_flag=True, help="Leave reasoning in the content (do not extract it).")
@click.option("--stream", is_flag=True, help="Feed the output in chunks and print each delta as a JSON line.")
@click.option(
    "--chunk",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Characters per chunk with --stream.",
)
def parse_command(
    path: Path,
    output: str,
    tools_path: Path | None,
    prefix: str,
    keep_reasoning: bool,
    stream: bool,
    chunk: int,
) -> None:
    """Parse model OUTPUT (a file, or - for stdin) with the parser derived from FILE."""
    tools = _tools(tools_path)
    fmt = analyze(_load(path))
    text = _stdin_text() if output == "-" else _text(Path(output), "E-PARSE")
    options = ParseOptions(tools=tools, extract_reasoning=not keep_reasoning, prefix=prefix)
    parser = open_parser(fmt, options)
    if stream:
        for start in range(0, len(text), max(1, chunk)):
            for delta in parser.feed(text[start : start + max(1, chunk)]):
                click.echo(json.dumps(_plain(delta), ensure_ascii=False))
        for delta in parser.finish():
            click.echo(json.dumps(_plain(delta), ensure_ascii=False))
    else:
        parser.feed(text)
        parser.finish()
    message = parser.message
    for warning in message.warnings:
        click.echo(f"warning: {warning.code}: {warning.message} (at offset {warning.offset})", err=True)
    click.echo(
        json.dumps(
            conversation_to_json(Conversation(tuple(message.to_messages()))), indent=2, ensure_ascii=False
        )
    )


def _stdin_text() -> str:
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"E-PARSE: -: not UTF-8 (byte {exc.start})") from None


def _plain(value: Any) -> Any:
    """A delta or trigger as a dict of its set fields."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {k: v for k, v in dataclasses.asdict(value).items() if v not in ("", -1, None)}
        kind = KIND_NAMES.get(type(value))
        return {"kind": kind, **fields} if kind is not None else fields
    return value


@template.command("grammar")
@click.argument("path", type=_FILE, metavar="FILE")
@click.option("--tools", "tools_path", type=_FILE, required=True, help="JSON list of the tools offered.")
@click.option(
    "--syntax",
    type=click.Choice(["lark", "gbnf"]),
    default="lark",
    show_default=True,
    help="Grammar dialect.",
)
@click.option("--tool-choice", default="auto", show_default=True, help="auto, required, or a function name.")
@click.option("--no-parallel", is_flag=True, help="At most one call.")
def grammar_command(path: Path, tools_path: Path, syntax: str, tool_choice: str, no_parallel: bool) -> None:
    """Print the grammar of FILE's tool calls for the tools in --tools, and its triggers."""
    tools = _tools(tools_path)
    fmt = analyze(_load(path))
    choice: Any = tool_choice
    if tool_choice not in ("auto", "required"):
        choice = {"type": "function", "name": tool_choice}
    try:
        grammar = tool_call_grammar(fmt, tools, tool_choice=choice, parallel=not no_parallel)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--tool-choice") from None
    click.echo(grammar.lark if syntax == "lark" else grammar.gbnf)
    for trigger in grammar.triggers:
        click.echo(f"# trigger: {_plain(trigger)}", err=True)


@template.command("check")
@click.argument("cases_path", type=_FILE, metavar="CASES.json")
@click.option(
    "--templates",
    "templates_dir",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="Folder of the templates the cases name (default: templates/ beside CASES.json, or ../templates).",
)
@click.option("-v", "--verbose", is_flag=True, help="Print what went wrong in each failed case.")
def check_command(cases_path: Path, templates_dir: Path | None, verbose: bool) -> None:
    """Run every case of CASES.json whole and streamed; print passes per template."""
    here = cases_path.resolve().parent
    folder = templates_dir or next(
        (f for f in (here / "templates", here.parent / "templates") if f.is_dir()), here / "templates"
    )
    if not folder.is_dir():
        raise click.BadParameter(f"no templates folder at {folder}", param_hint="--templates")
    results = run_check(Checker(folder), _cases(cases_path))
    failed = 0
    for name, (passed, total, problems) in sorted(results.items()):
        click.echo(f"{passed:4d}/{total:<4d} {name}")
        failed += total - passed
        if verbose:
            for problem in problems:
                click.echo(f"          {problem}")
    passed_all = sum(p for p, _, _ in results.values())
    click.echo(f"{passed_all} passed, {failed} failed")
    if failed:
        raise SystemExit(1)


_CASE_FIELDS = (("template", str), ("input", str), ("expected", dict))


def _cases(path: Path) -> list[dict[str, Any]]:
    """The cases of a cases file; raises :class:`InputError` (``E-CASES``) for a file that
    is not a JSON list of cases (or ``{"cases": [...]}``) or a case without its fields."""
    data = _json(path, "E-CASES")
    cases = data.get("cases") if isinstance(data, dict) else data
    if not isinstance(cases, list):
        raise InputError(f'E-CASES: {path}: expected a JSON list of cases (or {{"cases": [...]}})')
    for i, case in enumerate(cases):
        if not isinstance(case, dict):
            raise InputError(f"E-CASES: {path}: case {i} is not an object")
        for field, kind in _CASE_FIELDS:
            if not isinstance(case.get(field), kind):
                raise InputError(f"E-CASES: {path}: case {i} needs {field!r} ({kind.__name__})")
    return cases


def run_check(checker: Checker, cases: Sequence[Mapping[str, Any]]) -> dict[str, tuple[int, int, list[str]]]:
    """Template → (passed, total, problems) over ``cases``."""
    tally: dict[str, list[Any]] = defaultdict(lambda: [0, 0, []])
    for case in cases:
        result = checker.run(case)
        entry = tally[result.template]
        entry[1] += 1
        if result.passed:
            entry[0] += 1
        else:
            entry[2] += [f"case {result.id}: {p}" for p in result.problems]
    return {name: (p, t, probs) for name, (p, t, probs) in tally.items()}
