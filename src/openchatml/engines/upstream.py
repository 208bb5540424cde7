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
    carries ``tokens`` (the ids sampled since the last event) and ``stop``. Log
    probabilities, best effort: ``n_probs`` (at least 1, as 0 turns them off); each
    event's ``completion_probabilities`` (llama-server's format since late 2024:
    ``{id, logprob, top_logprobs: [{id, logprob}]}``, a softmax of the raw logits) must
    match its ``tokens`` one for one, or the stream is malformed.

Stop ids and ``max_tokens`` are sent upstream and enforced here too, so a server that
ignores either still ends the stream after the stop id. When the consumer closes the
iterator, the HTTP response is closed with it: the connection drops and the server
aborts the request. Each request opens a connection of its own: reusing kept-alive
connections to vLLM's server after a burst of streams stalled new streams for seconds
(measured with ``bench/bench_server.py``), against a fraction of a millisecond to connect.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any, Final, Literal, cast

import httpx
import orjson

from .base import Chunk, EngineError, ModelInfo, SamplingParams, TokenLogprob

Flavor = Literal["vllm", "llamacpp"]
FLAVORS: Final[frozenset[str]] = frozenset({"vllm", "llamacpp"})

_DONE: Final = b"[DONE]"
_MESSAGE_LIMIT: Final = 1000
_TOKEN_ID: Final = "token_id:"

_Scores = list[TokenLogprob] | None
"""The log probabilities of an event's ids; ``None`` when none were asked for."""


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
    :class:`UpstreamError` (an :class:`EngineError`) when the server fails.
    """

    def __init__(
        self,
        client: httpx.AsyncClient,
        info: ModelInfo,
        *,
        flavor: Flavor = "vllm",
        owns_client: bool = True,
    ) -> None:
        if flavor not in FLAVORS:
            raise ValueError(f"flavor must be one of {sorted(FLAVORS)}, got {flavor!r}")
        self._client = client
        self._info = info
        self._flavor: Flavor = flavor
        self._owns_client = owns_client
        self._base = str(client.base_url).rstrip("/")

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
    ) -> UpstreamEngine:
        """Open a pooled client to ``base_url`` (with or without ``/v1``), ask
        ``GET /v1/models`` for the model id and context window, and detect the flavor
        (``"vllm"`` or ``"llamacpp"``) unless one is given.

        ``model`` picks one of the served models (default: the first). Connecting has
        a ``connect_timeout``; streamed reads have none. Raises :class:`UpstreamError`
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
                context = await _llamacpp_context(client, request_timeout) or context
        except BaseException:
            await client.aclose()
            raise
        info = ModelInfo(id=str(entry["id"]), context_length=context, engine=chosen, device=root)
        return cls(client, info, flavor=chosen)

    @property
    def info(self) -> ModelInfo:
        """The upstream model: its id, context window, flavor (``engine``) and URL."""
        return self._info

    @property
    def flavor(self) -> Flavor:
        """The wire dialect: ``"vllm"`` or ``"llamacpp"``."""
        return self._flavor

    def generate(self, prompt: Sequence[int], params: SamplingParams) -> AsyncIterator[Chunk]:
        """Stream the ids sampled after ``prompt`` in chunks (with log probabilities when
        ``params.logprobs`` is set), ending after a stop id (which is yielded) or
        ``params.max_tokens`` ids. Raises :class:`UpstreamError`."""
        if self._flavor == "llamacpp":
            return self._stream("/completion", self._llamacpp_body(prompt, params), params, llamacpp=True)
        return self._stream("/v1/completions", self._vllm_body(prompt, params), params, llamacpp=False)

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
        if params.seed is not None:
            body["seed"] = params.seed
        if params.logprobs is not None:
            body["n_probs"] = max(params.logprobs, 1)
            body["post_sampling_probs"] = False
        body.update(params.extra)
        return body

    # --- the stream ----------------------------------------------------------------

    async def _stream(
        self, path: str, body: dict[str, Any], params: SamplingParams, *, llamacpp: bool
    ) -> AsyncIterator[Chunk]:
        url = self._base + path
        parse = _llamacpp_event if llamacpp else _vllm_event
        top = params.logprobs
        stops = frozenset(params.stop_token_ids)
        limit = params.max_tokens
        count = 0
        truncated = False
        held: Chunk | None = None
        ended = False
        cut = False
        request = self._client.build_request(
            "POST", path, content=orjson.dumps(body), headers={"Content-Type": "application/json"}
        )
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
            pending = b""
            async for data in response.aiter_bytes():
                if pending:
                    data = pending + data
                lines = data.split(b"\n")
                pending = lines.pop()
                for line in lines:
                    if not line.startswith(b"data:"):
                        if line.startswith(b"error:"):
                            raise UpstreamError(
                                f"upstream {url} reported an error: {_body_message(line[6:])}", url=url
                            )
                        continue
                    if ended:
                        continue
                    ids, scores, done = parse(line[5:], url, None if truncated else count, top)
                    if held is not None:
                        if done:
                            ended = True
                        elif ids:
                            cut = True
                            break
                        continue
                    if not ids:
                        ended = done
                        continue
                    hit = False
                    end = len(ids)
                    if stops and not stops.isdisjoint(ids):
                        end = next(i for i, t in enumerate(ids) if t in stops) + 1
                        truncated = end < len(ids)
                        hit = True
                    if limit is not None and count + end >= limit:
                        truncated = truncated or count + end > limit
                        end = limit - count
                        hit = True
                    chunk = Chunk(tuple(ids[:end]), None if scores is None else tuple(scores[:end]))
                    count += len(chunk)
                    if hit or done:
                        held = chunk
                        ended = done
                        continue
                    yield chunk
                if cut:
                    break
            if not cut:
                if pending.strip():
                    raise _malformed(url, "unterminated line at the end of the stream", pending)
                if held is None and not ended:
                    raise UpstreamError(
                        f"upstream {url} closed the stream before the generation ended", url=url
                    )
        except httpx.HTTPError as exc:
            raise UpstreamError(f"upstream {url} stream failed: {exc!r}", url=url) from exc
        finally:
            await response.aclose()
        if held:
            yield held


