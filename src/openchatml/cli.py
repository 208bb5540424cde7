"""The ``openchatml`` command: render, parse, validate and convert conversations.

``render`` turns a JSON conversation (see :mod:`openchatml.core.interchange`) into Harmony or
OpenChatML 2.2 text or token ids; ``parse`` reads text or token ids back into JSON
messages (or streams the parser's events, or the OCM §9 events); ``validate`` lists every
problem in one or more files; ``convert`` moves between Harmony text, OCM 2.2 text and JSON,
keeping each message's terminator (``--history``: every message ended as history).

Every typed :class:`~openchatml.core.errors.OCMError` is printed as
``error: E-CODE: message (at line L, column C)`` on stderr with exit status 1; usage
errors exit with 2 (:mod:`openchatml.cli_errors`, for every command of the group).
"""

from __future__ import annotations

import codecs
import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any, Literal

import click

from .cli_errors import CommandGroup, InputError, one_line
from .core.calls import check_tool_call, declared_namespaces
from .core.conformance import conversation_violations
from .core.errors import OCMError, ParseError, Position, UnexpectedTokenError, text_position
from .core.events import Event, MessageDone, Repaired
from .core.interchange import (
    InterchangeError,
    conversation_from_json_text,
    conversation_to_json,
    event_to_json,
    messages_from_json,
)
from .core.messages import Conversation, Role
from .core.ocm_events import OcmEventStream
from .core.parse import StreamParser
from .core.render import CoTPolicy, Profile, RenderConfig, Renderer
from .core.tokens import ControlToken

InputKind = Literal["json", "tokens", "text"]

_ROLES = [r.value for r in Role]
_PROFILES = [p.value for p in Profile]
_SOURCE = click.Path(dir_okay=False, allow_dash=True, exists=True)


# --- errors -----------------------------------------------------------------------------


def _where(position: Position | None) -> str:
    return f" (at {position})" if position is not None else ""


def _warn(code: str, detail: str, position: Position | None) -> None:
    click.echo(f"warning: {code}: {one_line(detail)}{_where(position)}", err=True)


# --- input ------------------------------------------------------------------------------


@contextmanager
def _opened(path: str) -> Iterator[IO[bytes]]:
    """``path`` opened for reading bytes; ``-`` is standard input."""
    if path == "-":
        yield sys.stdin.buffer
    else:
        with open(path, "rb") as stream:
            yield stream


