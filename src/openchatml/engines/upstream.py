"""An engine over an upstream completions server that takes and returns token ids.

Theory of operation: ``generate`` POSTs the prompt ids with ``stream: true`` and reads the
server-sent events as bytes, splitting lines itself and decoding each ``data:`` payload
with orjson; from each event it takes only the sampled ids. Two wire dialects
(``flavor``): ``vllm`` (``POST /v1/completions`` with ``return_token_ids``, vLLM >=
0.10.2) and ``llamacpp`` (llama-server's own ``POST /completion`` with ``return_tokens``);
the request bodies are built in :mod:`.upstream_requests`, the events read in
:mod:`.upstream_events`.
vLLM reports log probabilities of the raw model distribution; llama-server a softmax of the
raw logits, best effort.

A request's grammar (``SamplingParams.grammar``) goes upstream where the server enforces
grammars: :meth:`UpstreamEngine.connect` asks it once, with a one-token request under a
trivial grammar; a server that refuses (another server, an older version, a vLLM whose
structured-output backend cannot read llguidance's Lark) is logged at start-up and gets no
grammars, whose requests' output is then checked after parsing only. A server that answers
a grammar with an error during a generation is an :class:`UpstreamError`.

llama-server streams a token only once the text so far ends on a whole UTF-8 character,
so the id of a token that ends inside one never reaches the stream, though
``tokens_predicted`` counts it; at such a gap the engine asks again without streaming
(same prompt, seed and sampling: the same ids, checked against those already seen), fills
the gap, and resumes with a new stream from there (prompt and ids so far, the seed moved
on: each replay covers only the ids since the last gap; under a grammar, which a new
stream would start over, the replay asks for the rest of the generation at once). Its
stop ids are its end-of-generation ids (gpt-oss: ``<|return|>``, ``<|call|>``); others
are enforced here. The context is a slot's (``/v1/models`` ``meta.n_ctx``, else
``/props``). llama-server reports no log probabilities for the ids it leaves out, so with
log probabilities asked for a gap is an error.

Stop ids and ``max_tokens`` are sent upstream and enforced here too, so a server that
ignores either still ends the stream after the stop id. When the consumer closes the
iterator, the HTTP response is closed with it: the connection drops and the server
aborts the request.

Each request opens a connection of its own (:data:`KEPT_ALIVE` is 0): with kept-alive
connections reused, ``bench/bench_server.py`` against vLLM 0.32 (CPU) at 16 streams saw
63 of 80 requests stall (TTFT p50 1.9 s, 0.30× raw throughput), against none of 48 and
0.88× with a connection per request; a connect costs a fraction of a millisecond on the
streams' scale. A connection that
cannot be opened (refused, the connect timed out on a server too busy to accept, no room
in the pool) is tried again with a growing pause until ``connect_deadline`` has passed
since the request began, and one the server dropped before answering (a kept-alive
connection it had closed) is tried again :data:`DROPPED_RETRIES` times at most; nothing
of the request was read in either case. Then the request fails with an
:class:`UpstreamError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any, Final, cast

import httpx
import orjson

from ..templates.model_tokenizer import ModelTokenizer
from .base import Chunk, ModelInfo, SamplingParams
from .upstream_events import (
    Event,
    UpstreamError,
    body_message,
    data_payloads,
    is_id_list,
    json_answer,
    llamacpp_event,
    vllm_event,
)
from .upstream_requests import (
    FLAVORS,
    HARMONY_RESERVED,
    PROBE_DIGITS,
    SEEDS,
    Flavor,
    llamacpp_body,
    probe_body,
    probe_text,
    token_limit,
    vllm_body,
)

JSON_HEADERS: Final = {"Content-Type": "application/json"}
KEPT_ALIVE: Final = 0
"""How many idle connections the pool keeps: none (see the module notes)."""
CONNECT_DEADLINE: Final = 30.0
"""How long a request keeps trying to open a connection (each try within ``connect_timeout``)."""
DROPPED_RETRIES: Final = 2
"""How many times a request the server dropped before answering is sent again."""
FIRST_PAUSE: Final = 0.05
"""The pause before the second try to connect; each later one doubles, up to :data:`LONGEST_PAUSE`."""
LONGEST_PAUSE: Final = 1.0
_UNSENT: Final = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
"""Failures to get a connection: nothing of the request reached the server."""
_DROPPED: Final = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)
"""Failures before any answer: a kept-alive connection the server had closed."""

_log = logging.getLogger(__name__)


def _normalize_base_url(base_url: str) -> str:
    root = base_url.strip().rstrip("/")
    if root.endswith("/v1"):
        root = root[:-3]
    if not root.startswith(("http://", "https://")):
        raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
    return root


class UpstreamEngine:
    """An :class:`~openchatml.engines.Engine` backed by a vLLM or llama.cpp server.

    Build one with :meth:`connect`. ``generate`` streams the sampled ids; closing its
    iterator closes the HTTP stream, which cancels the request upstream. Raises
    :class:`UpstreamError` (an :class:`EngineError`) when the server fails. ``tokenizer``:
    the model's, for a model that does not speak Harmony (the server samples ids only).
    ``enforces_grammar``: whether the server samples under the grammars it is sent (the
    probe of :meth:`connect` finds out); else grammars are left out of the requests.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        info: ModelInfo,
        *,
        flavor: Flavor = "vllm",
        owns_client: bool = True,
        tokenizer: ModelTokenizer | None = None,
        enforces_grammar: bool = False,
        connect_deadline: float = CONNECT_DEADLINE,
    ) -> None:
        if flavor not in FLAVORS:
            raise ValueError(f"flavor must be one of {sorted(FLAVORS)}, got {flavor!r}")
        self._client = client
        self._info = info
        self._flavor: Flavor = flavor
        self._owns_client = owns_client
        self._base = str(client.base_url).rstrip("/")
        self._tokenizer = tokenizer
        self._enforces_grammar = enforces_grammar
        self._connect_deadline = connect_deadline

    @classmethod
    async def connect(
        cls,
        base_url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        flavor: str = "auto",
        connect_timeout: float = 10.0,
        request_timeout: float = 30.0,
        tokenizer: ModelTokenizer | None = None,
        connect_deadline: float = CONNECT_DEADLINE,
    ) -> UpstreamEngine:
        """Open a pooled client to ``base_url`` (with or without ``/v1``), ask
        ``GET /v1/models`` for the model id and context window, detect the flavor
        (``"vllm"`` or ``"llamacpp"``) unless one is given, and probe once whether the
        server enforces grammars (:mod:`.upstream_requests`); one that does not is logged
        as a warning (grammars are then checked after parsing only).

        ``model`` picks one of the served models (default: the first); ``tokenizer`` is
        its tokenizer (see the class docstring). Connecting has a ``connect_timeout``, the
        model listing and the probe a ``request_timeout``; streamed reads have none. A
        generation keeps trying to connect for ``connect_deadline`` seconds (see the module
        notes); the model listing tries once. Raises :class:`UpstreamError`
        when the server is unreachable, answers an error, or does not serve ``model``;
        ``ValueError`` for a bad ``base_url`` or ``flavor``.
        """
        if flavor != "auto" and flavor not in FLAVORS:
            raise ValueError(f"flavor must be 'auto' or one of {sorted(FLAVORS)}, got {flavor!r}")
        root = _normalize_base_url(base_url)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        client = httpx.AsyncClient(
            base_url=root,
            headers=headers,
            timeout=httpx.Timeout(None, connect=connect_timeout),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=KEPT_ALIVE),
        )
        try:
            listing = await _get_json(client, "/v1/models", request_timeout)
            entry = _pick_model(listing, model, root)
            chosen: Flavor = cast(Flavor, flavor) if flavor != "auto" else _detect_flavor(entry)
            context = _context_length(entry)
            if chosen == "llamacpp":
                context = _positive(_meta(entry).get("n_ctx")) or (
                    await _llamacpp_context(client, request_timeout) or context
                )
            info = ModelInfo(id=str(entry["id"]), context_length=context, engine=chosen, device=root)
            refusal = await _grammar_refusal(client, chosen, info.id, request_timeout)
        except BaseException:
            await client.aclose()
            raise
        if refusal:
            _log.warning(
                "upstream %s (%s) does not enforce grammars (%s): tool choices and output schemas "
                "are checked after parsing only",
                root,
                chosen,
                refusal,
            )
        return cls(
            client,
            info,
            flavor=chosen,
            tokenizer=tokenizer,
            enforces_grammar=not refusal,
            connect_deadline=connect_deadline,
        )

    @property
    def info(self) -> ModelInfo:
        """The upstream model: its id, context window, flavor (``engine``) and URL."""
        return self._info

    @property
    def tokenizer(self) -> ModelTokenizer | None:
        """The model's tokenizer, when it was given one."""
        return self._tokenizer

    @property
    def enforces_grammar(self) -> bool:
        """Whether the upstream server samples under ``SamplingParams.grammar`` (else
        ``generate`` leaves the grammar out)."""
        return self._enforces_grammar

    @property
    def flavor(self) -> Flavor:
        """The wire dialect: ``"vllm"`` or ``"llamacpp"``."""
        return self._flavor

    def generate(self, prompt: Sequence[int], params: SamplingParams) -> AsyncIterator[Chunk]:
        """Stream the ids sampled after ``prompt`` in chunks (with log probabilities when
        ``params.logprobs`` is set), ending after a stop id (which is yielded) or
        ``params.max_tokens`` ids; under ``params.grammar`` where the server enforces
        grammars. Raises :class:`UpstreamError` (an upstream that refuses the grammar
        included)."""
        limit = token_limit(prompt, params, self._info.context_length)
        grammar = params.grammar if self._enforces_grammar else None
        if self._flavor == "llamacpp":
            unnamed = HARMONY_RESERVED if self._tokenizer is None else ()
            body = llamacpp_body(prompt, params, limit, grammar, unnamed)
            source = self._llamacpp_source(prompt, body, params.logprobs)
        else:
            source = self._vllm_source(
                vllm_body(self._info.id, prompt, params, limit, grammar), params.logprobs
            )
        return self._stream(source, params)

    async def aclose(self) -> None:
        """Close the pooled HTTP client (if this engine opened it)."""
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> UpstreamEngine:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # --- the stream ----------------------------------------------------------------

    async def _stream(self, source: AsyncGenerator[Event], params: SamplingParams) -> AsyncIterator[Chunk]:
        """Chunks of the ids ``source`` reports, cut after the first stop id or at
        ``params.max_tokens``. The last chunk is held until the upstream stream is closed."""
        stops = frozenset(params.stop_token_ids)
        limit = params.max_tokens
        count = 0
        held: Chunk | None = None
        ended = False
        async with contextlib.aclosing(source):
            async for ids, scores, done in source:
                if ended:
                    continue  # read the stream to its end
                if held is not None:
                    if done:
                        ended = True
                    elif ids:
                        break  # the upstream goes on past our stop: close it
                    continue
                if not ids:
                    ended = done
                    continue
                hit = False
                end = len(ids)
                if stops and not stops.isdisjoint(ids):
                    end = next(i for i, t in enumerate(ids) if t in stops) + 1
                    hit = True
                if limit is not None and count + end >= limit:
                    end = limit - count
                    hit = True
                chunk = Chunk(tuple(ids[:end]), None if scores is None else tuple(scores[:end]))
                count += len(chunk)
                if hit or done:
                    held = chunk
                    ended = done
                    continue
                yield chunk
        if held is None and not ended:
            url = self._base + ("/completion" if self._flavor == "llamacpp" else "/v1/completions")
            raise UpstreamError(f"upstream {url} closed the stream before the generation ended", url=url)
        if held:
            yield held

    @contextlib.asynccontextmanager
    async def _open(self, path: str, body: dict[str, Any]) -> AsyncIterator[httpx.Response]:
        """POST ``body`` to ``path`` and hand over the streamed response (2xx only); the
        response is closed at exit, which drops the connection and so cancels the request."""
        url = self._base + path
        response = await self._send(self._client.build_request("POST", path, content=orjson.dumps(body)))
        try:
            if response.status_code >= 400:
                raw = await response.aread()
                raise UpstreamError(
                    f"upstream {url} answered {response.status_code}: {body_message(raw)}",
                    status=response.status_code,
                    url=url,
                )
            yield response
        except httpx.HTTPError as exc:
            raise UpstreamError(f"upstream {url} stream failed: {exc!r}", url=url) from exc
        finally:
            await response.aclose()

    async def _vllm_source(self, body: dict[str, Any], top: int | None) -> AsyncGenerator[Event]:
        url = self._base + "/v1/completions"
        async with self._open("/v1/completions", body) as response:
            async for payload in data_payloads(response, url):
                yield vllm_event(payload, url, top)

    async def _llamacpp_source(
        self, prompt: Sequence[int], body: dict[str, Any], top: int | None
    ) -> AsyncGenerator[Event]:
        """llama-server's events, with the ids it leaves out of its stream filled in.

        llama-server streams a token only once the text so far ends on a whole UTF-8
        character: the id of a token that ends inside one never reaches the stream (its
        non-streamed answer has every id), and the event that completes the character
        carries its own id alone, with a ``tokens_predicted`` that counts both. At such
        an event this closes the stream and asks llama-server for the same request again
        without streaming, up to that event (same prompt, seed and sampling: the same
        ids), checks that the answer agrees with every id already seen, yields the
        missing ones, and goes on with a new stream from there (prompt and ids so far,
        the seed moved on), so that each replay covers only the ids since the last one.
        Under a grammar a new stream would start the grammar over: there the replay asks
        for the whole generation and yields the rest of it at once. No probabilities come
        back for those ids, streamed or not: with ``top`` set, a gap is an
        :class:`UpstreamError`.
        """
        url = self._base + "/completion"
        budget: int = body["n_predict"]
        seed: int = body["seed"]
        known: list[int] = []  # every id of this generation so far
        while True:
            origin = len(known)
            request = body
            if origin:
                request = {**body, "prompt": [*prompt, *known], "seed": _moved_seed(seed, origin)}
                request["n_predict"] = -1 if budget < 0 else budget - origin
            gap: tuple[list[int], bool, int] | None = None
            async with self._open("/completion", request) as response:
                async for payload in data_payloads(response, url):
                    ids, scores, done, predicted = llamacpp_event(payload, url, top)
                    seen = len(known) - origin
                    if predicted is not None and predicted > seen + len(ids):
                        gap = ids, done, predicted
                        break
                    known.extend(ids)
                    yield ids, scores, done
                    if done:
                        return
            if gap is None:
                return  # the stream ended without a stop event: _stream says so
            ids, done, predicted = gap
            missing = predicted - (len(known) - origin) - len(ids)
            if top is not None:
                raise UpstreamError(
                    f"upstream {url} left {missing} token id(s) out of its stream, and llama-server "
                    "reports no log probabilities for them (tokens that end inside a UTF-8 character)",
                    url=url,
                )
            if "grammar" in request:  # the grammar holds from the start: never resumed
                rest, _ = await self._llamacpp_replay(request, known[origin:], ids, predicted, rest=True)
                yield rest, None, True
                return
            filled, ended = await self._llamacpp_replay(request, known[origin:], ids, predicted)
            known.extend(filled)
            known.extend(ids)
            if done or ended or 0 <= budget <= len(known):
                yield [*filled, *ids], None, True
                return
            yield [*filled, *ids], None, False

    async def _llamacpp_replay(
        self, request: dict[str, Any], seen: list[int], last: list[int], predicted: int, *, rest: bool = False
    ) -> tuple[list[int], bool]:
        """The ids ``request`` sampled between ``seen`` and ``last`` (its first
        ``predicted`` ids, asked again without streaming) — with ``rest``, every id after
        ``seen`` to the end of the generation — and whether the generation ended there on
        an end-of-generation id. Raises :class:`UpstreamError` when the answer does not
        agree with the ids already seen."""
        url = self._base + "/completion"
        limit = request["n_predict"] if rest else predicted
        answer = await self._post_json("/completion", {**request, "stream": False, "n_predict": limit})
        tokens = cast(list[int], answer.get("tokens") if isinstance(answer, dict) else None)
        if (
            not is_id_list(tokens)
            or len(tokens) < predicted
            or (len(tokens) != predicted and not rest)
            or tokens[: len(seen)] != seen
            or tokens[predicted - len(last) : predicted] != last
        ):
            raise UpstreamError(
                f"upstream {url} left {predicted - len(seen) - len(last)} token id(s) out of its stream "
                "(tokens that end inside a UTF-8 character) and asked again without streaming, it "
                "sampled other ids: the ids cannot be recovered",
                url=url,
            )
        ended = answer.get("stop_type") == "eos"
        return tokens[len(seen) : None if rest else predicted - len(last)], ended

    async def _post_json(self, path: str, body: dict[str, Any]) -> Any:
        request = self._client.build_request("POST", path, content=orjson.dumps(body))
        response = await self._send(request)
        try:
            await response.aread()
        except httpx.HTTPError as exc:
            raise UpstreamError(f"upstream {request.url} failed: {exc!r}", url=str(request.url)) from exc
        finally:
            await response.aclose()
        return json_answer(response, str(request.url))

    async def _send(self, request: httpx.Request) -> httpx.Response:
        """``request`` sent, its answer's head read (the body left to stream), with the
        retries of the module notes: a connection that cannot be opened is tried again
        until ``connect_deadline``, one dropped before any answer :data:`DROPPED_RETRIES`
        times. Raises :class:`UpstreamError` when they run out or another failure comes."""
        request.headers.update(JSON_HEADERS)
        began = time.monotonic()
        pause = FIRST_PAUSE
        tries = dropped = 0
        while True:
            tries += 1
            try:
                return await self._client.send(request, stream=True)
            except _UNSENT as exc:
                failure: httpx.HTTPError = exc
            except _DROPPED as exc:
                if dropped >= DROPPED_RETRIES:
                    raise _unreachable(request, exc, tries, began) from exc
                dropped += 1
                continue
            except httpx.HTTPError as exc:
                raise _unreachable(request, exc, tries, began) from exc
            left = began + self._connect_deadline - time.monotonic()
            if left <= 0:
                raise _unreachable(request, failure, tries, began) from failure
            await asyncio.sleep(min(pause, left))
            pause = min(2 * pause, LONGEST_PAUSE)


