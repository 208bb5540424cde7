"""The browser as a hosted :class:`~openchatml.tools.base.Tool` of the router.

:class:`BrowserTool` holds one conversation's :class:`BrowserState`: keep
``tool.state.to_json()`` with the conversation and build the next turn's tool with
``BrowserState.from_json(…)``. A result's content is the display the model reads; a
failure carries ``E-CALL-SCHEMA`` (the call names nothing valid: bad arguments, an unknown
cursor, link or location) or ``E-TOOL-FAILED`` (the backend failed or found nothing).
"""

from __future__ import annotations

from typing import Final

from openchatml.core.content import ToolNamespaceConfig
from openchatml.core.errors import CallSchemaError

from ..base import (
    FindInPageAction,
    HostedCall,
    OpenPageAction,
    Provenance,
    SearchAction,
    ToolFailure,
    ToolOutput,
    ToolResult,
)
from ..errors import ToolFailedError
from .browser import Browser
from .result import BrowserErrorKind, BrowserResult
from .state import BrowserState, PageKind

_BACKEND_FAILURES: Final = frozenset(
    {
        BrowserErrorKind.BACKEND,
        BrowserErrorKind.NO_RESULTS,
        BrowserErrorKind.BAD_STATE,
        BrowserErrorKind.STACK_FULL,
    }
)


class BrowserTool:
    """``browser.search`` / ``browser.open`` / ``browser.find`` for the router, on ``state``."""

    def __init__(self, browser: Browser, state: BrowserState | None = None) -> None:
        self.browser = browser
        self.state = state if state is not None else BrowserState()

    @property
    def namespace(self) -> ToolNamespaceConfig:
        """The ``browser`` namespace gpt-oss was trained with, naming the backend's source."""
        return self.browser.namespace

    async def call(self, request: HostedCall) -> ToolResult:
        """The display (or failure) of ``request`` on this tool's page stack."""
        try:
            args = request.arguments()
        except CallSchemaError as exc:
            return ToolResult.failed(exc)
        result = await self.browser.call(request.tool_name, args, self.state)
        if result.error is not None:
            code = ToolFailedError.code if result.error in _BACKEND_FAILURES else CallSchemaError.code
            return ToolResult(error=ToolFailure(code, result.text))
        return ToolResult(
            content=result.text,
            provenance=Provenance.now(result.url or None),
            outputs=self._outputs(request.tool_name, args, result),
        )

    async def cancel(self, call_id: str, reason: str) -> None:
        """Nothing outlives a call's task: a cancelled fetch stops with it."""

    def _outputs(self, action: str, args: dict[str, object], result: BrowserResult) -> tuple[ToolOutput, ...]:
        page = self.state.page(result.cursor)
        if action == "search":
            return (SearchAction(query=str(args.get("query", "")), sources=page.links),)
        if action == "find":
            return (FindInPageAction(url=page.cite_url, pattern=str(args.get("pattern", ""))),)
        if page.kind is PageKind.DOCUMENT:
            return (OpenPageAction(url=page.url),)
        return ()
