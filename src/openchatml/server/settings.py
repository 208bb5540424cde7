"""What a :class:`~.service.ResponseService` needs beyond its engine and store."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from ..responses.input import PromptSettings
from ..responses.limits import DEFAULT_MAX_OUTPUT_TOKENS, RequestLimits
from ..tools.mcp import McpServerConfig

WIRE_SETTINGS: Final = ("auto", "openai", "openresponses")
"""The server's wire settings: a dialect for every answer, or ``auto`` (by the client)."""


@dataclass(frozen=True, slots=True)
class PythonSettings:
    """The hosted ``python`` tool (the code interpreter): kernels confined by bubblewrap
    (``unsafe``: unconfined, for trusted use only), each cell within ``timeout`` seconds,
    at most ``max_kernels`` at once, each stopped after ``idle_seconds`` unused."""

    unsafe: bool = False
    timeout: float = 120.0
    max_kernels: int = 16
    idle_seconds: float = 600.0


@dataclass(frozen=True, slots=True)
class BrowserSettings:
    """The hosted browser (web search): over the files of ``corpus`` (indexed in SQLite
    FTS5 at ``index``; its URLs ``corpus://{corpus_name}/PATH``), or over the web search API
    at ``search_url`` (its key ``search_key``, sent in ``search_key_header``; the API
    searches ``search_source``). ``max_states``: how many conversations' page stacks are
    kept, the least recently used dropped first."""

    corpus: str | None = None
    index: str | None = None
    corpus_name: str = "local"
    search_url: str | None = None
    search_key: str | None = field(default=None, repr=False)
    search_key_header: str = "authorization"
    search_source: str = "web"
    view_tokens: int = 1024
    max_states: int = 256

    def __post_init__(self) -> None:
        if (self.corpus is None) == (self.search_url is None):
            raise ValueError("the browser searches either a corpus folder or a search API, one of them")


@dataclass(frozen=True, slots=True)
class McpSettings:
    """Remote MCP servers (the ``mcp`` tool): a request's ``server_url`` is connected to only
    under one of the ``allow`` URL prefixes, or where its label is one of ``servers``
    (configured with their URL and headers); a connection and handshake take at most
    ``connect_timeout`` seconds, a tool list or call ``call_timeout``."""

    allow: tuple[str, ...] = ()
    servers: tuple[McpServerConfig, ...] = ()
    connect_timeout: float = 10.0
    call_timeout: float = 60.0


@dataclass(frozen=True, slots=True)
class ServiceSettings:
    """What the service needs beyond its engine and store."""

    model_aliases: tuple[str, ...] = ()
    prompt: PromptSettings = field(default_factory=PromptSettings)
    limits: RequestLimits = field(default_factory=RequestLimits)
    """The bounds on one request (conversation length and input tokens are checked here)."""
    ttl_seconds: int | None = 30 * 24 * 3600
    background_linger_seconds: float = 60.0
    maintenance_seconds: float = 10.0
    """How often the store hears this server is alive, and fails what dead ones left and
    evicts what expired (keep it well under the store's lease)."""
    publish_seconds: float = 0.05
    """How long the events of a stored background response gather before they are written."""
    poll_seconds: float = 0.25
    """How often, without store notices, a server looks for events and cancel requests of
    other servers (with notices: every ``4 * poll_seconds``, in case one was lost)."""
    cancel_wait_seconds: float = 10.0
    """How long ``cancel`` waits for another server to end the response it runs."""
    default_max_output_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS
    """The output bound of a response whose request sets no ``max_output_tokens`` (``None``:
    the context window's room after the prompt)."""
    python: PythonSettings | None = None
    """The hosted ``python`` tool, or ``None``: a request naming ``code_interpreter`` is a 400."""
    browser: BrowserSettings | None = None
    """The hosted browser, or ``None``: a request's ``web_search`` is accepted and not offered."""
    mcp: McpSettings | None = None
    """Remote MCP servers, or ``None``: a request naming an ``mcp`` tool is a 400."""
    wire: str = "auto"
    """The wire dialect of answers whose request names none (``OpenChatML-Wire``):
    ``openai``, ``openresponses``, or ``auto`` (``openai`` for OpenAI's SDKs and Codex,
    ``openresponses`` for anyone else); see :func:`~..responses.wire.choose_dialect`."""

    def __post_init__(self) -> None:
        if self.wire not in WIRE_SETTINGS:
            raise ValueError(
                f"unknown wire setting {self.wire!r}: expected one of {', '.join(WIRE_SETTINGS)}"
            )