def _unreachable(request: httpx.Request, failure: httpx.HTTPError, tries: int, began: float) -> UpstreamError:
    """The error of a request that got no answer after ``tries`` tries since ``began``."""
    url = str(request.url)
    spent = time.monotonic() - began
    counted = f"{tries} {'try' if tries == 1 else 'tries'} in {spent:.1f} s"
    return UpstreamError(f"cannot reach upstream {url}: {failure!r} ({counted})", url=url)


def _moved_seed(seed: int, position: int) -> int:
    """The seed of a stream resumed after ``position`` ids: another, fixed by both."""
    return (seed + position * 0x9E3779B1) % SEEDS


# --- connect helpers --------------------------------------------------------------------


async def _grammar_refusal(client: httpx.AsyncClient, flavor: Flavor, model: str, timeout: float) -> str:
    """Why the server does not enforce grammars (``""``: it does): the probe of
    :mod:`.upstream_requests`, one request per digit."""
    for digit in PROBE_DIGITS:
        path, body = probe_body(flavor, model, digit)
        url = f"{str(client.base_url).rstrip('/')}{path}"
        try:
            response = await client.post(
                path, content=orjson.dumps(body), headers=JSON_HEADERS, timeout=timeout
            )
            text = probe_text(flavor, json_answer(response, url))
        except UpstreamError as exc:
            return str(exc)
        except httpx.HTTPError as exc:
            return f"cannot reach upstream {url}: {exc!r}"
        if text != digit:
            return f"asked for {digit!r} under a grammar, it answered {text!r}"
    return ""


