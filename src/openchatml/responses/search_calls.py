"""The events of a ``web_search_call``: gpt-oss's ``browser.*`` call, run by the server.

Theory of operation. The response's event builder hands a message addressed
``to=browser.search``, ``browser.open`` or ``browser.find`` (on ``analysis`` or
``commentary``) to its :class:`SearchCalls`. The call's body (JSON arguments) says what
the action is, so its item appears once the body is written (or cut short). The item
moves through the events as OpenAI's API streams them:

* the call written (``<|call|>``): ``output_item.added`` (``in_progress``, with its action:
  ``search`` and the query, ``open_page`` and the URL, ``find_in_page`` and the pattern)
  and ``web_search_call.in_progress`` (a call cut short then ends ``incomplete`` at once);
* the run: ``web_search_call.searching`` (status ``searching``), then
  ``web_search_call.completed`` and ``output_item.done`` with the status ``completed``
  (``failed`` when the browser failed) and the action as the browser ran it (the URL of
  the page opened or searched; a search's ``sources`` when the request includes
  ``web_search_call.action.sources``);
* a call the loop does not run (a bound reached, cancellation): ``output_item.done``,
  ``incomplete``.

The model's citations of the pages it read, ``【cursor†L3-L7】``, are resolved by the
event builder against the same :class:`~..tools.browser.BrowserState`
(:class:`~..tools.browser.CitationStream`).
"""

from __future__ import annotations

import json
from typing import Any

from ..core.events import Header
from ..core.messages import Role
from ..tools.base import FindInPageAction, OpenPageAction, SearchAction, ToolResult
from ..tools.browser import BrowserState
from ..tools.browser.result import BrowserError
from . import ids
from .custom_tools import FUNCTIONS
from .hosted_calls import CallQueue, HostedWriter, Numbering
from .request_tools import BROWSER_ACTIONS
from .wire.event_base import StreamEvent
from .wire.events import (
    OutputItemAdded,
    OutputItemDone,
)
from .wire.hosted_events import (
    WebSearchCallCompleted,
    WebSearchCallInProgress,
    WebSearchCallSearching,
)
from .wire.items import OutputItem, PageFind, PageOpening, SearchQuery, SearchSource, WebSearchCall


class SearchCallWriter:
    """The call to ``recipient`` whose item will be at ``index`` of the output, once its
    body is written."""

    def __init__(self, recipient: str, index: int) -> None:
        self.recipient = recipient
        self.index = index
        self.item = WebSearchCall(id=ids.new_id("ws"), status="in_progress")

    @property
    def item_id(self) -> str:
        """The call's item id."""
        return self.item.id

    def delta(self, text: str, number: Numbering) -> list[StreamEvent]:
        """Nothing: the item shows once its body is written."""
        return []