def _decode(data: bytes) -> str:
    """``data`` as UTF-8 text; raises :class:`ParseError` at the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        good = data[: exc.start].decode("utf-8")
        where = text_position(good, len(good))
        raise ParseError(f"input is not UTF-8 (byte {exc.start})", position=where) from None


def _read(path: str) -> str:
    with _opened(path) as stream:
        return _decode(stream.read())


def _detect(text: str) -> InputKind:
    """What ``text`` holds: a JSON conversation, token ids, or Harmony / OCM text."""
    head = text.lstrip()[:64]
    if head.startswith("{"):
        return "json"
    if head.startswith("["):
        rest = head[1:].lstrip()
        return "tokens" if not rest or rest[0] in "-]0123456789" else "json"
    if head[:1].isdigit() and re.fullmatch(r"[\s\d]+", text) is not None:
        return "tokens"
    return "text"


_TOKEN_SEP = re.compile(r"[\s,\[\]]+")


def _token_ids(text: str) -> list[int]:
    """Token ids from a JSON array or a whitespace-separated list."""
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            value = json.loads(stripped)
        except (ValueError, RecursionError) as exc:
            raise ParseError(f"token input is not a JSON array of integers: {exc}") from None
        if not isinstance(value, list):
            raise ParseError("token input is not a JSON array of integers")
        for i, item in enumerate(value):
            if not isinstance(item, int) or isinstance(item, bool):
                raise ParseError(
                    f"token input: expected an integer, not {item!r}",
                    position=Position(i, unit="token"),
                )
        return value
    return _words_to_ids(stripped.split(), 0)


_INTEGER = re.compile(r"-?[0-9]{1,20}")


def _words_to_ids(words: Iterable[str], first: int) -> list[int]:
    """Integers from decimal ``words``; ``first`` is the token index of the first one."""
    out: list[int] = []
    for i, word in enumerate(words):
        if _INTEGER.fullmatch(word) is None:
            raise ParseError(
                f"token input: expected an integer, not {word[:40]!r}",
                position=Position(first + i, unit="token"),
            )
        out.append(int(word))
    return out


def _load_conversation(text: str) -> Conversation:
    """A JSON conversation from ``text`` (or a hint when it holds something else)."""
    kind = _detect(text)
    if kind == "text" and "<|" in text:
        raise InterchangeError(
            "$: expected a JSON conversation, not Harmony/OCM text (see `openchatml convert`)"
        )
    return conversation_from_json_text(text)


def _parser(role: str | None, lenient: bool, profile: str) -> StreamParser:
    return StreamParser(
        None if role is None else Role(role),
        strict=not lenient,
        require_channels=profile == Profile.HARMONY.value,
    )


def _parse_all(
    text: str, kind: InputKind, parser: StreamParser
) -> tuple[Conversation, list[ControlToken | None]]:
    """The conversation in ``text`` (token ids or text), and the terminator each of its
    messages had (``None`` where the input stopped without one)."""
    events = parser.feed_tokens(_token_ids(text)) if kind == "tokens" else parser.feed_text(text)
    events += parser.close()
    endings = [event.terminator for event in events if isinstance(event, MessageDone)]
    if len(endings) != len(parser.messages):
        endings = [None] * len(parser.messages)
    return Conversation(tuple(parser.messages), parser.transcript_header), endings


def _dump(value: Any, compact: bool) -> str:
    if compact:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(value, ensure_ascii=False, indent=2)


# --- commands ---------------------------------------------------------------------------


@click.group(cls=CommandGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="openchatml", prog_name="openchatml")
def main() -> None:
    """Render, parse, validate and convert Harmony and OpenChatML 2.2 conversations."""


@main.command()
@click.argument("source", type=_SOURCE, metavar="FILE|-")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "tokens"]),
    default="text",
    show_default=True,
    help="Text, or token ids as a JSON array on one line.",
)
@click.option(
    "--profile",
    type=click.Choice(_PROFILES),
    default="harmony",
    show_default=True,
    help="Header layout: Harmony's (no call_id or intent) or OCM 2.2's.",
)
@click.option(
    "--for",
    "purpose",
    type=click.Choice(["history", "completion", "training"]),
    default="history",
    show_default=True,
    help="history: every message ended; completion: add <|start|>ROLE; training: a final "
    "answer at the end ends in <|return|>.",
)
@click.option(
    "--next-role",
    type=click.Choice(_ROLES),
    default=None,
    help="The role that opens the completion (--for completion only).  [default: assistant]",
)
@click.option(
    "--cot",
    type=click.Choice([c.value for c in CoTPolicy]),
    default="drop_finished",
    show_default=True,
    help="Which earlier analysis messages to keep.",
)
def render(source: str, fmt: str, profile: str, purpose: str, next_role: str | None, cot: str) -> None:
    """Render a JSON conversation to Harmony / OCM 2.2 text or token ids."""
    if next_role is not None and purpose != "completion":
        raise click.UsageError("--next-role applies only with --for completion")
    conversation = _load_conversation(_read(source))
    renderer = Renderer(RenderConfig(profile=Profile(profile), cot=CoTPolicy(cot)))
    role = Role(next_role or "assistant")
    if fmt == "tokens":
        if purpose == "completion":
            ids = renderer.completion_tokens(conversation, role)
        elif purpose == "training":
            ids = renderer.training_tokens(conversation)
        else:
            ids = renderer.tokens(conversation)
        click.echo(json.dumps(ids))
        return
    if purpose == "completion":
        text = renderer.completion_text(conversation, role)
    elif purpose == "training":
        text = renderer.training_text(conversation)
    else:
        text = renderer.text(conversation)
    click.echo(text)


@main.command()
@click.argument("source", type=_SOURCE, metavar="FILE|-")
@click.option("--tokens", "as_tokens", is_flag=True, help="Read token ids (JSON array or whitespace list).")
@click.option(
    "--role", type=click.Choice(_ROLES), default=None, help="Role of a completion that starts mid-header."
)
@click.option("--lenient", is_flag=True, help="Repair malformed input and report each repair on stderr.")
@click.option("--stream", is_flag=True, help="Print the parser's events as JSON lines as they come.")
@click.option(
    "--events",
    "event_kind",
    type=click.Choice(["parser", "ocm"]),
    default="parser",
    show_default=True,
    help="With --stream: the parser's events, or the OCM §9 events (response.delta, response.delta.flush).",
)
@click.option("--compact", is_flag=True, help="One line of JSON instead of indented JSON.")
@click.option(
    "--profile",
    type=click.Choice(_PROFILES),
    default="ocm",
    show_default=True,
    help="harmony: every assistant message must name a channel.",
)
def parse(
    source: str,
    as_tokens: bool,
    role: str | None,
    lenient: bool,
    stream: bool,
    event_kind: str,
    compact: bool,
    profile: str,
) -> None:
    """Parse Harmony / OCM 2.2 text (or token ids) into JSON messages."""
    if event_kind != "parser" and not stream:
        raise click.UsageError("--events needs --stream")
    parser = _parser(role, lenient, profile)
    text = ""
    try:
        if stream:
            _parse_stream(source, as_tokens, parser, _ocm_emitter() if event_kind == "ocm" else _emit)
            return
        text = _read(source)
        conversation, _ = _parse_all(text, "tokens" if as_tokens else "text", parser)
    except OCMError as exc:
        if _starts_mid_header(exc, parser):
            raise InputError.of(exc, hint=_COMPLETION_HINT) from None
        if not as_tokens and _detect(text) == "json":
            raise InputError.of(exc, hint=_JSON_HINT) from None
        raise
    for repair in parser.repairs:
        _warn(repair.code, repair.detail, repair.position)
    click.echo(_dump(conversation_to_json(conversation), compact))


_COMPLETION_HINT = "a completion that begins after its <|start|>ROLE needs --role ROLE (--role assistant)"
_JSON_HINT = "the input is a JSON conversation: `openchatml render` or `convert` reads it"


def _starts_mid_header(error: OCMError, parser: StreamParser) -> bool:
    """Whether ``error`` is a header token before any ``<|start|>``: the input looks like a
    completion whose ``<|start|>ROLE`` was in the prompt."""
    return (
        isinstance(error, UnexpectedTokenError)
        and "<|start|>" in error.message
        and not parser.messages
        and parser.current_header is None
    )


def _emit(events: Iterable[Event]) -> None:
    for event in events:
        click.echo(json.dumps(event_to_json(event), ensure_ascii=False))


def _ocm_emitter() -> Callable[[Iterable[Event]], None]:
    """An emitter that prints the OCM §9 events the parser's events give, one JSON line each
    (each repair of the lenient parser goes to stderr)."""
    ocm = OcmEventStream()

    def emit(events: Iterable[Event]) -> None:
        for event in events:
            if isinstance(event, Repaired):
                _warn(event.code, event.detail, event.position)
            for shown in ocm.feed(event):
                click.echo(json.dumps(shown.to_dict(), ensure_ascii=False))

    return emit


def _parse_stream(
    source: str, as_tokens: bool, parser: StreamParser, emit: Callable[[Iterable[Event]], None] = _emit
) -> None:
    """Feed ``source`` line by line (text) or id by id (tokens), printing events as they come."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    consumed = 0
    fed = 0
    try:
        with _opened(source) as stream:
            for raw in stream:
                try:
                    line = decoder.decode(raw)
                except UnicodeDecodeError as exc:
                    byte = consumed + exc.start
                    raise ParseError(f"input is not UTF-8 (byte {byte})") from None
                consumed += len(raw)
                if as_tokens:
                    for word in _TOKEN_SEP.split(line):
                        if word:
                            emit(parser.feed_tokens(_words_to_ids([word], fed)))
                            fed += 1
                else:
                    emit(parser.feed_text(line))
            try:
                rest = decoder.decode(b"", final=True)
            except UnicodeDecodeError:
                raise ParseError(f"input is not UTF-8 (byte {consumed})") from None
            if rest and not as_tokens:
                emit(parser.feed_text(rest))
        emit(parser.close())
    except OCMError:
        emit(parser.events())
        raise


