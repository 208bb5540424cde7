"""HttpSearchBackend against a fake search API on loopback (http.server in a thread)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from openchatml.tools.browser import BackendError, Browser, BrowserErrorKind, BrowserState, HttpSearchBackend
from openchatml.tools.browser.web_search import MAX_ANSWER_BYTES

KEY = "sk-test"
PAGES = {
    "https://news.example/volcano": {
        "title": "Volcano erupts",
        "text": "<html><body><h1>Eruption</h1><p>Lava <a href='/more'>more</a>.</p></body></html>",
        "format": "html",
    },
    "https://docs.example/readme": {
        "title": "Readme", "text": "# Readme\n\n[Home](https://docs.example/)", "format": "markdown",
    },
    "https://plain.example/": {"text": "just text"},
}  # fmt: skip


class FakeSearchApi(BaseHTTPRequestHandler):
    """Speaks the protocol of :mod:`openchatml.tools.browser.web_search`; records requests."""

    requests: ClassVar[list[tuple[str, dict[str, str], Any]]] = []
    mode: ClassVar[str] = "ok"

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        payload = json.loads(self.rfile.read(length))
        FakeSearchApi.requests.append((self.path, dict(self.headers), payload))
        if self.headers.get("authorization") != f"Bearer {KEY}" and self.headers.get("x-api-key") != KEY:
            return self._answer(401, {"error": "bad key"})
        if FakeSearchApi.mode == "broken":
            return self._answer(200, {"nothing": True})
        if FakeSearchApi.mode == "not-json":
            return self._answer(200, "<html>", raw=True)
        if FakeSearchApi.mode == "huge":
            return self._answer(200, " " * (MAX_ANSWER_BYTES + 1), raw=True)
        if self.path == "/v1/search":
            hits = [
                {"url": url, "title": page.get("title", ""), "text": f"snippet of {url}"}
                for url, page in PAGES.items()
                if any(word in url for word in payload["query"].split())
            ]
            return self._answer(200, {"results": hits[: payload["num_results"]]})
        if self.path == "/v1/contents":
            url = payload["urls"][0]
            return self._answer(200, {"results": [{"url": url, **PAGES[url]}] if url in PAGES else []})
        return self._answer(404, {"error": "no such route"})

    def _answer(self, status: int, body: Any, raw: bool = False) -> None:
        data = (body if raw else json.dumps(body)).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def api_url() -> Iterator[str]:
    FakeSearchApi.requests = []
    FakeSearchApi.mode = "ok"
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeSearchApi)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_search_speaks_the_protocol(api_url: str) -> None:
    backend = HttpSearchBackend(api_url, KEY)
    results = asyncio.run(backend.search("volcano readme", 5))
    assert [(r.url, r.title) for r in results] == [
        ("https://news.example/volcano", "Volcano erupts"),
        ("https://docs.example/readme", "Readme"),
    ]
    assert results[0].snippet == "snippet of https://news.example/volcano"
    path, headers, payload = FakeSearchApi.requests[0]
    assert path == "/v1/search" and payload == {"query": "volcano readme", "num_results": 5}
    assert headers["authorization"] == f"Bearer {KEY}"
    assert backend.source == "web"


def test_fetch_reads_each_format(api_url: str) -> None:
    backend = HttpSearchBackend(api_url, KEY, api_key_header="x-api-key", source="news")
    html = asyncio.run(backend.fetch("https://news.example/volcano"))
    assert html.title == "Volcano erupts"
    assert html.text == "# Eruption\n\nLava 【0†more】."
    assert html.links == ("https://news.example/more",)
    markdown = asyncio.run(backend.fetch("https://docs.example/readme"))
    assert markdown.text == "# Readme\n\n【0†Home】" and markdown.links == ("https://docs.example/",)
    plain = asyncio.run(backend.fetch("https://plain.example/"))
    assert (plain.title, plain.text) == ("plain.example", "just text")
    source = asyncio.run(backend.fetch("view-source:https://news.example/volcano"))
    assert source.text.startswith("<html>") and source.links == ()
    assert FakeSearchApi.requests[-1][2] == {"urls": ["https://news.example/volcano"]}
    assert FakeSearchApi.requests[0][1]["x-api-key"] == KEY


@pytest.mark.parametrize(
    ("mode", "key", "url", "message"),
    [
        ("ok", "wrong", "https://plain.example/", "answered 401"),
        ("ok", KEY, "https://missing.example/", "No contents returned"),
        ("broken", KEY, "https://plain.example/", "without a `results` list"),
        ("not-json", KEY, "https://plain.example/", "not JSON"),
    ],
)
def test_api_failures_are_backend_errors(api_url: str, mode: str, key: str, url: str, message: str) -> None:
    FakeSearchApi.mode = mode
    with pytest.raises(BackendError, match=message):
        asyncio.run(HttpSearchBackend(api_url, key).fetch(url))


def test_an_unreachable_api_is_a_backend_error() -> None:
    backend = HttpSearchBackend("http://127.0.0.1:9/v1", KEY, timeout_s=2)
    with pytest.raises(BackendError, match="failed"):
        asyncio.run(backend.search("x", 3))


def test_the_browser_over_the_api(api_url: str) -> None:
    browser = Browser(HttpSearchBackend(api_url, KEY))
    state = BrowserState()
    found = asyncio.run(browser.call("search", {"query": "volcano"}, state))
    assert "L4:   * 【0†Volcano erupts†news.example】 snippet of https://news.example/volcano" in found.text
    opened = asyncio.run(browser.call("open", {"id": 0}, state))
    assert opened.text.startswith("[1] Volcano erupts (https://news.example/volcano)\n")
    assert "L2: # Eruption" in opened.text
    missing = asyncio.run(browser.call("open", {"id": 0}, state))
    assert missing.error is BrowserErrorKind.BACKEND
    assert "Error fetching URL `https://news.example/more`" in missing.text


def test_an_answer_too_large_is_a_backend_error(api_url: str) -> None:
    FakeSearchApi.mode = "huge"
    with pytest.raises(BackendError, match="more than"):
        asyncio.run(HttpSearchBackend(api_url, KEY).search("volcano", 5))
