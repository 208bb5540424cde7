"""What an upstream completions server streams back, read into ids: its server-sent events,
their ids and log probabilities, its errors.

``vllm``
    Each ``data:`` payload of ``POST /v1/completions`` (``return_token_ids: true``) carries
    the new ids in ``choices[0].token_ids``, the last one a ``finish_reason``; the stream
    ends with ``data: [DONE]``. Log probabilities (``logprobs: k`` with
    ``return_tokens_as_token_ids: true``): ``choices[0].logprobs`` holds
    ``token_logprobs`` (one per id) and ``top_logprobs`` (one ``{"token_id:N": logprob}``
    object per id: the sampled id and the ``k`` most likely, of which the ``k`` best are
    kept).
``llamacpp``
    Each payload of llama-server's ``POST /completion`` (``return_tokens: true``) carries
    ``tokens`` (the ids sampled since the last event), ``tokens_predicted`` (every id
    sampled so far, those left out of the stream included) and ``stop``. Log
    probabilities (``n_probs``): ``completion_probabilities`` (``{id, logprob,
    top_logprobs: [{id, logprob}]}``, a softmax of the raw logits) must match ``tokens``
    one for one, or the stream is malformed.

Errors: a non-2xx answer, an ``error:`` line, an error object in a ``data:`` payload
(OpenAI's ``{"error": {"message": …}}``, vLLM's older ``{"object": "error", …}``, FastAPI's
``{"detail": …}``) and a malformed stream are each an :class:`UpstreamError`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any, Final, cast

import httpx
import orjson

from .base import EngineError, TokenLogprob

Scores = list[TokenLogprob] | None
"""The log probabilities of an event's ids; ``None`` when none were asked for."""
Event = tuple[list[int], Scores, bool]
"""One upstream event: its new ids, their log probabilities, whether it ends the generation."""

_DONE: Final = b"[DONE]"
_MESSAGE_LIMIT: Final = 1000
_TOKEN_ID: Final = "token_id:"


class UpstreamError(EngineError):
    """The upstream server failed: unreachable, a non-2xx answer, an error event or a
    malformed stream. ``status`` is the HTTP status where there was one."""

    def __init__(self, message: str, *, status: int | None = None, url: str = "") -> None:
        self.status = status
        self.url = url
        super().__init__(message)


def clip(text: str) -> str:
    """``text`` stripped, cut to a length an error message can carry."""
    text = text.strip()
    return text if len(text) <= _MESSAGE_LIMIT else text[:_MESSAGE_LIMIT] + "…"


def error_message(payload: object) -> str | None:
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


def body_message(body: bytes) -> str:
    """What an error answer's body says: its error object's message, else its text."""
    try:
        message = error_message(orjson.loads(body))
    except orjson.JSONDecodeError:
        message = None
    return clip(message if message is not None else body.decode("utf-8", "replace")) or "(empty body)"


def malformed(url: str, what: str, line: bytes) -> UpstreamError:
    """The error of a stream or answer from ``url`` that is not what it should be."""
    shown = clip(line.decode("utf-8", "replace"))
    return UpstreamError(f"malformed stream from upstream {url}: {what}: {shown}", url=url)


def is_id_list(ids: object) -> bool:
    """Whether ``ids`` is a list of ints."""
    return type(ids) is list and all(type(t) is int for t in ids)


def json_answer(response: httpx.Response, url: str) -> Any:
    """The JSON body of a 2xx answer; an :class:`UpstreamError` for any other."""
    if response.status_code >= 400:
        raise UpstreamError(
            f"upstream {url} answered {response.status_code}: {body_message(response.content)}",
            status=response.status_code,
            url=url,
        )
    try:
        return orjson.loads(response.content)
    except orjson.JSONDecodeError:
        raise malformed(url, "the answer is not JSON", response.content) from None


async def data_payloads(response: httpx.Response, url: str) -> AsyncIterator[bytes]:
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
                raise UpstreamError(f"upstream {url} reported an error: {body_message(line[6:])}", url=url)
    if pending.strip():
        raise malformed(url, "unterminated line at the end of the stream", pending)


def vllm_event(payload: bytes, url: str, top: int | None) -> Event:
    """The ids in one vLLM ``data:`` payload, their log probabilities (with ``top``
    alternatives each; ``None`` when ``top`` is) and whether it ends the generation."""
    try:
        event = orjson.loads(payload)
    except orjson.JSONDecodeError:
        if payload.strip() == _DONE:
            return [], None, True
        raise malformed(url, "data is not JSON", payload) from None
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
    raise_error_event(event, url)
    raise malformed(
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
        raise malformed(
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
        raise malformed(
            url,
            "no completion_probabilities entry {id, logprob, top_logprobs} per id in 'tokens' "
            "(llama-server must honour n_probs)",
            payload,
        ) from None


def llamacpp_event(payload: bytes, url: str, top: int | None) -> tuple[list[int], Scores, bool, int | None]:
    """The ids in one llama-server ``data:`` payload, their log probabilities (with
    ``top`` alternatives each; ``None`` when ``top`` is), whether it ends the generation,
    and its ``tokens_predicted`` (the ids sampled so far, those left out of the stream
    included; ``None`` where the server does not say)."""
    try:
        event = orjson.loads(payload)
    except orjson.JSONDecodeError:
        raise malformed(url, "data is not JSON", payload) from None
    raise_error_event(event, url)
    if type(event) is not dict:
        raise malformed(url, "data is not a JSON object", payload)
    predicted = event.get("tokens_predicted")
    if type(predicted) is not int:
        predicted = None
    if event.get("stop") is True:  # streamed, the last event repeats no ids
        return [], None if top is None else [], True, predicted
    ids = event.get("tokens")
    if not is_id_list(ids):
        raise malformed(url, "no 'tokens' list (llama.cpp needs return_tokens)", payload)
    ids = cast(list[int], ids)
    if top is None:
        return ids, None, False, predicted
    scores = _llamacpp_scores(event.get("completion_probabilities"), ids, top, url, payload) if ids else []
    return ids, scores, False, predicted


def raise_error_event(event: object, url: str) -> None:
    """Raise :class:`UpstreamError` when ``event`` is an error object."""
    if isinstance(event, dict) and (event.get("error") is not None or event.get("object") == "error"):
        message = clip(error_message(event) or str(event))
        raise UpstreamError(f"upstream {url} reported an error: {message}", url=url)