def _vllm_event(
    payload: bytes, url: str, count: int | None, top: int | None
) -> tuple[list[int], _Scores, bool]:
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


def _llamacpp_event(
    payload: bytes, url: str, count: int | None, top: int | None
) -> tuple[list[int], _Scores, bool]:
    """The ids in one llama-server ``data:`` payload, their log probabilities (with
    ``top`` alternatives each; ``None`` when ``top`` is) and whether it ends the
    generation. ``count``: the ids received so far when none was cut, checked against
    its own count."""
    try:
        event = orjson.loads(payload)
    except orjson.JSONDecodeError:
        raise _malformed(url, "data is not JSON", payload) from None
    _raise_error_event(event, url)
    if type(event) is not dict:
        raise _malformed(url, "data is not a JSON object", payload)
    if event.get("stop") is True:
        predicted = event.get("tokens_predicted")
        if count is not None and type(predicted) is int and predicted > count:
            raise UpstreamError(
                f"upstream {url} left {predicted - count} of {predicted} token id(s) out of its stream "
                "(llama.cpp does not stream the id of a token that ends inside a UTF-8 character)",
                url=url,
            )
        return [], None if top is None else [], True
    ids = event.get("tokens")
    if not _is_id_list(ids):
        raise _malformed(url, "no 'tokens' list (llama.cpp needs return_tokens)", payload)
    ids = cast(list[int], ids)
    if top is None:
        return ids, None, False
    scores = _llamacpp_scores(event.get("completion_probabilities"), ids, top, url, payload) if ids else []
    return ids, scores, False


def _raise_error_event(event: object, url: str) -> None:
    if isinstance(event, dict) and (event.get("error") is not None or event.get("object") == "error"):
        message = _clip(_error_message(event) or str(event))
        raise UpstreamError(f"upstream {url} reported an error: {message}", url=url)


# --- connect helpers --------------------------------------------------------------------


async def _get_json(client: httpx.AsyncClient, path: str, timeout: float) -> Any:
    url = f"{str(client.base_url).rstrip('/')}{path}"
    try:
        response = await client.get(path, timeout=timeout)
    except httpx.HTTPError as exc:
        raise UpstreamError(f"cannot reach upstream {url}: {exc!r}", url=url) from exc
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


def _context_length(entry: dict[str, Any]) -> int | None:
    value = entry.get("max_model_len")
    if type(value) is int and value > 0:
        return value
    meta = entry.get("meta")
    if isinstance(meta, dict):
        value = meta.get("n_ctx_train")
        if type(value) is int and value > 0:
            return value
    return None


async def _llamacpp_context(client: httpx.AsyncClient, timeout: float) -> int | None:
    """llama-server's running context size (``/props``), best effort."""
    try:
        props = await _get_json(client, "/props", timeout)
    except UpstreamError:
        return None
    settings = props.get("default_generation_settings") if isinstance(props, dict) else None
    value = settings.get("n_ctx") if isinstance(settings, dict) else None
    return value if type(value) is int and value > 0 else None
