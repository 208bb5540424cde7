"""``openchatml serve``'s settings, and building an app from them.

:class:`ServerConfig` holds every option; :func:`open_engine` loads the engine it names
(a demo model such as ``tiny-random``, a local folder or hub id through transformers, or
an upstream ``/v1/completions`` server; a hub id is looked for in the local cache first,
and what downloading it takes is said before it starts: :mod:`.hub`); :func:`open_store`
the store (SQLite file, PostgreSQL URL, or none); :func:`sealing_key` the key that seals
``encrypted_content`` (from the environment, a file, or created once in the data
directory).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import ipaddress
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from ..demo_models.catalog import ensure_demo_model, is_demo_model
from ..engines.base import Engine, EngineError
from ..engines.batching import DEFAULT_BATCH_SIZE
from ..responses.crypto import KEY_BYTES, new_key
from ..responses.limits import DEFAULT_LIMITS, DEFAULT_MAX_OUTPUT_TOKENS, RequestLimits
from .hub import HubError, locate
from .settings import BrowserSettings, McpSettings, PythonSettings
from .store.base import Store
from .store.sqlite import SQLiteStore

DEFAULT_MODEL: Final = "openai/gpt-oss-20b"
RUNNING_UPSTREAM: Final = 16
"""Responses generating at once by default over an upstream server."""
KEY_ENV: Final = "OPENCHATML_SECRET_KEY"
LOG_LEVELS: Final = ("debug", "info", "warning", "error")
"""``serve --log-level``: ``info`` shows the access log, ``warning`` only what went wrong."""


def default_home() -> Path:
    """The data directory: ``$OPENCHATML_HOME`` or ``~/.cache/openchatml``."""
    env = os.environ.get("OPENCHATML_HOME")
    return Path(env) if env else Path.home() / ".cache" / "openchatml"


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Everything ``openchatml serve`` can be told."""

    model: str = DEFAULT_MODEL
    upstream: str | None = None
    upstream_api_key: str | None = None
    tokenizer: str | None = None
    """The model's tokenizer for ``upstream`` (a folder or hub id): with a non-Harmony chat
    template, prompts are rendered and answers read through it."""
    device: str | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    """Requests the in-process engine decodes together."""
    batch_tokens: int | None = None
    """The most cache columns (rows × longest row) the in-process batch holds; ``None``:
    bounded by the batch size only."""
    store: str = "sqlite"
    home: Path = field(default_factory=default_home)
    host: str = "127.0.0.1"
    port: int = 8000
    api_keys: tuple[str, ...] = ()
    requests_per_minute: int | None = None
    auth_failures_per_minute: int | None = 10
    """Failed authentications a minute per client address (then 429 for that address)."""
    max_running: int | None = None
    """Responses generating at once; ``None``: the engine's default (:meth:`running_limit`)."""
    max_queued: int | None = 32
    """Responses waiting for the engine beyond those (then 503)."""
    max_per_key: int | None = 8
    """Responses one API key has queued or running at once (then 429)."""
    max_body_bytes: int = 32 * 1024 * 1024
    request_limits: RequestLimits = DEFAULT_LIMITS
    """The bounds on one request's work (items, tools, nesting, history, input tokens)."""
    ttl_seconds: int | None = 30 * 24 * 3600
    served_name: str | None = None
    wire: str = "auto"
    """The wire dialect of answers: ``auto`` (by the client), ``openai`` or ``openresponses``."""
    cors_origins: tuple[str, ...] = ()
    """The origins browsers may call the API from (``*``: any); none by default."""
    log_level: str = "info"
    """One of :data:`LOG_LEVELS`."""
    default_max_output_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS
    """The output bound of a request that sets no ``max_output_tokens`` (``None``: the room left)."""
    python: bool | None = None
    """The hosted ``python`` tool: on, off, or ``None``: on where bubblewrap works."""
    python_settings: PythonSettings = field(default_factory=PythonSettings)
    """How the hosted ``python`` tool runs, when on."""
    browser: BrowserSettings | None = None
    """The hosted browser (web search), or ``None``: off."""
    mcp: McpSettings | None = None
    """Remote MCP servers (the ``mcp`` tool), or ``None``: off."""
    playground: bool = True
    """Whether ``/`` serves the playground page."""
    envelope: bool | None = None
    """Whether each response's token ids are kept for ``GET /v1/responses/{id}/envelope``
    (they show the system prompt and the hidden reasoning); ``None``: where the server
    listens on a loopback address only (:attr:`records_envelopes`)."""

    def __post_init__(self) -> None:
        if self.log_level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {self.log_level!r}: expected one of {', '.join(LOG_LEVELS)}")

    @property
    def records_envelopes(self) -> bool:
        """Whether envelopes are recorded: ``envelope`` when set, else whether ``host`` is a
        loopback address (``localhost`` included)."""
        if self.envelope is not None:
            return self.envelope
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    @property
    def engine_name(self) -> str:
        """``upstream`` or ``transformers``."""
        return "upstream" if self.upstream else "transformers"

    def running_limit(self) -> int | None:
        """How many responses generate at once: ``max_running`` (``0``: no limit → ``None``),
        or when unset :data:`RUNNING_UPSTREAM` over an upstream server and the batch size
        in process (more would only wait on the engine, outside the queue's order)."""
        if self.max_running is None:
            return RUNNING_UPSTREAM if self.upstream else self.batch_size
        return self.max_running or None


