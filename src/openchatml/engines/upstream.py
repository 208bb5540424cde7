"""An engine over an upstream completions server that takes and returns token ids.

Theory of operation: ``generate`` POSTs the prompt ids with ``stream: true`` and reads the
server-sent events as bytes, splitting lines itself and decoding each ``data:`` payload
with orjson; from each event it takes only the sampled ids. Two wire dialects
(``flavor``):

``vllm``
    ``POST /v1/completions`` with ``return_token_ids: true`` (vLLM >= 0.10.2); each
    streamed choice carries the new ids in ``token_ids``, the last one a
    ``finish_reason``, and the stream ends with ``data: [DONE]``. Log probabilities:
    ``logprobs: k`` with ``return_tokens_as_token_ids: true``; ``choices[0].logprobs``
    then holds ``token_logprobs`` (one per id) and ``top_logprobs`` (one
    ``{"token_id:N": logprob}`` object per id: the sampled id and the ``k`` most likely,
    of which the ``k`` best are kept). vLLM reports the raw model distribution.
``llamacpp``
    llama-server's own ``POST /completion`` with ``return_tokens: true``; each event
    carries ``tokens`` (the ids sampled since the last event), ``tokens_predicted`` and
    ``stop``. The body sets llama.cpp's samplers to the raw distribution (``top_k`` 0,
    ``min_p`` 0, no repeat penalty: its defaults cut it) and always a ``seed`` (one is
    drawn when none is given). llama-server streams a token only once the text so far
    ends on a whole UTF-8 character, so the id of a token that ends inside one never
    reaches the stream, though ``tokens_predicted`` counts it; at such a gap the engine
    asks again without streaming (same prompt, seed and sampling: the same ids, checked
    against those already seen), fills the gap, and resumes with a new stream from there
    (prompt and ids so far, the seed moved on: each replay covers only the ids since the
    last gap). Its stop ids are its end-of-generation ids (gpt-oss: ``<|return|>``,
    ``<|call|>``); others are enforced here. The context is a slot's (``/v1/models``
    ``meta.n_ctx``, else ``/props``). Log probabilities, best effort: ``n_probs`` (at
    least 1, as 0 turns them off); each event's ``completion_probabilities``
    (``{id, logprob, top_logprobs: [{id, logprob}]}``, a softmax of the raw logits) must
    match its ``tokens`` one for one, or the stream is malformed; llama-server reports
    none for the ids it leaves out, so with log probabilities asked for a gap is an
    error.

Stop ids and ``max_tokens`` are sent upstream and enforced here too, so a server that
ignores either still ends the stream after the stop id. When the consumer closes the
iterator, the HTTP response is closed with it: the connection drops and the server
aborts the request. Each request opens a connection of its own: reusing kept-alive
connections to vLLM's server after a burst of streams stalled new streams for seconds
(measured with ``bench/bench_server.py``), against a fraction of a millisecond to connect.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Sequence
from typing import Any, Final, Literal, cast

import httpx
import orjson

from ..templates.model_tokenizer import ModelTokenizer
from .base import Chunk, EngineError, ModelInfo, SamplingParams, TokenLogprob

Flavor = Literal["vllm", "llamacpp"]
FLAVORS: Final[frozenset[str]] = frozenset({"vllm", "llamacpp"})

_DONE: Final = b"[DONE]"
_MESSAGE_LIMIT: Final = 1000
_TOKEN_ID: Final = "token_id:"

_Scores = list[TokenLogprob] | None
"""The log probabilities of an event's ids; ``None`` when none were asked for."""
_Event = tuple[list[int], _Scores, bool]
"""One upstream event: its new ids, their log probabilities, whether it ends the generation."""
_JSON: Final = {"Content-Type": "application/json"}
_SEEDS: Final = 0xFFFFFFFF
"""llama.cpp's seeds are below this (itself means "draw one")."""


class UpstreamError(EngineError):
    """The upstream server failed: unreachable, a non-2xx answer, an error event or a
    malformed stream. ``status`` is the HTTP status where there was one."""

    def __init__(self, message: str, *, status: int | None = None, url: str = "") -> None:
        self.status = status
        self.url = url
        super().__init__(message)