@dataclass(frozen=True, slots=True)
class _Problem:
    code: str
    message: str
    position: Position | None

    def line(self, name: str) -> str:
        """``NAME:LINE:COL: E-CODE message`` (``NAME:token N: …`` for token input)."""
        pos = self.position
        what = f"{self.code} {one_line(self.message)}"
        if pos is None:
            return f"{name}: {what}"
        if pos.unit == "token":
            return f"{name}:token {pos.offset}: {what}"
        if pos.line is not None:
            return f"{name}:{pos.line}:{pos.column}: {what}"
        return f"{name}:offset {pos.offset}: {what}"


def _json_problems(text: str, profile: str) -> list[_Problem]:
    """The first format error of a JSON conversation, or else, message by message, every
    OCM 2.2 rule it breaks (``ocm`` profile: call ids, routing, channels, intents) and every
    tool call that does not match the tools it declares (checked when it declares any)."""
    try:
        conversation = conversation_from_json_text(text)
        Renderer(RenderConfig(profile=Profile(profile), cot=CoTPolicy.KEEP)).text(conversation)
    except OCMError as exc:
        return [_Problem(exc.code, exc.message, exc.position)]
    raw = json.loads(text)
    items, base = (raw, "") if isinstance(raw, list) else (raw["messages"], "messages")
    paths = [f"{base}[{i}]" for i, item in enumerate(items) for _ in messages_from_json(item)]
    found: list[tuple[int, _Problem]] = []
    if profile == Profile.OCM.value:
        for index, violation in conversation_violations(conversation):
            found.append((index, _Problem(violation.error.code, f"{paths[index]}: {violation.detail}", None)))
    namespaces = declared_namespaces(conversation)
    for index, message in enumerate(conversation):
        if namespaces and message.is_tool_call:
            try:
                check_tool_call(message, namespaces)
            except OCMError as exc:
                found.append((index, _Problem(exc.code, f"{paths[index]}: {exc.message}", None)))
    return [problem for _, problem in sorted(found, key=lambda pair: pair[0])]


