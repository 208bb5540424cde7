"""BrowserTool: the browser behind the router's Tool protocol."""

from __future__ import annotations

import asyncio
import json

from openchatml.tools.base import FindInPageAction, HostedCall, OpenPageAction, SearchAction, Tool
from openchatml.tools.browser import Browser, BrowserState, BrowserTool


def test_the_tool_serves_the_browser_namespace(browser: Browser) -> None:
    tool = BrowserTool(browser)
    assert isinstance(tool, Tool)
    assert tool.namespace.name == "browser"
    asyncio.run(tool.cancel("call_1", "deadline"))


def test_calls_answer_with_displays_and_outputs(browser: Browser) -> None:
    tool = BrowserTool(browser)
    searched = asyncio.run(tool.call(HostedCall("browser.search", "c1", json.dumps({"query": "feline"}))))
    assert searched.ok and searched.content.startswith("[0] feline\n")
    assert searched.outputs == (SearchAction("feline", ("corpus://local/animals/cats.html",)),)
    opened = asyncio.run(tool.call(HostedCall("browser.open", "c2", '{"id": 0}')))
    assert opened.ok and opened.content.startswith("[1] All About Cats")
    assert opened.outputs == (OpenPageAction("corpus://local/animals/cats.html"),)
    assert opened.provenance is not None and opened.provenance.source == "corpus://local/animals/cats.html"
    found = asyncio.run(tool.call(HostedCall("browser.find", "c3", '{"pattern": "claws"}')))
    assert found.outputs == (FindInPageAction("corpus://local/animals/cats.html", "claws"),)
    assert tool.state.current_cursor == 2
    restored = BrowserTool(browser, BrowserState.from_json(tool.state.to_json()))
    assert restored.state.pages == tool.state.pages


def test_failures_carry_ocm_codes(browser: Browser) -> None:
    tool = BrowserTool(browser)
    cases = {
        ("browser.open", '{"cursor": 3}'): "E-CALL-SCHEMA",
        ("browser.search", "not json"): "E-CALL-SCHEMA",
        ("browser.search", "[1]"): "E-CALL-SCHEMA",
        ("browser.scroll", "{}"): "E-CALL-SCHEMA",
        ("browser.search", '{"query": "zebra"}'): "E-TOOL-FAILED",
        ("browser.open", '{"id": "corpus://local/none.md"}'): "E-TOOL-FAILED",
    }
    for (recipient, body), code in cases.items():
        result = asyncio.run(tool.call(HostedCall(recipient, "c", body)))
        assert result.error is not None and result.error.code == code, (recipient, body)
        assert result.error.message
    assert tool.state.current_cursor == -1
