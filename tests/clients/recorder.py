"""What a client program sent: an ASGI middleware that keeps every HTTP request it passes on,
and a live server that has one.

``RequestRecorder`` wraps an app (``app.add_middleware(RequestRecorder, log=records)``
before the server starts) and appends a :class:`RecordedRequest` per HTTP request: its
method, path, headers, body (parsed as JSON where it is JSON), the answer's status and,
for an error, the answer's body; the request is passed on unchanged.
:class:`RecordedServer` is a live server over a scripted engine with such a log.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import httpx
from live import LiveServer, ScriptedEngine

from openchatml import load_encoding

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass
class RecordedRequest:
    """One HTTP request as it reached the server, and the status it was answered with."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    status: int | None = None
    error_body: bytes = field(default=b"", repr=False)

    def json(self) -> Any:
        """The body parsed as JSON (``None`` for an empty body)."""
        return json.loads(self.body) if self.body else None

    def summary(self) -> str:
        """``METHOD PATH -> STATUS`` and, for an error, the answer's body."""
        line = f"{self.method} {self.path} -> {self.status}"
        return f"{line}: {self.error_body.decode(errors='replace')}" if self.error_body else line


class RequestRecorder:
    """ASGI middleware: records each HTTP request into ``log``, then passes it on."""

    def __init__(self, app: ASGIApp, log: list[RecordedRequest]) -> None:
        self.app = app
        self.log = log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        received: list[Message] = []
        body = b""
        while True:
            message = await receive()
            received.append(message)
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
        record = RecordedRequest(scope["method"], scope["path"], headers, body)
        self.log.append(record)
        pending = iter(received)

        async def replay() -> Message:
            return next(pending, None) or await receive()

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                record.status = int(message["status"])
            elif message["type"] == "http.response.body" and (record.status or 200) >= 400:
                record.error_body += message.get("body", b"")
            await send(message)

        await self.app(scope, replay, watch)


@dataclass
class RecordedServer:
    """A live server over a scripted engine, with every HTTP request it got."""

    server: LiveServer
    engine: ScriptedEngine
    requests: list[RecordedRequest]

    @property
    def url(self) -> str:
        return self.server.url

    def responses_requests(self) -> list[RecordedRequest]:
        """The ``POST /v1/responses`` requests, in order."""
        return [r for r in self.requests if r.method == "POST" and r.path == "/v1/responses"]

    def prompt_texts(self) -> list[str]:
        """The engine's prompts as text, in order (the server's own requests, such as a
        reasoning summary's, among them)."""
        encoding = load_encoding()
        return [encoding.decode(prompt) for prompt in self.engine.prompts]

    def report(self) -> str:
        """Every request and its status, for an assertion's message."""
        return "\n".join(r.summary() for r in self.requests) or "(no request reached the server)"


def metric_samples(text: str, name: str, having: str = "") -> dict[str, float]:
    """The non-zero samples of the Prometheus metric ``name`` whose labels hold ``having``,
    by their labels."""
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith(name + "{") and having in line:
            labels, value = line[len(name) :].rsplit(" ", 1)
            if float(value):
                samples[labels] = float(value)
    return samples


def check_every_response_completed(url: str) -> None:
    """The server at ``url`` answered every ``/v1/responses`` request 200 and every
    response it ran completed (its ``/metrics``)."""
    metrics = httpx.get(f"{url}/metrics", timeout=10).text
    answered = metric_samples(metrics, "openchatml_http_requests_total", 'route="/v1/responses"')
    assert answered and all('status="200"' in labels for labels in answered), metrics
    finished = metric_samples(metrics, "openchatml_responses_total")
    assert finished and all('status="completed"' in labels for labels in finished), metrics