class SearchCalls:
    """The browser calls of one response, each a ``web_search_call`` item kept in
    ``output`` (the response's output items) as it stands; ``state``: the page stack the
    calls run on; ``sources``: whether a search's item lists its sources (``include``)."""

    def __init__(self, output: list[OutputItem], state: BrowserState, *, sources: bool) -> None:
        self.output = output
        self.state = state
        self.sources = sources
        self.calls: CallQueue[SearchCallWriter] = CallQueue()
        """The calls written and not yet done."""

    def opening(self, number: Numbering) -> list[StreamEvent]:
        """Nothing: the browser adds no item before the model samples."""
        return []

    @property
    def ready(self) -> int:
        """No call runs before the model samples."""
        return 0

    def claims(self, header: Header) -> str | None:
        """The call name (``browser.search`` …) when ``header`` opens a browser call:
        gpt-oss's (``to=browser.search``) or a chat-template model's
        (``to=functions.browser.search``); either carries JSON arguments."""
        recipient = (header.recipient or "").removeprefix(FUNCTIONS)
        if header.author.role is Role.ASSISTANT and recipient in BROWSER_ACTIONS:
            return recipient
        return None

    def open(self, header: Header, number: Numbering) -> tuple[SearchCallWriter, list[StreamEvent]]:
        """A call to come at the end of the output: its writer, no events yet."""
        return SearchCallWriter(str(header.recipient).removeprefix(FUNCTIONS), len(self.output)), []

    def close(self, writer: HostedWriter, body: str, complete: bool, number: Numbering) -> list[StreamEvent]:
        """The call of ``writer`` is written: its item opens, and waits for its run (one cut
        short ends ``incomplete`` at once, its action as far as its body went)."""
        if not isinstance(writer, SearchCallWriter):
            return []
        writer.item = writer.item.model_copy(update={"action": self._action(writer.recipient, body)})
        writer.index = len(self.output)
        self.output.append(writer.item)
        events: list[StreamEvent] = [
            OutputItemAdded(number(), writer.index, writer.item),
            WebSearchCallInProgress(number(), writer.index, writer.item_id),
        ]
        if not complete:
            self._update(writer, status="incomplete")
            return [*events, OutputItemDone(number(), writer.index, writer.item)]
        self.calls.written(writer)
        return events

    def running(self, number: Numbering) -> list[StreamEvent]:
        """The first waiting call runs: status ``searching``."""
        writer = self.calls.start()
        if writer is None:
            return []
        self._update(writer, status="searching")
        return [WebSearchCallSearching(number(), writer.index, writer.item_id)]

    def finished(self, result: ToolResult, number: Numbering) -> list[StreamEvent]:
        """The first running call gave ``result``: ``completed`` (or ``failed``), with the
        action as run."""
        writer = self.calls.finish()
        if writer is None:
            return []
        action = self._ran(writer.item.action, result)
        self._update(writer, status="completed" if result.ok else "failed", action=action)
        return [
            WebSearchCallCompleted(number(), writer.index, writer.item_id),
            OutputItemDone(number(), writer.index, writer.item),
        ]

    def abandoned(self, number: Numbering) -> list[StreamEvent]:
        """The response ends with calls unrun (or unfinished): they end ``incomplete``."""
        events: list[StreamEvent] = []
        for writer in self.calls.drain():
            self._update(writer, status="incomplete")
            events.append(OutputItemDone(number(), writer.index, writer.item))
        return events

    def _update(self, writer: SearchCallWriter, **fields: Any) -> None:
        writer.item = writer.item.model_copy(update=fields)
        self.output[writer.index] = writer.item

    def _action(self, recipient: str, body: str) -> SearchQuery | PageOpening | PageFind:
        """What the call asks for, read from its JSON arguments (as far as they go)."""
        try:
            args = json.loads(body)
        except ValueError:
            args = {}
        args = args if isinstance(args, dict) else {}
        action = recipient.rpartition(".")[2]
        if action == "search":
            query = args.get("query")
            return SearchQuery(query=query if isinstance(query, str) else None)
        if action == "find":
            pattern = args.get("pattern")
            return PageFind(url=self._page_url(args), pattern=pattern if isinstance(pattern, str) else "")
        target = args.get("id")
        return PageOpening(url=target if isinstance(target, str) else self._page_url(args) or None)

    def _page_url(self, args: dict[str, Any]) -> str:
        """The URL of the page at the call's ``cursor`` (the newest page without one)."""
        cursor = args.get("cursor", -1)
        try:
            page = self.state.page(cursor if isinstance(cursor, int) else -1)
        except BrowserError:
            return ""
        return page.cite_url or page.url

    def _ran(
        self, asked: SearchQuery | PageOpening | PageFind, result: ToolResult
    ) -> SearchQuery | PageOpening | PageFind:
        """The action as the browser ran it (from the result's outputs), else as asked."""
        for output in result.outputs:
            if isinstance(output, SearchAction):
                sources = tuple(SearchSource(url=url) for url in output.sources) if self.sources else None
                return SearchQuery(query=output.query, sources=sources)
            if isinstance(output, OpenPageAction):
                return PageOpening(url=output.url)
            if isinstance(output, FindInPageAction):
                return PageFind(url=output.url, pattern=output.pattern)
        return asked
