"""The ``openchatml`` command: render, parse, validate and convert conversations.

``render`` turns a JSON conversation (see :mod:`openchatml.core.interchange`) into Harmony or
OpenChatML 2.2 text or token ids; ``parse`` reads text or token ids back into JSON
messages (or streams the parser's events, or the OCM §9 events); ``validate`` lists every
problem in one or more files; ``convert`` moves between Harmony text, OCM 2.2 text and JSON.

Every typed :class:`~openchatml.core.errors.OCMError` is printed as
``error: E-CODE: message (at line L, column C)`` on stderr with exit status 1; usage
errors exit with 2.
"""

from __future__ import annotations

import codecs
import functools
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any, Literal, ParamSpec, TypeVar

import click

from .core.calls import check_tool_call, declared_namespaces
from .core.errors import OCMError, ParseError, Position, text_position
from .core.events import Event, Repaired
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
from .responses.limits import DEFAULT_LIMITS, DEFAULT_MAX_OUTPUT_TOKENS

P = ParamSpec("P")
R = TypeVar("R")

InputKind = Literal["json", "tokens", "text"]

_ROLES = [r.value for r in Role]
_PROFILES = [p.value for p in Profile]
_SOURCE = click.Path(dir_okay=False, allow_dash=True, exists=True)


# --- errors -----------------------------------------------------------------------------


def _reports_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Wrap a command so that a typed error becomes one line on stderr and exit status 1."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except OCMError as exc:
            click.echo(f"error: {_one_line(str(exc))}", err=True)
            sys.exit(1)

    return wrapper