async def _get_json(client: httpx.AsyncClient, path: str, timeout: float) -> Any:
    url = f"{str(client.base_url).rstrip('/')}{path}"
    try:
        response = await client.get(path, timeout=timeout)
    except httpx.HTTPError as exc:
        raise UpstreamError(f"cannot reach upstream {url}: {exc!r}", url=url) from exc
    return json_answer(response, url)


def _pick_model(listing: Any, model: str | None, root: str) -> dict[str, Any]:
    data = listing.get("data") if isinstance(listing, dict) else None
    entries = [e for e in data if isinstance(e, dict) and isinstance(e.get("id"), str)] if data else []
    if not entries:
        raise UpstreamError(f"upstream {root}/v1/models lists no model", url=root)
    if model is None:
        return entries[0]
    for entry in entries:
        if entry["id"] == model:
            return entry
    served = ", ".join(repr(e["id"]) for e in entries)
    raise UpstreamError(f"upstream {root} does not serve model {model!r} (it serves {served})", url=root)


def _detect_flavor(entry: dict[str, Any]) -> Flavor:
    if entry.get("owned_by") == "llamacpp" or isinstance(entry.get("meta"), dict):
        return "llamacpp"
    return "vllm"


def _positive(value: object) -> int | None:
    return value if type(value) is int and value > 0 else None


def _meta(entry: dict[str, Any]) -> dict[str, Any]:
    meta = entry.get("meta")
    return meta if isinstance(meta, dict) else {}


def _context_length(entry: dict[str, Any]) -> int | None:
    """vLLM's ``max_model_len``, else llama-server's ``meta.n_ctx_train`` (the model's
    window; a slot's own, ``meta.n_ctx``, is asked for apart)."""
    return _positive(entry.get("max_model_len")) or _positive(_meta(entry).get("n_ctx_train"))


async def _llamacpp_context(client: httpx.AsyncClient, timeout: float) -> int | None:
    """llama-server's running context size (``/props``), best effort."""
    try:
        props = await _get_json(client, "/props", timeout)
    except UpstreamError:
        return None
    settings = props.get("default_generation_settings") if isinstance(props, dict) else None
    value = settings.get("n_ctx") if isinstance(settings, dict) else None
    return value if type(value) is int and value > 0 else None
