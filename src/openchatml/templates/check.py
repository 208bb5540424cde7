"""Parse cases run against the parsers derived from their templates.

A case file (the format of ``template-parse-cases.json``) holds ``{"cases": [...]}``, each
case with ``template`` (a file name in the templates folder), ``input`` (raw model
output), ``options`` (``tools``, ``reasoning_format``, ``enable_thinking``,
``add_generation_prompt``, ``continue_final_message``, ``messages``, ``is_partial`` …) and
``expected`` (``content``, ``reasoning_content``, ``tool_calls`` of ``{name, arguments,
id}``). :func:`run_case` parses the input whole and streamed one character at a time and
says what differs: content and reasoning are compared after stripping surrounding
whitespace, tool calls by name and JSON-equal arguments (ids where the case gives one).
Streamed, the text reported so far must stay a prefix of the final text at every step
(no marker fragment ever shown and taken back), and the deltas must add up to the result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .analysis import analyze
from .environment import ChatTemplate
from .errors import TemplateError
from .format import ReasoningMode, TemplateFormat
from .parsing import (
    ContentText,
    Delta,
    OutputParser,
    ParsedMessage,
    ParseOptions,
    ReasoningText,
    ToolArgumentsText,
    ToolCall,
    ToolCallStarted,
    open_parser,
)
from .prompt import output_prefix

DEFAULT_MESSAGES: tuple[Mapping[str, Any], ...] = ({"role": "user", "content": "Hello"},)
"""The conversation a case without ``messages`` is taken to continue."""


@dataclass(frozen=True, slots=True)
class CaseResult:
    """One case: its id and template, and what went wrong (nothing when it passed)."""

    id: Any
    template: str
    problems: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """No problem found."""
        return not self.problems


@dataclass
class Checker:
    """Runs cases over the templates in ``templates``; compiles and analyses each once."""

    templates: Path
    _formats: dict[str, TemplateFormat | TemplateError] = field(default_factory=dict)
    _compiled: dict[str, ChatTemplate] = field(default_factory=dict)

    def template(self, name: str) -> ChatTemplate:
        """The compiled template file ``name``."""
        if name not in self._compiled:
            path = self.templates / name
            self._compiled[name] = ChatTemplate(path.read_text(encoding="utf-8"), name=name)
        return self._compiled[name]

    def format(self, name: str) -> TemplateFormat:
        """The analysed format of template ``name`` (raises its :class:`TemplateError`)."""
        if name not in self._formats:
            try:
                self._formats[name] = analyze(self.template(name))
            except TemplateError as exc:
                self._formats[name] = exc
        found = self._formats[name]
        if isinstance(found, TemplateError):
            raise found
        return found

    def run(self, case: Mapping[str, Any]) -> CaseResult:
        """Parse one case whole and streamed; the problems found."""
        name = str(case["template"])
        try:
            parser_of = self._parser_factory(case)
        except (TemplateError, OSError) as exc:
            return CaseResult(case.get("id"), name, (f"cannot set up: {exc}",))
        problems: list[str] = []
        whole = parser_of()
        whole.feed(str(case["input"]))
        whole.finish()
        problems += [f"whole: {p}" for p in compare(whole.message, case["expected"])]
        problems += [f"streamed: {p}" for p in _streamed(parser_of, str(case["input"]), whole.message)]
        return CaseResult(case.get("id"), name, tuple(problems))

    def _parser_factory(self, case: Mapping[str, Any]) -> Any:
        name = str(case["template"])
        options: Mapping[str, Any] = case.get("options") or {}
        template = self.template(name)
        fmt = self.format(name)
        tools = list(options.get("tools") or [])
        messages = list(options.get("messages") or DEFAULT_MESSAGES)
        mode = str(options.get("continue_final_message") or "none")
        continuing: bool | Literal["content", "reasoning"] = False
        if mode in ("content", "reasoning"):
            continuing = "content" if mode == "content" else "reasoning"
        elif mode != "none":
            continuing = True
        variables: dict[str, Any] = {}
        if options.get("enable_thinking") is not None:
            variables["enable_thinking"] = bool(options["enable_thinking"])
        markers = None
        if fmt.reasoning.mode is not ReasoningMode.NONE:
            markers = (fmt.reasoning.start, fmt.reasoning.end)
        prefix = output_prefix(
            template,
            messages,
            tools=tools or None,
            add_generation_prompt=bool(options.get("add_generation_prompt", True)) and not continuing,
            continue_final_message=continuing,
            reasoning_markers=markers,
            **variables,
        )
        parse_options = ParseOptions(
            tools=tuple(tools),
            extract_reasoning=str(options.get("reasoning_format") or "auto") != "none",
            prefix=prefix,
            partial=bool(options.get("is_partial")),
            json_schema=options.get("json_schema") or None,
        )

        def make() -> OutputParser:
            return open_parser(fmt, parse_options)

        return make


def _streamed(make: Any, text: str, whole: ParsedMessage) -> list[str]:
    parser: OutputParser = make()
    start = parser.message  # what the prefix holds: never part of a delta
    deltas: list[Delta] = []
    problems: list[str] = []
    for index, char in enumerate(text):
        deltas += parser.feed(char)
        now = parser.message
        for label, shown, final in (
            ("content", now.content, whole.content),
            ("reasoning", now.reasoning, whole.reasoning),
        ):
            if not final.startswith(shown):
                problems.append(
                    f"after {index + 1} characters the {label} {shown!r} is not a prefix of {final!r}"
                )
                return problems
    deltas += parser.finish()
    if parser.message != whole:
        problems.append(f"streamed result {_show(parser.message)} differs from whole {_show(whole)}")
    problems += _deltas_add_up(start, deltas, parser.message)
    return problems


def _deltas_add_up(start: ParsedMessage, deltas: Sequence[Delta], final: ParsedMessage) -> list[str]:
    """Whether the deltas, after what the prefix held, make up ``final``."""
    problems = []
    for kind, text_delta, before, after in (
        ("content", ContentText, start.content, final.content),
        ("reasoning", ReasoningText, start.reasoning, final.reasoning),
    ):
        joined = before + "".join(d.text for d in deltas if isinstance(d, text_delta))
        if joined != after:
            problems.append(f"the {kind} deltas add up to {joined!r}, not {after!r}")
    arguments: dict[int, list[str]] = {}
    for delta in deltas:
        if isinstance(delta, ToolCallStarted):
            arguments.setdefault(delta.index, [])
        elif isinstance(delta, ToolArgumentsText):
            arguments.setdefault(delta.index, []).append(delta.text)
    for index, call in enumerate(final.tool_calls):
        if index >= len(start.tool_calls) and "".join(arguments.get(index, [])) != call.arguments:
            joined = "".join(arguments.get(index, []))
            problems.append(f"call {index}: argument deltas add up to {joined!r}, not {call.arguments!r}")
    return problems


def compare(got: ParsedMessage, expected: Mapping[str, Any]) -> list[str]:
    """What differs between a parse and a case's expected message."""
    problems = []
    want_content = str(expected.get("content") or "").strip()
    if got.content.strip() != want_content:
        problems.append(f"content {got.content.strip()!r} != {want_content!r}")
    want_reasoning = str(expected.get("reasoning_content") or "").strip()
    if got.reasoning.strip() != want_reasoning:
        problems.append(f"reasoning {got.reasoning.strip()!r} != {want_reasoning!r}")
    want_calls: Sequence[Mapping[str, Any]] = expected.get("tool_calls") or []
    if len(got.tool_calls) != len(want_calls):
        problems.append(f"{len(got.tool_calls)} tool calls != {len(want_calls)}: {_calls(got.tool_calls)}")
        return problems
    for index, (call, want) in enumerate(zip(got.tool_calls, want_calls, strict=True)):
        if call.name != want.get("name"):
            problems.append(f"call {index}: name {call.name!r} != {want.get('name')!r}")
        if not _same_arguments(call.arguments, want.get("arguments")):
            problems.append(f"call {index}: arguments {call.arguments!r} != {want.get('arguments')!r}")
        if want.get("id") and call.id != want["id"]:
            problems.append(f"call {index}: id {call.id!r} != {want['id']!r}")
    return problems


def _same_arguments(got: str, want: Any) -> bool:
    wanted: str = want if isinstance(want, str) else json.dumps(want)
    try:
        same: bool = json.loads(got) == json.loads(wanted)
    except ValueError:
        return got.strip() == wanted.strip()
    return same


def _calls(calls: Sequence[ToolCall]) -> str:
    return json.dumps([[c.name, c.arguments, c.id] for c in calls], ensure_ascii=False)


def _show(message: ParsedMessage) -> str:
    return json.dumps(
        {"content": message.content, "reasoning": message.reasoning, "calls": _calls(message.tool_calls)},
        ensure_ascii=False,
    )


def load_cases(path: Path) -> list[dict[str, Any]]:
    """The cases of a case file (``{"cases": [...]}`` or a bare list)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    cases = data["cases"] if isinstance(data, dict) else data
    if not isinstance(cases, list):
        raise ValueError(f"{path}: no list of cases")
    return cases
