"""Server test helpers: a scripted engine, and a live server on loopback.

``ScriptedEngine`` plays back the token ids of assistant messages written with the
codec (so a test knows exactly what the model "said"), with log probabilities derived
from the ids (``scripted_logprob``) when asked for; ``LiveServer`` runs the real app
under uvicorn in a thread, for the official ``openai`` SDK and raw HTTP clients.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from openchatml import Message, Renderer
from openchatml.engines.base import Chunk, ModelInfo, SamplingParams, TokenLogprob
from openchatml.responses.crypto import Sealer
from openchatml.server.app import create_app
from openchatml.server.service import ResponseService
from openchatml.server.settings import ServiceSettings
from openchatml.server.store.sqlite import SQLiteStore
from openchatml.templates.model_tokenizer import ModelTokenizer

sys.path.insert(0, str(Path(__file__).parents[1] / "responses"))

KEY = bytes(range(32))


def completion(*messages: Message) -> list[int]:
    """The ids a model samples to say ``messages`` after ``<|start|>assistant``."""
    renderer = Renderer()
    ids: list[int] = []
    for message in messages:
        ids += renderer.message_tokens(message)
    if messages and not messages[-1].is_tool_call:
        ids[-1] = 200002  # <|return|> ends a final answer
    return ids[2:]  # the prompt already holds <|start|>assistant


def scripted_logprob(token: int, top: int) -> TokenLogprob:
    """The record ``ScriptedEngine`` gives ``token``: log probability ``-(token % 13) / 4``;
    alternatives ``token``, ``token + 1``, … each 0.5 less likely than the one before."""
    logprob = -(token % 13) / 4
    return TokenLogprob(token, logprob, tuple((token + j, logprob - j / 2) for j in range(top)))


class ScriptedEngine:
    """An engine that samples a script: ``script(prompt)`` gives the ids to play back;
    ``tokenizer``: the model's (``None``: Harmony). ``enforces_grammar``: whether it stands
    for an engine that samples under the request's grammar (a script that keeps to it):
    the server then streams calls as they come instead of holding each until it is checked."""

    def __init__(
        self,
        script: Callable[[Sequence[int]], list[int]] | list[int],
        *,
        chunk: int = 3,
        delay: float = 0.0,
        context_length: int = 8192,
        tokenizer: ModelTokenizer | None = None,
        enforces_grammar: bool = False,
    ) -> None:
        self.script = script if callable(script) else (lambda prompt, ids=list(script): ids)
        self.tokenizer = tokenizer
        self.enforces_grammar = enforces_grammar
        self.chunk = chunk
        self.delay = delay
        self.prompts: list[list[int]] = []
        self.params: list[SamplingParams] = []
        self.cancelled = 0
        self._info = ModelInfo(id="scripted-model", context_length=context_length, engine="scripted")

    @property
    def info(self) -> ModelInfo:
        return self._info

    async def generate(self, prompt: Sequence[int], params: SamplingParams) -> AsyncIterator[Chunk]:
        self.prompts.append(list(prompt))
        self.params.append(params)
        ids = self.script(prompt)
        if params.max_tokens is not None:
            ids = ids[: params.max_tokens]
        finished = False
        try:
            for start in range(0, len(ids), self.chunk):
                if self.delay:
                    await asyncio.sleep(self.delay)
                piece = ids[start : start + self.chunk]
                stop = next((i for i, t in enumerate(piece) if t in params.stop_token_ids), None)
                if stop is not None:
                    piece = piece[: stop + 1]
                top = params.logprobs
                yield Chunk(
                    tuple(piece), None if top is None else tuple(scripted_logprob(t, top) for t in piece)
                )
                if stop is not None:
                    break
            finished = True
        finally:
            if not finished:
                self.cancelled += 1

    async def aclose(self) -> None:
        return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Clients:
    """Clients of a server at ``self.url``."""

    url: str

    def client(self, api_key: str = "none", **options: Any) -> Any:
        """The official openai SDK pointed at this server."""
        import openai

        return openai.OpenAI(base_url=f"{self.url}/v1", api_key=api_key, max_retries=0, **options)

    def http(self, **options: Any) -> httpx.Client:
        """A raw HTTP client."""
        return httpx.Client(base_url=self.url, timeout=120, **options)


class LiveServer(Clients):
    """The app under uvicorn in a thread, on a free loopback port."""

    def __init__(self, service: ResponseService, **app_options: Any) -> None:
        self.service = service
        self.app = create_app(service, **app_options)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server = uvicorn.Server(
            uvicorn.Config(
                self.app,
                host="127.0.0.1",
                port=self.port,
                log_level="warning",
                **self.app.state.limits.uvicorn_options(),
            )
        )
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=20)


def make_service(
    engine: Any, store: Path | str | None = None, *, settings: ServiceSettings | None = None
) -> ResponseService:
    """A service over ``engine`` with a SQLite file (a path), a PostgreSQL URL, or no store."""
    backend: Any = None
    if isinstance(store, Path):
        backend = SQLiteStore(store)
    elif isinstance(store, str):
        from openchatml.server.store.postgres import PostgresStore

        backend = PostgresStore(store)
    return ResponseService(engine, backend, sealer=Sealer(KEY), settings=settings)