def _problems(text: str, profile: str, role: str | None = None) -> list[_Problem]:
    """Every problem in ``text``: each lenient repair, and the strict error if no repair names it.

    The profile's rules apply (``ocm``: the MUSTs of OpenChatML 2.2, a YAML header on a text
    transcript; ``harmony``: a channel on every assistant message). ``role``: ``text`` is a
    completion that starts mid-header (no YAML header; it ends in a stop token).
    """
    kind = _detect(text)
    if kind == "json":
        return _json_problems(text, profile)
    try:
        ids = _token_ids(text) if kind == "tokens" else None
    except OCMError as exc:
        return [_Problem(exc.code, exc.message, exc.position)]

    def run(lenient: bool) -> StreamParser:
        parser = StreamParser(
            None if role is None else Role(role), strict=not lenient, profile=Profile(profile)
        )
        if ids is not None:
            parser.feed_tokens(ids)
        else:
            parser.feed_text(text)
        parser.close()
        return parser

    found = [_Problem(r.code, r.detail, r.position) for r in run(lenient=True).repairs]
    try:
        run(lenient=False)
    except OCMError as exc:
        if not any(p.code == exc.code and exc.position in (None, p.position) for p in found):
            found.append(_Problem(exc.code, exc.message, exc.position))
    big = sys.maxsize
    return sorted(found, key=lambda p: big if p.position is None else p.position.offset)


