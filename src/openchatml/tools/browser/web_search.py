"""A web search API reached by URL: :class:`HttpSearchBackend`.

The protocol (Exa-like, JSON over HTTPS, the key in a header):

``POST {base_url}/search`` with ``{"query": str, "num_results": int}`` answers
``{"results": [{"url": str, "title": str, "text": str}, …]}`` — best first, ``text`` a
snippet of the page.

``POST {base_url}/contents`` with ``{"urls": [str]}`` answers
``{"results": [{"url": str, "title": str, "text": str, "format": "html"|"markdown"|"text"}]}``
— the page itself; ``format`` defaults to ``"text"``.

The key goes in ``Authorization: Bearer {key}``, or raw in another header named by
``api_key_header`` (``x-api-key`` for Exa). A non-2xx status, a transport error or an answer
of another shape is a :class:`BackendError`.
"""

from __future__ import annotations

import json
from typing import Any, Final

import httpx

from .backend import BackendError, Document, SearchResult, split_view_source, truncate
from .page_text import page_text

_FORMATS = frozenset({"html", "markdown", "text"})
MAX_ANSWER_BYTES: Final = 16 * 1024 * 1024
"""The largest answer read from the search API."""


class HttpSearchBackend:
    """Searches and fetches through the JSON API at ``base_url`` (see the module docstring)."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        api_key_header: str = "authorization",
        source: str = "web",
        timeout_s: float = 30.0,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.api_key_header = api_key_header
        self._source = source
        self.timeout_s = timeout_s
        self._client = client

    @property
    def source(self) -> str:
        """What the API searches (``web`` unless configured)."""
        return self._source

    async def search(self, query: str, topn: int) -> list[SearchResult]:
        """At most ``topn`` results for ``query`` from ``POST /search``."""
        answer = await self._post("/search", {"query": query, "num_results": topn})
        return [
            SearchResult(
                url=item["url"], title=item.get("title") or item["url"], snippet=item.get("text") or ""
            )
            for item in _results(answer)[:topn]
        ]

    async def fetch(self, url: str) -> Document:
        """The page at ``url`` from ``POST /contents``; ``view-source:`` keeps its raw text."""
        target, view_source = split_view_source(url)
        answer = await self._post("/contents", {"urls": [target]})
        results = _results(answer)
        if not results:
            raise BackendError(f"No contents returned for `{truncate(target)}`.")
        item = results[0]
        title = item.get("title") or ""
        content_format = item.get("format") or "text"
        if content_format not in _FORMATS:
            raise BackendError(f"Unknown content format `{truncate(str(content_format), 40)}`.")
        text = item.get("text") or ""
        page = page_text(text, target, "text" if view_source else content_format, title)
        return Document(url=target, title=page.title, text=page.text, links=page.links)

    def _headers(self) -> dict[str, str]:
        if self.api_key is None:
            return {}
        if self.api_key_header.lower() == "authorization":
            return {"authorization": f"Bearer {self.api_key}"}
        return {self.api_key_header: self.api_key}

    async def _post(self, path: str, payload: dict[str, Any]) -> Any:
        try:
            if self._client is not None:
                status, body = await self._send(self._client, path, payload)
            else:
                async with httpx.AsyncClient(timeout=self.timeout_s) as client:
                    status, body = await self._send(client, path, payload)
        except httpx.HTTPError as exc:
            raise BackendError(
                f"The search API at {self.base_url} failed: {truncate(str(exc) or type(exc).__name__)}"
            ) from exc
        if not 200 <= status < 300:
            text = body.decode("utf-8", "replace")
            raise BackendError(f"The search API answered {status}: {truncate(text, 300)}")
        try:
            return json.loads(body)
        except ValueError as exc:
            raise BackendError("The search API answered with something that is not JSON.") from exc

    async def _send(self, client: httpx.AsyncClient, path: str, payload: dict[str, Any]) -> tuple[int, bytes]:
        """The status and body of ``POST path``; a body past :data:`MAX_ANSWER_BYTES` is a
        :class:`BackendError` (it is not read further)."""
        request = client.build_request(
            "POST", self.base_url + path, json=payload, headers=self._headers(), timeout=self.timeout_s
        )
        response = await client.send(request, stream=True)
        try:
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_ANSWER_BYTES:
                    raise BackendError(f"The search API answered more than {MAX_ANSWER_BYTES} bytes.")
            return response.status_code, bytes(body)
        finally:
            await response.aclose()


def _results(answer: Any) -> list[dict[str, Any]]:
    """The ``results`` list of an answer, each with a string ``url``; else :class:`BackendError`."""
    results = answer.get("results") if isinstance(answer, dict) else None
    if not isinstance(results, list) or not all(
        isinstance(item, dict) and isinstance(item.get("url"), str)
        and all(isinstance(item.get(key) or "", str) for key in ("title", "text", "format"))
        for item in results
    ):  # fmt: skip
        raise BackendError("The search API answered without a `results` list of {url, title, text}.")
    return results