def _normalize_base_url(base_url: str) -> str:
    root = base_url.strip().rstrip("/")
    if root.endswith("/v1"):
        root = root[:-3]
    if not root.startswith(("http://", "https://")):
        raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
    return root


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _MESSAGE_LIMIT else text[:_MESSAGE_LIMIT] + "…"


def _error_message(payload: object) -> str | None:
    """The message of an OpenAI-style error object (``{"error": {"message": …}}``,
    vLLM's older ``{"object": "error", "message": …}``, FastAPI's ``{"detail": …}``)."""
    if not isinstance(payload, dict):
        return None
    error = payload.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        return str(message) if message is not None else str(error)
    if isinstance(error, str):
        return error
    if payload.get("object") == "error" and "message" in payload:
        return str(payload["message"])
    detail = payload.get("detail")
    if detail is not None:
        return detail if isinstance(detail, str) else orjson.dumps(detail).decode()
    return None


def _body_message(body: bytes) -> str:
    try:
        message = _error_message(orjson.loads(body))
    except orjson.JSONDecodeError:
        message = None
    return _clip(message if message is not None else body.decode("utf-8", "replace")) or "(empty body)"


def _malformed(url: str, what: str, line: bytes) -> UpstreamError:
    shown = _clip(line.decode("utf-8", "replace"))
    return UpstreamError(f"malformed stream from upstream {url}: {what}: {shown}", url=url)


def _is_id_list(ids: object) -> bool:
    return type(ids) is list and all(type(t) is int for t in ids)