def _one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) made one space."""
    return " ".join(text.split())


def _where(position: Position | None) -> str:
    return f" (at {position})" if position is not None else ""


def _warn(code: str, detail: str, position: Position | None) -> None:
    click.echo(f"warning: {code}: {_one_line(detail)}{_where(position)}", err=True)


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


def _parse_all(text: str, kind: InputKind, parser: StreamParser) -> Conversation:
    if kind == "tokens":
        parser.feed_tokens(_token_ids(text))
    else:
        parser.feed_text(text)
    parser.close()
    return Conversation(tuple(parser.messages), parser.transcript_header)


def _dump(value: Any, compact: bool) -> str:
    if compact:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(value, ensure_ascii=False, indent=2)


# --- commands ---------------------------------------------------------------------------


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
@_reports_errors
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
@_reports_errors
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
    parser = _parser(role, lenient, profile)
    if stream:
        _parse_stream(source, as_tokens, parser, _ocm_emitter() if event_kind == "ocm" else _emit)
        return
    if event_kind != "parser":
        raise click.UsageError("--events needs --stream")
    text = _read(source)
    conversation = _parse_all(text, "tokens" if as_tokens else "text", parser)
    for repair in parser.repairs:
        _warn(repair.code, repair.detail, repair.position)
    click.echo(_dump(conversation_to_json(conversation), compact))


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
        what = f"{self.code} {_one_line(self.message)}"
        if pos is None:
            return f"{name}: {what}"
        if pos.unit == "token":
            return f"{name}:token {pos.offset}: {what}"
        if pos.line is not None:
            return f"{name}:{pos.line}:{pos.column}: {what}"
        return f"{name}:offset {pos.offset}: {what}"


def _json_problems(text: str, profile: str) -> list[_Problem]:
    """The first format error of a JSON conversation, or else every tool call that does not
    match the tools it declares (checked when it declares any)."""
    try:
        conversation = conversation_from_json_text(text)
        Renderer(RenderConfig(profile=Profile(profile), cot=CoTPolicy.KEEP)).text(conversation)
    except OCMError as exc:
        return [_Problem(exc.code, exc.message, exc.position)]
    namespaces = declared_namespaces(conversation)
    if not namespaces:
        return []
    raw = json.loads(text)
    items, base = (raw, "") if isinstance(raw, list) else (raw["messages"], "messages")
    paths = [f"{base}[{i}]" for i, item in enumerate(items) for _ in messages_from_json(item)]
    found: list[_Problem] = []
    for path, message in zip(paths, conversation, strict=True):
        if message.is_tool_call:
            try:
                check_tool_call(message, namespaces)
            except OCMError as exc:
                found.append(_Problem(exc.code, f"{path}: {exc.message}", None))
    return found


def _problems(text: str, profile: str) -> list[_Problem]:
    """Every problem in ``text``: each lenient repair, and the strict error if no repair names it."""
    kind = _detect(text)
    if kind == "json":
        return _json_problems(text, profile)
    try:
        ids = _token_ids(text) if kind == "tokens" else None
    except OCMError as exc:
        return [_Problem(exc.code, exc.message, exc.position)]

    def run(lenient: bool) -> StreamParser:
        parser = _parser(None, lenient, profile)
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
    help="harmony: every assistant message must name a channel.",
)
def validate(files: tuple[str, ...], profile: str) -> None:
    """Check files (text, token ids or JSON); print FILE: ok, or FILE:LINE:COL: E-CODE message per problem."""
    failed = False
    for name in files:
        try:
            problems = _problems(_read(name), profile)
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
@_reports_errors
def convert(source: str, target: str, lenient: bool, compact: bool) -> None:
    """Convert between Harmony text, OCM 2.2 text and JSON (input kind detected)."""
    text = _read(source)
    kind = _detect(text)
    if kind == "json":
        conversation = conversation_from_json_text(text)
    else:
        parser = _parser(None, lenient, "ocm")
        conversation = _parse_all(text, kind, parser)
        for repair in parser.repairs:
            _warn(repair.code, repair.detail, repair.position)
    if target == "json":
        click.echo(_dump(conversation_to_json(conversation), compact))
        return
    renderer = Renderer(RenderConfig(profile=Profile(target), cot=CoTPolicy.KEEP))
    click.echo(renderer.text(conversation))


__all__ = ["main"]


@main.command()
@click.option(
    "--model",
    default=None,
    metavar="NAME|PATH",
    help="Model to serve: a hub id, a local folder, or a demo model built offline in seconds: "
    "'tiny-random' (alias 'tiny': a random-weight gpt-oss speaking Harmony), 'tiny-chat-qwen3' or "
    "'tiny-chat-llama' (random-weight models of those families with their chat template). "
    "Default: openai/gpt-oss-20b.",
)
@click.option("--upstream", metavar="URL", help="Serve through a vLLM / llama.cpp server's /v1/completions.")
@click.option(
    "--upstream-api-key", metavar="KEY", envvar="OPENCHATML_UPSTREAM_API_KEY", help="Key for --upstream."
)
@click.option(
    "--tokenizer",
    metavar="PATH",
    help="With --upstream: the model's tokenizer (folder or hub id); its chat template serves other models.",
)
@click.option(
    "--served-model-name", metavar="NAME", help="The model id clients use (default: from the model)."
)
@click.option("--device", metavar="DEV", help="Device for the transformers engine (cpu, cuda, cuda:1 …).")
@click.option(
    "--store",
    default="sqlite",
    show_default=True,
    metavar="SPEC",
    help="sqlite (in the data directory), sqlite:///PATH, postgresql://… or none.",
)
@click.option(
    "--data-dir", type=click.Path(path_type=Path), help="Data directory (default $OPENCHATML_HOME)."
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option(
    "--api-key",
    "api_keys",
    multiple=True,
    metavar="KEY",
    help="Require this bearer key (repeatable; also $OPENCHATML_API_KEYS, comma-separated).",
)
@click.option("--rate-limit", type=int, metavar="N", help="Requests per minute per key (429 beyond).")
@click.option(
    "--auth-failures-per-minute",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    metavar="N",
    help="Failed authentications per minute per client address (then 429 for it; 0: no limit).",
)
@click.option(
    "--max-running",
    type=click.IntRange(min=0),
    metavar="N",
    help="Responses generating at once (default: 1 in process, 16 with --upstream; 0: no limit).",
)
@click.option(
    "--max-queued",
    type=click.IntRange(min=0),
    default=32,
    show_default=True,
    metavar="N",
    help="Responses waiting for the engine beyond --max-running (then 503; 0: no limit).",
)
@click.option(
    "--max-per-key",
    type=click.IntRange(min=0),
    default=8,
    show_default=True,
    metavar="N",
    help="Responses one API key has queued or running at once (then 429; 0: no limit).",
)
@click.option("--max-body-mb", type=float, default=32.0, show_default=True, help="Largest request body.")
@click.option(
    "--max-input-tokens",
    type=click.IntRange(min=0),
    metavar="N",
    help="Prompt tokens one response may have, whatever the context window (0 or unset: the window).",
)
@click.option(
    "--max-input-items",
    type=click.IntRange(min=1),
    default=DEFAULT_LIMITS.max_input_items,
    show_default=True,
    metavar="N",
    help="Items in one request's input (400 beyond).",
)
@click.option(
    "--max-conversation-items",
    type=click.IntRange(min=1),
    default=DEFAULT_LIMITS.max_conversation_items,
    show_default=True,
    metavar="N",
    help="Items of a conversation: its previous_response_id chain plus the new input (400 beyond).",
)
@click.option(
    "--ttl-days", type=float, default=30.0, show_default=True, help="Stored responses expire after."
)
@click.option(
    "--wire",
    type=click.Choice(["auto", "openai", "openresponses"]),
    default="auto",
    show_default=True,
    help="How answers are spelled: openresponses (the Open Responses schema's names, e.g. "
    "response.reasoning.delta), openai (OpenAI's, e.g. response.reasoning_text.delta), or auto: "
    "openai for OpenAI's SDKs and Codex, openresponses for other clients. "
    "A request's OpenChatML-Wire header overrides it.",
)
@click.option(
    "--default-max-output-tokens",
    type=click.IntRange(min=0),
    default=DEFAULT_MAX_OUTPUT_TOKENS,
    show_default=True,
    metavar="N",
    help="Output tokens a response may sample when its request sets no max_output_tokens "
    "(0: the context window's room after the prompt).",
)
@click.option(
    "--cors-origin",
    "cors_origins",
    multiple=True,
    metavar="ORIGIN",
    help="Let browser pages from ORIGIN (https://app.example:8080, or * for any) call the API "
    "(repeatable; default: none).",
)
@click.option(
    "--python/--no-python",
    "python",
    default=None,
    help="The hosted python tool (code_interpreter, gpt-oss only), kernels confined by bubblewrap. "
    "Default: on where bubblewrap works; --python fails to start (status 2) where it does not.",
)
@click.option(
    "--python-unsafe",
    is_flag=True,
    help="Run the python tool's kernels without bubblewrap (trusted use only).",
)
@click.option(
    "--python-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=120.0,
    show_default=True,
    metavar="SECONDS",
    help="How long one python cell may run.",
)
@click.option(
    "--python-max-kernels",
    type=click.IntRange(min=1),
    default=16,
    show_default=True,
    metavar="N",
    help="Python kernels running at once (the least recently used idle one makes room).",
)
@click.option(
    "--python-idle-seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=600.0,
    show_default=True,
    metavar="SECONDS",
    help="A python kernel unused this long is stopped (its state lost).",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
    help="info: an access-log line per answer; warning: only what went wrong.",
)
def serve(
    model: str | None,
    upstream: str | None,
    upstream_api_key: str | None,
    tokenizer: str | None,
    served_model_name: str | None,
    device: str | None,
    store: str,
    data_dir: Path | None,
    host: str,
    port: int,
    api_keys: tuple[str, ...],
    rate_limit: int | None,
    auth_failures_per_minute: int,
    max_running: int | None,
    max_queued: int,
    max_per_key: int,
    max_body_mb: float,
    max_input_tokens: int | None,
    max_input_items: int,
    max_conversation_items: int,
    ttl_days: float,
    wire: str,
    default_max_output_tokens: int,
    cors_origins: tuple[str, ...],
    python: bool | None,
    python_unsafe: bool,
    python_timeout: float,
    python_max_kernels: int,
    python_idle_seconds: float,
    log_level: str,
) -> None:
    """Serve the Open Responses API (/v1/responses: JSON, SSE, WebSocket) over a model."""
    from .server import ServerConfig
    from .server import serve as run_server
    from .server.config import DEFAULT_MODEL, default_home
    from .server.settings import PythonSettings

    if tokenizer and not upstream:
        raise click.UsageError("--tokenizer goes with --upstream (a local model brings its own tokenizer)")
    env_keys = tuple(k.strip() for k in os.environ.get("OPENCHATML_API_KEYS", "").split(",") if k.strip())
    if model is None and not upstream:
        click.echo(
            f"no --model given: serving {DEFAULT_MODEL} (--model tiny-random: a small demo model, offline)",
            err=True,
        )
    config = ServerConfig(
        model=model or DEFAULT_MODEL,
        upstream=upstream,
        upstream_api_key=upstream_api_key,
        tokenizer=tokenizer,
        device=device,
        store=store,
        home=data_dir or default_home(),
        host=host,
        port=port,
        api_keys=api_keys + env_keys,
        requests_per_minute=rate_limit,
        auth_failures_per_minute=auth_failures_per_minute,
        max_running=max_running,
        max_queued=max_queued,
        max_per_key=max_per_key,
        max_body_bytes=int(max_body_mb * 1024 * 1024),
        request_limits=replace(
            DEFAULT_LIMITS,
            max_input_tokens=max_input_tokens or None,
            max_input_items=max_input_items,
            max_conversation_items=max_conversation_items,
        ),
        ttl_seconds=int(ttl_days * 86400) if ttl_days > 0 else None,
        served_name=served_model_name,
        wire=wire,
        default_max_output_tokens=default_max_output_tokens or None,
        cors_origins=cors_origins,
        log_level=log_level,
        python=True if python_unsafe and python is None else python,
        python_settings=PythonSettings(
            unsafe=python_unsafe,
            timeout=python_timeout,
            max_kernels=python_max_kernels,
            idle_seconds=python_idle_seconds,
        ),
    )
    sys.exit(run_server(config))


def _add_template_commands() -> None:
    from .template_cli import template

    main.add_command(template)


_add_template_commands()
