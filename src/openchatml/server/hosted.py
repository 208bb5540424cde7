"""The tools this server runs for the model, set up per response.

Theory of operation. A :class:`HostedTools` lives as long as the service: it holds what
outlasts a response (the python kernels, the browser and its page stacks, …). For each
response, :meth:`HostedTools.settle` marks the request's web search as run here (where
the browser is on and the model writes Harmony; else it is accepted and not offered),
:meth:`HostedTools.check` refuses (400) a hosted tool the server cannot run, and
:meth:`HostedTools.session` gives a
:class:`HostedSession`: the tools of that response for the :class:`~..tools.router.ToolRouter`
and, for the event builder, one :class:`~..responses.hosted_calls.HostedCalls` per tool
(which turns its calls into output items). A response that offers no hosted tool gets an
empty session, and samples without the agent loop.

A hosted tool's state is its owner's: the python kernel and the browser's page stack of a
conversation are keyed by the API key and the conversation (:func:`kernel_name`), so a
container id another key names in its input reaches none of that state. Both live in this
server's memory: a turn served by another server starts afresh.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from ..responses.code_calls import CodeCalls
from ..responses.dialect import Dialect
from ..responses.errors import RequestError
from ..responses.hosted_calls import HostedCalls
from ..responses.request import ResponseRequest
from ..responses.resource import ResponseState
from ..responses.search_calls import SearchCalls
from ..responses.wire import InputItem
from ..responses.wire.dialects import WireDialect, wire_type
from ..responses.wire.items import CodeInterpreterCall
from ..responses.wire.resource import ErrorPayload
from ..responses.wire.tools import WEB_SEARCH
from ..tools.base import HostedCall, Tool
from ..tools.browser import (
    Browser,
    BrowserState,
    BrowserTool,
    CorpusBackend,
    HttpSearchBackend,
    SearchBackend,
)
from ..tools.python import KernelPool, PythonTool
from ..tools.router import ToolRouter
from .mcp_sessions import McpServers
from .settings import BrowserSettings, PythonSettings, ServiceSettings

T = TypeVar("T")

DEADLINE_GRACE_MS = 5000
"""How long past a tool's own limit the router waits before it stops the call."""


@dataclass(slots=True)
class HostedSession:
    """The hosted tools of one response: ``tools`` for the router, ``calls`` for the event
    builder; ``deadline_ms``: the router's default deadline per call."""

    tools: list[Tool] = field(default_factory=list)
    calls: list[HostedCalls] = field(default_factory=list)
    deadline_ms: int = 120_000
    citations: BrowserState | None = None
    """The browser's page stack the answer's citations point into, where it browses."""
    held: Callable[[str], bool] | None = None
    """Whether a call of a recipient waits for the user's approval (an MCP tool's)."""
    first_calls: tuple[HostedCall, ...] = ()
    """Approved calls that run before the model samples."""
    failure: ErrorPayload | None = None
    """Why the response fails before it samples (an MCP server could not list its tools)."""
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    """What closes the response's connections (to MCP servers) when it ends."""

    @property
    def empty(self) -> bool:
        """Whether the response offers no hosted tool (it samples without the loop)."""
        return not self.tools

    def router(self) -> ToolRouter:
        """A router of this session's tools."""
        return ToolRouter(self.tools, default_deadline_ms=self.deadline_ms)

    async def close(self) -> None:
        """The response has ended: its connections close; what its tools keep across turns
        is kept."""
        for closer in self.closers:
            await closer()