class UpstreamEngine:
    """An :class:`~openchatml.engines.Engine` backed by a vLLM or llama.cpp server.

    Build one with :meth:`connect`. ``generate`` streams the sampled ids; closing its
    iterator closes the HTTP stream, which cancels the request upstream. Raises
    :class:`UpstreamError` (an :class:`EngineError`) when the server fails. ``tokenizer``:
    the model's, for a model that does not speak Harmony (the server samples ids only).
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        info: ModelInfo,
        *,
        flavor: Flavor = "vllm",
        owns_client: bool = True,
        tokenizer: ModelTokenizer | None = None,
    ) -> None:
        if flavor not in FLAVORS:
            raise ValueError(f"flavor must be one of {sorted(FLAVORS)}, got {flavor!r}")
        self._client = client
        self._info = info
        self._flavor: Flavor = flavor
        self._owns_client = owns_client
        self._base = str(client.base_url).rstrip("/")
        self._tokenizer = tokenizer

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
    ) -> UpstreamEngine:
        """Open a pooled client to ``base_url`` (with or without ``/v1``), ask
        ``GET /v1/models`` for the model id and context window, and detect the flavor
        (``"vllm"`` or ``"llamacpp"``) unless one is given.

        ``model`` picks one of the served models (default: the first); ``tokenizer`` is
        its tokenizer (see the class docstring). Connecting has a ``connect_timeout``;
        streamed reads have none. Raises :class:`UpstreamError`
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
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=0),  # see the module notes
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
        except BaseException:
            await client.aclose()
            raise
        info = ModelInfo(id=str(entry["id"]), context_length=context, engine=chosen, device=root)
        return cls(client, info, flavor=chosen, tokenizer=tokenizer)

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
        """Whether the upstream server samples under ``SamplingParams.grammar``."""
        return False

    @property
    def flavor(self) -> Flavor:
        """The wire dialect: ``"vllm"`` or ``"llamacpp"``."""
        return self._flavor

    def generate(self, prompt: Sequence[int], params: SamplingParams) -> AsyncIterator[Chunk]:
        """Stream the ids sampled after ``prompt`` in chunks (with log probabilities when
        ``params.logprobs`` is set), ending after a stop id (which is yielded) or
        ``params.max_tokens`` ids. Raises :class:`UpstreamError`."""
        if self._flavor == "llamacpp":
            source = self._llamacpp_source(prompt, self._llamacpp_body(prompt, params), params.logprobs)
        else:
            source = self._vllm_source(self._vllm_body(prompt, params), params.logprobs)
        return self._stream(source, params)

    async def aclose(self) -> None:
        """Close the pooled HTTP client (if this engine opened it)."""
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> UpstreamEngine:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # --- request bodies ------------------------------------------------------------

    def _max_tokens(self, prompt: Sequence[int], params: SamplingParams) -> int | None:
        limit = params.max_tokens
        context = self._info.context_length
        if context is not None:
            room = max(1, context - len(prompt))
            limit = room if limit is None else min(limit, room)
        return limit

    def _vllm_body(self, prompt: Sequence[int], params: SamplingParams) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self._info.id,
            "prompt": list(prompt),
            "stream": True,
            "return_token_ids": True,
            "skip_special_tokens": False,
            "include_stop_str_in_output": True,
            "stop_token_ids": list(params.stop_token_ids),
            "temperature": params.temperature,
            "top_p": params.top_p,
            "presence_penalty": params.presence_penalty,
            "frequency_penalty": params.frequency_penalty,
        }
        limit = self._max_tokens(prompt, params)
        if limit is not None:
            body["max_tokens"] = limit
        if params.seed is not None:
            body["seed"] = params.seed
        if params.logprobs is not None:
            body["logprobs"] = params.logprobs
            body["return_tokens_as_token_ids"] = True
        body.update(params.extra)
        return body

    def _llamacpp_body(self, prompt: Sequence[int], params: SamplingParams) -> dict[str, Any]:
        limit = self._max_tokens(prompt, params)
        body: dict[str, Any] = {
            "prompt": list(prompt),
            "stream": True,
            "return_tokens": True,
            "n_predict": -1 if limit is None else limit,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "top_k": 0,
            "min_p": 0.0,
            "repeat_penalty": 1.0,
            "presence_penalty": params.presence_penalty,
            "frequency_penalty": params.frequency_penalty,
            "cache_prompt": True,
        }
        # always a seed, so that a replay samples the same ids (see _llamacpp_source)
        seed = params.seed if params.seed is not None else secrets.randbelow(_SEEDS)
        body["seed"] = seed % _SEEDS
        if params.logprobs is not None:
            body["n_probs"] = max(params.logprobs, 1)
            body["post_sampling_probs"] = False
        body.update(params.extra)
        return body

    # --- the stream ----------------------------------------------------------------

    async def _stream(self, source: AsyncGenerator[_Event], params: SamplingParams) -> AsyncIterator[Chunk]:
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
        request = self._client.build_request("POST", path, content=orjson.dumps(body), headers=_JSON)
        try:
            response = await self._client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise UpstreamError(f"cannot reach upstream {url}: {exc!r}", url=url) from exc
        try:
            if response.status_code >= 400:
                raw = await response.aread()
                raise UpstreamError(
                    f"upstream {url} answered {response.status_code}: {_body_message(raw)}",
                    status=response.status_code,
                    url=url,
                )
            yield response
        except httpx.HTTPError as exc:
            raise UpstreamError(f"upstream {url} stream failed: {exc!r}", url=url) from exc
        finally:
            await response.aclose()

    async def _vllm_source(self, body: dict[str, Any], top: int | None) -> AsyncGenerator[_Event]:
        url = self._base + "/v1/completions"
        async with self._open("/v1/completions", body) as response:
            async for payload in _data_payloads(response, url):
                yield _vllm_event(payload, url, top)

    async def _llamacpp_source(
        self, prompt: Sequence[int], body: dict[str, Any], top: int | None
    ) -> AsyncGenerator[_Event]:
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
        No probabilities come back for those ids, streamed or not: with ``top`` set, a
        gap is an :class:`UpstreamError`.
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
                async for payload in _data_payloads(response, url):
                    ids, scores, done, predicted = _llamacpp_event(payload, url, top)
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
            filled, ended = await self._llamacpp_replay(request, known[origin:], ids, predicted)
            known.extend(filled)
            known.extend(ids)
            if done or ended or 0 <= budget <= len(known):
                yield [*filled, *ids], None, True
                return
            yield [*filled, *ids], None, False

    async def _llamacpp_replay(
        self, request: dict[str, Any], seen: list[int], last: list[int], predicted: int
    ) -> tuple[list[int], bool]:
        """The ids ``request`` sampled between ``seen`` and ``last`` (its first
        ``predicted`` ids, asked again without streaming), and whether the generation ended
        there on an end-of-generation id. Raises :class:`UpstreamError` when the answer
        does not agree with the ids already seen."""
        url = self._base + "/completion"
        answer = await self._post_json("/completion", {**request, "stream": False, "n_predict": predicted})
        tokens = cast(list[int], answer.get("tokens") if isinstance(answer, dict) else None)
        if (
            not _is_id_list(tokens)
            or len(tokens) != predicted
            or tokens[: len(seen)] != seen
            or tokens[predicted - len(last) :] != last
        ):
            raise UpstreamError(
                f"upstream {url} left {predicted - len(seen) - len(last)} token id(s) out of its stream "
                "(tokens that end inside a UTF-8 character) and asked again without streaming, it "
                "sampled other ids: the ids cannot be recovered",
                url=url,
            )
        ended = answer.get("stop_type") == "eos"
        return tokens[len(seen) : predicted - len(last)], ended

    async def _post_json(self, path: str, body: dict[str, Any]) -> Any:
        url = self._base + path
        try:
            response = await self._client.post(path, content=orjson.dumps(body), headers=_JSON)
        except httpx.HTTPError as exc:
            raise UpstreamError(f"cannot reach upstream {url}: {exc!r}", url=url) from exc
        return _json_answer(response, url)