@main.command()
@click.argument("files", nargs=-1, required=True, type=_SOURCE, metavar="FILE...")
@click.option(
    "--profile",
    type=click.Choice(_PROFILES),
    default="ocm",
    show_default=True,
    help="ocm: the MUSTs of OpenChatML 2.2 (call_id, routing, channels, intent, a YAML header on "
    "a text transcript); harmony: every assistant message must name a channel.",
)
@click.option(
    "--role",
    type=click.Choice(_ROLES),
    default=None,
    help="The files are completions that start mid-header, after <|start|>ROLE: no YAML header; "
    "with --profile ocm each must end in <|return|> or <|call|>.",
)
def validate(files: tuple[str, ...], profile: str, role: str | None) -> None:
    """Check files (text, token ids or JSON); print FILE: ok, or FILE:LINE:COL: E-CODE message per problem."""
    failed = False
    for name in files:
        try:
            problems = _problems(_read(name), profile, role)
        except OCMError as exc:
            problems = [_Problem(exc.code, exc.message, exc.position)]
        if problems:
            failed = True
            for problem in problems:
                click.echo(problem.line(name))
        else:
            click.echo(f"{name}: ok")
    if failed:
        sys.exit(1)


@main.command()
@click.argument("source", type=_SOURCE, metavar="FILE|-")
@click.option("--to", "target", type=click.Choice(["harmony", "ocm", "json"]), required=True)
@click.option("--lenient", is_flag=True, help="Repair malformed text input (repairs reported on stderr).")
@click.option("--compact", is_flag=True, help="One line of JSON (with --to json).")
@click.option(
    "--history",
    is_flag=True,
    help="Write every message as history: a final answer's <|return|> becomes <|end|> "
    "(otherwise each message keeps the terminator it had).",
)
def convert(source: str, target: str, lenient: bool, compact: bool, history: bool) -> None:
    """Convert between Harmony text, OCM 2.2 text and JSON (input kind detected)."""
    text = _read(source)
    kind = _detect(text)
    if kind == "json":
        conversation = conversation_from_json_text(text)
        endings = _json_endings(conversation)
    else:
        parser = _parser(None, lenient, "ocm")
        conversation, endings = _parse_all(text, kind, parser)
        for repair in parser.repairs:
            _warn(repair.code, repair.detail, repair.position)
    if target == "json":
        click.echo(_dump(conversation_to_json(conversation), compact))
        return
    profile = Profile(target)
    separator = "\n" if profile is Profile.OCM else ""
    renderer = Renderer(RenderConfig(profile=profile, cot=CoTPolicy.KEEP, separator=separator))
    if history:
        endings = [None] * len(conversation.messages)
    click.echo(_render_ending(renderer, conversation, endings, separator))


def _json_endings(conversation: Conversation) -> list[ControlToken | None]:
    """The terminators of a JSON conversation's messages, which JSON does not carry: a final
    answer at the end ends in ``<|return|>`` (the stop token of the turn), every other
    message as history (``None``)."""
    endings: list[ControlToken | None] = [None] * len(conversation.messages)
    last = conversation.messages[-1] if conversation.messages else None
    if (
        last is not None
        and last.author.role is Role.ASSISTANT
        and last.channel == "final"
        and not last.recipient
    ):
        endings[-1] = ControlToken.RETURN
    return endings


_TERMINATORS = (ControlToken.END.value, ControlToken.CALL.value, ControlToken.RETURN.value)


def _render_ending(
    renderer: Renderer,
    conversation: Conversation,
    endings: Sequence[ControlToken | None],
    separator: str,
) -> str:
    """The text of ``conversation`` (its YAML header, then its messages joined by
    ``separator``) in which message ``i`` ends in ``endings[i]`` (``None``: as history)."""
    has_tools = conversation.has_function_tools
    texts: list[str] = []
    for message, ending in zip(conversation.messages, endings, strict=True):
        text = renderer.message_text(message, has_function_tools=has_tools)
        if ending is not None:
            rendered = next(t for t in _TERMINATORS if text.endswith(t))
            text = text[: -len(rendered)] + ending.value
        texts.append(text)
    head = renderer.text(Conversation((), conversation.header))
    return head + separator.join(texts)


__all__ = ["main"]


def _add_commands() -> None:
    from .serve_cli import serve
    from .template_cli import template
    from .training_cli import training

    main.add_command(serve)
    main.add_command(template)
    main.add_command(training)


_add_commands()