class HostedTools:
    """The server's hosted tools (see the module docstring): ``kernels`` runs python
    (``None``: python is off)."""

    def __init__(self, settings: ServiceSettings, dialect: Dialect, *, kernels: KernelPool | None) -> None:
        self.settings = settings
        self.dialect = dialect
        self.kernels = kernels
        browsing = settings.browser
        self.browser = (
            None if browsing is None else Browser(backend_of(browsing), view_tokens=browsing.view_tokens)
        )
        self.pages = PageStacks(browsing.max_states if browsing is not None else 0)
        self.mcp = McpServers(settings.mcp) if settings.mcp is not None else None

    def tool_types(self) -> list[str]:
        """The hosted tool types (OpenAI's spelling) this server runs for its model."""
        types = ["code_interpreter"] if self.kernels is not None else []
        if self.browser is not None:
            types += [wire_type(kind, WireDialect.OPENAI) for kind in WEB_SEARCH]
        if self.mcp is not None:
            types.append("mcp")
        return types

    def settle(self, request: ResponseRequest) -> ResponseRequest:
        """``request``, its web search run here where the browser is on
        (:attr:`~..responses.request.ResponseRequest.browsing`)."""
        browses = request.web_search is not None and self.browser is not None
        return replace(request, browsing=browses) if browses != request.browsing else request

    def check(self, request: ResponseRequest) -> None:
        """Refuse (400 ``unsupported_tool_type``) a hosted tool this server cannot run for
        ``request``: the tool is off."""
        if request.code_interpreter is not None and self.kernels is None:
            self._refuse(
                request,
                request.code_interpreter,
                "code_interpreter",
                "the hosted python tool is off (see 'openchatml serve --python')",
            )
        for server in request.mcp_servers:
            if self.mcp is None:
                self._refuse(request, server, "mcp", "MCP is off (see 'openchatml serve --mcp-allow')")
        if self.mcp is not None:
            self.mcp.check(request)

    def _refuse(self, request: ResponseRequest, tool: object, name: str, why: str) -> None:
        position = next(i for i, offered in enumerate(request.all_tools) if offered is tool)
        raise RequestError(
            f"The tool {name!r} cannot be used on this server: {why}.",
            param=f"tools[{position}].type",
            code="unsupported_tool_type",
        )

    async def session(
        self,
        state: ResponseState,
        owner: str,
        history: Sequence[InputItem],
        new_input: Sequence[InputItem] = (),
    ) -> HostedSession:
        """The hosted tools of the response ``state`` of ``owner`` (its request checked by
        :meth:`check`), whose earlier items are ``history`` and new ones ``new_input``; its
        MCP servers connected and listed (the request gains their namespaces)."""
        session = HostedSession()
        request = state.request
        if request.code_interpreter is not None and self.kernels is not None:
            python = self.settings.python or PythonSettings()
            container = kernel_key(request, history, state.id)
            outputs = request.wants_code_outputs
            session.calls.append(CodeCalls(state.output, container, offered=True, outputs=outputs))
            session.tools.append(
                PythonTool(self.kernels, kernel_name(owner, container), timeout=python.timeout)
            )
            session.deadline_ms = max(session.deadline_ms, int(python.timeout * 1000) + DEADLINE_GRACE_MS)
        if request.browsing and self.browser is not None:
            pages = self.pages.of(owner, request, state.id)
            session.calls.append(SearchCalls(state.output, pages, sources=request.wants_search_sources))
            session.tools.append(BrowserTool(self.browser, pages))
            session.citations = pages
        if request.mcp_servers and self.mcp is not None:
            try:
                await self.mcp.join(session, state, history, new_input)
            except BaseException:
                await session.close()
                raise
        return session


class PageStacks:
    """The browser's page stacks of conversations, by owner and conversation (or
    ``previous_response_id`` chain); the ``limit`` most recently used are kept."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._stacks: OrderedDict[str, BrowserState] = OrderedDict()
        self._chains: OrderedDict[str, str] = OrderedDict()
        """Response id → the key of the page stack it browsed."""

    def of(self, owner: str, request: ResponseRequest, response_id: str) -> BrowserState:
        """The page stack of the response ``response_id`` of ``owner``: its conversation's, or
        its chain's (that of the response it continues), else a new one."""
        chained = self._chains.get(request.previous_response_id or "")
        key = request.conversation or chained or response_id
        _remember(self._chains, response_id, key, self.limit * 16)
        name = kernel_name(owner, key)
        stack = self._stacks.get(name) or BrowserState()
        _remember(self._stacks, name, stack, self.limit)
        return stack


def _remember(table: OrderedDict[str, T], key: str, value: T, limit: int) -> None:
    """Put ``key`` in ``table`` as its newest entry, dropping the oldest beyond ``limit``."""
    table[key] = value
    table.move_to_end(key)
    while len(table) > max(limit, 1):
        table.popitem(last=False)


def backend_of(settings: BrowserSettings) -> SearchBackend:
    """The search backend ``settings`` describe: the corpus folder (its index where the
    settings say, else in the temporary folder) or the search API."""
    if settings.corpus is not None:
        index = settings.index
        if index is None:
            digest = hashlib.sha256(str(Path(settings.corpus).resolve()).encode()).hexdigest()[:16]
            index = str(Path(tempfile.gettempdir()) / f"openchatml-corpus-{digest}.sqlite3")
        return CorpusBackend(settings.corpus, index, name=settings.corpus_name)
    return HttpSearchBackend(
        settings.search_url or "",
        settings.search_key,
        api_key_header=settings.search_key_header,
        source=settings.search_source,
    )


def kernel_key(request: ResponseRequest, history: Sequence[InputItem], response_id: str) -> str:
    """The key of the python kernel a response runs its code in (its ``container_id``):
    the conversation's id; else the container of the last code interpreter call of the
    ``previous_response_id`` chain (the kernel of the chain's first python call); else
    the response's own id. State thus survives across turns of a conversation or a chain;
    a new chain gets a fresh kernel, as does one whose kernel another server ran."""
    if request.conversation is not None:
        return request.conversation
    calls = [item for item in history if isinstance(item, CodeInterpreterCall) and item.container_id]
    return calls[-1].container_id if calls else response_id


def kernel_name(owner: str, container: str) -> str:
    """The kernel pool's key for ``owner``'s ``container``: a kernel is its owner's, so a
    container id another API key names in its input reaches none of that kernel's state."""
    return f"{owner}\n{container}"