async def _data_payloads(response: httpx.Response, url: str) -> AsyncIterator[bytes]:
    """The payloads of a server-sent event stream's ``data:`` lines (comments and other
    fields skipped); an ``error:`` line is an :class:`UpstreamError`, and so is a last
    line left unterminated."""
    pending = b""
    async for data in response.aiter_bytes():
        if pending:
            data = pending + data
        lines = data.split(b"\n")
        pending = lines.pop()
        for line in lines:
            if line.startswith(b"data:"):
                yield line[5:]
            elif line.startswith(b"error:"):
                raise UpstreamError(f"upstream {url} reported an error: {_body_message(line[6:])}", url=url)
    if pending.strip():
        raise _malformed(url, "unterminated line at the end of the stream", pending)


def _moved_seed(seed: int, position: int) -> int:
    """The seed of a stream resumed after ``position`` ids: another, fixed by both."""
    return (seed + position * 0x9E3779B1) % _SEEDS


def _vllm_event(payload: bytes, url: str, top: int | None) -> _Event:
    """The ids in one vLLM ``data:`` payload, their log probabilities (with ``top``
    alternatives each; ``None`` when ``top`` is) and whether it ends the generation."""
    try:
        event = orjson.loads(payload)
    except orjson.JSONDecodeError:
        if payload.strip() == _DONE:
            return [], None, True
        raise _malformed(url, "data is not JSON", payload) from None
    try:
        choices = event["choices"]
        if choices:
            choice = choices[0]
            ids = choice["token_ids"]
            if type(ids) is list:
                for t in ids:
                    if type(t) is not int:
                        break
                else:
                    done = choice.get("finish_reason") is not None
                    if top is None:
                        return ids, None, done
                    return ids, _vllm_scores(choice.get("logprobs"), ids, top, url, payload), done
        elif type(choices) is list:
            return [], None if top is None else [], False
    except (KeyError, TypeError, IndexError, AttributeError):
        pass
    _raise_error_event(event, url)
    raise _malformed(
        url, "no list of ids in choices[0].token_ids (the server must honour return_token_ids)", payload
    )


def _vllm_scores(block: Any, ids: list[int], top: int, url: str, payload: bytes) -> list[TokenLogprob]:
    """The log probabilities of ``ids`` in a choice's ``logprobs`` (``token_id:N`` keys)."""
    if not ids:
        return []
    try:
        logprobs = block["token_logprobs"]
        tops = block["top_logprobs"]
        if len(logprobs) != len(ids) or len(tops) != len(ids):
            raise ValueError("one record per id")
        return [
            TokenLogprob(token, float(logprob), _best(((_token_id(k), v) for k, v in alts.items()), top))
            for token, logprob, alts in zip(ids, logprobs, tops, strict=True)
        ]
    except (KeyError, TypeError, ValueError, AttributeError):
        raise _malformed(
            url,
            "no log probability per id in choices[0].logprobs (the server must honour logprobs "
            "and return_tokens_as_token_ids)",
            payload,
        ) from None