class ConfigError(Exception):
    """The configuration cannot be served; the message says what to pass instead."""


async def open_engine(config: ServerConfig, say: Callable[[str], None] = lambda line: None) -> Engine:
    """The engine ``config`` names (``say``: told what a hub model's download takes, before
    it starts). Raises :class:`ConfigError` with a one-line hint."""
    if config.upstream:
        from ..engines.tokenizer import HFTokenizer
        from ..engines.upstream import UpstreamEngine

        try:
            tokenizer = None if config.tokenizer is None else HFTokenizer.load(config.tokenizer)
        except EngineError as exc:
            raise ConfigError(str(exc)) from None
        try:
            return await UpstreamEngine.connect(
                config.upstream,
                model=config.served_name,
                api_key=config.upstream_api_key,
                tokenizer=tokenizer,
            )
        except EngineError as exc:
            raise ConfigError(f"cannot reach the upstream engine at {config.upstream}: {exc}") from None
    from ..engines.transformers import TransformersEngine

    model: str | Path = config.model
    name = config.served_name
    if is_demo_model(config.model):
        model = ensure_demo_model(config.model, config.home)
        name = name or config.model
    else:
        try:
            model = await asyncio.to_thread(locate, config.model, say)
        except HubError as exc:
            raise ConfigError(f"{exc}. {_OFFLINE_HINT}") from None
        if model != config.model:  # a cached snapshot, whose folder is named by its commit
            name = name or config.model
    try:
        return TransformersEngine.load(
            model,
            device=config.device,
            model_id=name,
            batch_size=config.batch_size,
            batch_tokens=config.batch_tokens,
        )
    except EngineError as exc:
        reason = str(exc).splitlines()[0].rstrip(".")
        raise ConfigError(f"{reason}. {_OFFLINE_HINT}") from None


_OFFLINE_HINT: Final = (
    "Pass --model tiny for an offline demo model, --model PATH for a local model folder, "
    "or --upstream URL to serve through a vLLM or llama.cpp server."
)


def open_store(config: ServerConfig) -> Store | None:
    """The store ``config.store`` names: ``sqlite`` (in the data directory), ``sqlite:///PATH``,
    ``postgresql://…``, or ``none``."""
    spec = config.store
    if spec == "none":
        return None
    if spec == "sqlite":
        return SQLiteStore(config.home / "responses.sqlite3")
    if spec.startswith("sqlite:///"):
        return SQLiteStore(spec[len("sqlite:///") :])
    if spec.startswith(("postgresql://", "postgres://")):
        from .store.postgres import PostgresStore

        return PostgresStore(spec)
    raise ConfigError(f"unknown store {spec!r}: use sqlite, sqlite:///PATH, postgresql://… or none")


def sealing_key(home: Path) -> bytes:
    """The key sealing ``encrypted_content``: ``$OPENCHATML_SECRET_KEY`` (64 hex digits or
    base64 of 32 bytes) when set, else ``HOME/secret.key``, created (mode 0600) when missing.
    Servers sharing a store must share this key."""
    env = os.environ.get(KEY_ENV)
    if env:
        return _decode_key(env.strip(), KEY_ENV)
    path = home / "secret.key"
    if path.exists():
        return _decode_key(path.read_text().strip(), str(path))
    home.mkdir(parents=True, exist_ok=True)
    key = new_key()
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(key.hex())
    try:
        os.link(tmp, path)  # atomic: a concurrent first start keeps the first key
    except FileExistsError:
        tmp.unlink()
        return _decode_key(path.read_text().strip(), str(path))
    tmp.unlink()
    return key


def _decode_key(text: str, where: str) -> bytes:
    try:
        raw = bytes.fromhex(text) if len(text) == 2 * KEY_BYTES else base64.b64decode(text, validate=True)
    except (ValueError, binascii.Error):
        raise ConfigError(f"the key in {where} is neither hex nor base64") from None
    if len(raw) != KEY_BYTES:
        raise ConfigError(f"the key in {where} must be {KEY_BYTES} bytes, got {len(raw)}")
    return raw