def _token_id(key: str) -> int:
    if not key.startswith(_TOKEN_ID):
        raise ValueError(f"not a token id: {key!r}")
    return int(key[len(_TOKEN_ID) :])


def _best(pairs: Iterable[tuple[Any, Any]], top: int) -> tuple[tuple[int, float], ...]:
    """The ``top`` most likely ``(id, logprob)`` pairs, most likely first."""
    ranked = sorted(((int(t), float(lp)) for t, lp in pairs), key=lambda pair: -pair[1])
    return tuple(ranked[:top])


def _llamacpp_scores(entries: Any, ids: list[int], top: int, url: str, payload: bytes) -> list[TokenLogprob]:
    """The log probabilities of ``ids`` in an event's ``completion_probabilities``."""
    try:
        if len(entries) != len(ids):
            raise ValueError("one record per id")
        scores = []
        for token, entry in zip(ids, entries, strict=True):
            if entry["id"] != token:
                raise ValueError("ids differ")
            alts = ((alt["id"], alt["logprob"]) for alt in entry["top_logprobs"])
            scores.append(TokenLogprob(token, float(entry["logprob"]), _best(alts, top)))
        return scores
    except (KeyError, TypeError, ValueError, AttributeError):
        raise _malformed(
            url,
            "no completion_probabilities entry {id, logprob, top_logprobs} per id in 'tokens' "
            "(llama-server must honour n_probs)",
            payload,
        ) from None


def _llamacpp_event(payload: bytes, url: str, top: int | None) -> tuple[list[int], _Scores, bool, int | None]:
    """The ids in one llama-server ``data:`` payload, their log probabilities (with
    ``top`` alternatives each; ``None`` when ``top`` is), whether it ends the generation,
    and its ``tokens_predicted`` (the ids sampled so far, those left out of the stream
    included; ``None`` where the server does not say)."""
    try:
        event = orjson.loads(payload)
    except orjson.JSONDecodeError:
        raise _malformed(url, "data is not JSON", payload) from None
    _raise_error_event(event, url)
    if type(event) is not dict:
        raise _malformed(url, "data is not a JSON object", payload)
    predicted = event.get("tokens_predicted")
    if type(predicted) is not int:
        predicted = None
    if event.get("stop") is True:  # streamed, the last event repeats no ids
        return [], None if top is None else [], True, predicted
    ids = event.get("tokens")
    if not _is_id_list(ids):
        raise _malformed(url, "no 'tokens' list (llama.cpp needs return_tokens)", payload)
    ids = cast(list[int], ids)
    if top is None:
        return ids, None, False, predicted
    scores = _llamacpp_scores(event.get("completion_probabilities"), ids, top, url, payload) if ids else []
    return ids, scores, False, predicted


def _raise_error_event(event: object, url: str) -> None:
    if isinstance(event, dict) and (event.get("error") is not None or event.get("object") == "error"):
        message = _clip(_error_message(event) or str(event))
        raise UpstreamError(f"upstream {url} reported an error: {message}", url=url)


# --- connect helpers --------------------------------------------------------------------


def _json_answer(response: httpx.Response, url: str) -> Any:
    """The JSON body of a 2xx answer; an :class:`UpstreamError` for any other."""
    if response.status_code >= 400:
        raise UpstreamError(
            f"upstream {url} answered {response.status_code}: {_body_message(response.content)}",
            status=response.status_code,
            url=url,
        )
    try:
        return orjson.loads(response.content)
    except orjson.JSONDecodeError:
        raise _malformed(url, "the answer is not JSON", response.content) from None


async def _get_json(client: httpx.AsyncClient, path: str, timeout: float) -> Any:
    url = f"{str(client.base_url).rstrip('/')}{path}"
    try:
        response = await client.get(path, timeout=timeout)
    except httpx.HTTPError as exc:
        raise UpstreamError(f"cannot reach upstream {url}: {exc!r}", url=url) from exc
    return _json_answer(response, url)


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
