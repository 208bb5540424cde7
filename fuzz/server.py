"""Fuzz targets of the server: the request validator and the HTTP surface.

* ``server:request-validator``: create-response bodies — valid ones (which must be
  accepted), valid ones damaged by one to four mutations (values of the wrong type,
  numbers at and past their bounds, strings at and past their lengths, keys dropped,
  renamed, duplicated or invented, nesting down to ~1100 levels), random JSON values, and
  their JSON text damaged byte by byte or replaced by random bytes — into
  :func:`~openchatml.responses.request.parse_request` (decoded) and
  :func:`~openchatml.server.request_body.request_of` (bytes, under random
  :class:`~openchatml.responses.limits.RequestLimits` and the app's ``drop``/``only``).
  Only :class:`~openchatml.responses.errors.APIError` with a 4xx status and the error
  envelope may be raised; an accepted body gives a :class:`ResponseRequest`.
* ``server:http``: the real ASGI app (``create_app`` over a ``ResponseService`` with a
  SQLite store in memory, API keys, and an engine playing random scripts: answers,
  reasoning, tool calls, random token ids, cut answers, engine failures) driven in
  process by raw ASGI calls with random methods, paths (the known routes with real,
  foreign and random ids and query strings, and unknown ones), headers and bodies
  (delivered in random chunks), one request at a time or a few at once on the same
  responses (create, stream, cancel, delete, replay), from clients that stay or leave
  early (as uvicorn reports it; and, for some, on a server whose writes to a client gone
  raise ``OSError``, as ASGI 2.4 allows). No answer has a status >= 500; every answer
  has a sane ``x-request-id``, and its ``OpenChatML-Ignored-Parameters`` (when it has
  one) is printable ASCII naming at most 16 parameters; every non-2xx answer is the JSON
  error envelope (429 with ``Retry-After``); every SSE body is well
  formed, numbered in order, ends with ``data: [DONE]`` and (with events) with a terminal
  event; no response fails inside the server; nothing escapes the app or is logged as an
  error; no call hangs; no admission ticket outlives its run; ``/health`` answers after
  every input.

Inputs are built with plain :mod:`random` from each input's seed (see ``fuzz/run.py``);
the HTTP target keeps one app (and its store) per process across inputs, so a replayed
seed builds the same requests, against a fresh server.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import random
import re
import string
import sys
import traceback
from collections.abc import AsyncIterator, Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote as _quote
from urllib.parse import unquote

import orjson

from openchatml import Message
from openchatml.engines.base import Chunk, EngineError, ModelInfo, SamplingParams, TokenLogprob
from openchatml.responses import ids
from openchatml.responses.crypto import Sealer
from openchatml.responses.errors import APIError
from openchatml.responses.limits import RequestLimits
from openchatml.responses.request import ResponseRequest, parse_request
from openchatml.responses.wire.base import MAX_TEXT
from openchatml.responses.wire.request import MAX_REPORTED, REQUEST_KEYS
from openchatml.server.admission import Admission
from openchatml.server.app import create_app
from openchatml.server.auth import KeyChecker
from openchatml.server.limits import Limits
from openchatml.server.request_body import request_of
from openchatml.server.routes.responses import COMPACT_KEYS
from openchatml.server.service import ResponseService
from openchatml.server.settings import ServiceSettings
from openchatml.server.store.sqlite import SQLiteStore

from .target import FuzzFailure, Target, short_repr, target

VALIDATOR_MINIMUM: Final = 1_000_000
"""Inputs the request validator must try in a full run."""
HTTP_MINIMUM: Final = 20_000
"""Inputs (each one to four full requests) the HTTP surface must try in a full run."""

# --- random JSON ------------------------------------------------------------------------------

BODY_KEYS: Final = tuple(sorted(REQUEST_KEYS))
"""The top-level keys of a create-response body."""
KNOWN_KEYS: Final = (
    *BODY_KEYS,
    # item, part, tool and format keys
    "type",
    "role",
    "content",
    "text",
    "id",
    "status",
    "name",
    "call_id",
    "arguments",
    "output",
    "summary",
    "encrypted_content",
    "phase",
    "annotations",
    "refusal",
    "image_url",
    "file_id",
    "file_data",
    "file_url",
    "filename",
    "detail",
    "video_url",
    "parameters",
    "description",
    "strict",
    "mode",
    "format",
    "schema",
    "verbosity",
    "effort",
)
"""The keys of a create-response body."""
INPUT_ITEM_TYPES: Final = (
    "message",
    "function_call",
    "function_call_output",
    "reasoning",
    "compaction",
    "item_reference",
)
"""The item types a checked request's input holds."""
WORDS: Final = (
    "user",
    "assistant",
    "system",
    "developer",
    "tool",
    *INPUT_ITEM_TYPES,
    "input_text",
    "output_text",
    "text",
    "refusal",
    "input_image",
    "input_file",
    "input_video",
    "summary_text",
    "reasoning_text",
    "function",
    "allowed_tools",
    "none",
    "auto",
    "required",
    "json_object",
    "json_schema",
    "low",
    "medium",
    "high",
    "xhigh",
    "minimal",
    "concise",
    "detailed",
    "disabled",
    "default",
    "flex",
    "priority",
    "commentary",
    "final_answer",
    "reasoning.encrypted_content",
    "message.output_text.logprobs",
    "scripted-model",
    "fuzz-model",
    "get_weather",
    "resp_0",
    "msg_0",
    "User",
    "user ",
    "input_text\x00",
    "function\n",
)
ODD_TEXT: Final = (
    "",
    " ",
    "hi",
    "\x00",
    "\ufeff",
    "\u2028",
    "\u202e",
    "\ud800",  # a lone surrogate: no JSON text carries it, but a decoded body may
    "😀",
    "👩‍👩‍👧",
    "漢字かなカナ",
    "e\u0301",
    "<|start|>",
    "<|end|>",
    "<|channel|>final<|message|>x<|return|>",
    "<|constrain|>json",
    "{{ raise_exception('x') }}",
    "%s%n",
    "\\u0000",
    '{"a":',
    "a" * 64,
    "a" * 65,
    "a" * 256,
    "a" * 257,
    "a" * 512,
    "a" * 513,
    "x" * 5000,
)
NUMBERS: Final = (
    0,
    1,
    -1,
    2,
    16,
    17,
    20,
    21,
    32,
    33,
    64,
    65,
    128,
    4096,
    2**31,
    2**53,
    2**53 + 1,
    2**63 - 1,
    2**63,
    2**64 - 1,
    2**64,
    -(2**63),
    -(2**63) - 1,
    10**30,
    10**400,
    0.0,
    -0.0,
    0.5,
    1.0,
    1.5,
    2.0,
    2.0000000001,
    -2.0,
    -2.0000000001,
    1e-320,
    5e-324,
    1e308,
    -1e308,
    float("inf"),
    float("-inf"),
    float("nan"),
)


def random_text(rng: random.Random) -> str:
    """A short string: a word, odd text, or random characters (ASCII or any plane)."""
    roll = rng.random()
    if roll < 0.3:
        return rng.choice(WORDS)
    if roll < 0.55:
        return rng.choice(ODD_TEXT)
    if roll < 0.8:
        return "".join(rng.choices(string.printable, k=rng.randrange(12)))
    return "".join(
        chr(rng.choice((rng.randrange(32, 0x800), rng.randrange(0x10FFFF)))) for _ in range(rng.randrange(6))
    )


def random_scalar(rng: random.Random) -> Any:
    """``null``, a boolean, a number (often at a bound) or a string."""
    roll = rng.random()
    if roll < 0.1:
        return None
    if roll < 0.2:
        return rng.random() < 0.5
    if roll < 0.45:
        return rng.choice(NUMBERS)
    if roll < 0.55:
        return rng.choice((rng.randrange(-(2**70), 2**70), rng.uniform(-1e6, 1e6), rng.randrange(-3, 100)))
    return random_text(rng)


def random_json(rng: random.Random, depth: int = 0) -> Any:
    """A random JSON value: scalars, and objects and arrays a few levels deep."""
    roll = rng.random()
    if depth > 4 or roll < 0.55:
        return random_scalar(rng)
    if roll < 0.78:
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = KNOWN_KEYS if rng.random() < 0.7 else None
    return {
        (rng.choice(keys) if keys else random_text(rng)): random_json(rng, depth + 1)
        for _ in range(rng.randrange(4))
    }


def deep(rng: random.Random, depth: int, leaf: Any = 1) -> Any:
    """``leaf`` inside ``depth`` arrays or objects (mixed at random)."""
    value = leaf
    kinds = rng.choice(("list", "dict", "mixed"))
    mixed = rng.getrandbits(depth) if kinds == "mixed" else 0
    for i in range(depth):
        as_list = (mixed >> i) & 1 if kinds == "mixed" else kinds == "list"
        value = [value] if as_list else {"x": value}
    return value


# --- valid bodies -----------------------------------------------------------------------------


NAME_ALPHABET: Final = string.ascii_letters + string.digits + "_-"


def _name(rng: random.Random) -> str:
    return "".join(rng.choices(NAME_ALPHABET, k=rng.choice((1, 3, 8, 64))))


def _clean(text: str) -> str:
    """``text`` without lone surrogates (which no JSON text decodes to)."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _text(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.5:
        return rng.choice(("hi", "What is the weather in Paris?", "ok", "", "2 + 2 = ?"))
    if roll < 0.8:
        return _clean(rng.choice(ODD_TEXT[:-1]))
    return _clean(random_text(rng))


def _input_part(rng: random.Random) -> dict[str, Any]:
    kind = rng.choice(
        ("input_text", "input_text", "input_text", "text", "input_image", "input_file", "input_video")
    )
    if kind in ("input_text", "text"):
        return {"type": kind, "text": _text(rng)}
    if kind == "input_image":
        part: dict[str, Any] = {"type": "input_image"}
        if rng.random() < 0.7:
            part["image_url"] = rng.choice(
                ("https://example.com/a.png", "data:image/png;base64,iVBORw0KGgo=")
            )
        else:
            part["file_id"] = "file_" + _name(rng)
        if rng.random() < 0.5:
            part["detail"] = rng.choice(("low", "high", "auto"))
        return part
    if kind == "input_file":
        key = rng.choice(("file_data", "file_url", "file_id"))
        part = {
            "type": "input_file",
            key: rng.choice(("data:text/plain;base64,aGk=", "https://x/y", "file_1")),
        }
        if rng.random() < 0.5:
            part["filename"] = "a.txt"
        return part
    return {"type": "input_video", "video_url": "https://example.com/v.mp4"}


def _output_part(rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.85:
        part: dict[str, Any] = {
            "type": rng.choice(("output_text", "output_text", "text")),
            "text": _text(rng),
        }
        if rng.random() < 0.3:
            part["annotations"] = []
        return part
    return {"type": "refusal", "refusal": _text(rng)}


def _item_id(rng: random.Random, prefix: str) -> str:
    return prefix + "_" + _name(rng)


def valid_item(rng: random.Random, *, references: bool = True) -> dict[str, Any]:
    """One input item the validator must accept."""
    roll = rng.random()
    if roll < 0.45:
        role = rng.choice(("user", "user", "assistant", "system", "developer"))
        item: dict[str, Any] = {"role": role}
        if rng.random() < 0.6:
            item["type"] = "message"
        if rng.random() < 0.5:
            item["content"] = _text(rng)
        else:
            make = _output_part if role == "assistant" else _input_part
            item["content"] = [make(rng) for _ in range(rng.randrange(1, 4))]
        if role == "assistant" and rng.random() < 0.3:
            item["phase"] = rng.choice(("commentary", "final_answer"))
        if rng.random() < 0.3:
            item["id"] = _item_id(rng, "msg")
        return item
    if roll < 0.6:
        return {
            "type": "function_call",
            "call_id": "call_" + _name(rng)[:40],
            "name": _name(rng),
            "arguments": rng.choice(('{"city": "Paris"}', "{}", "not json", "")),
        }
    if roll < 0.72:
        output: Any = (
            _text(rng) if rng.random() < 0.7 else [_input_part(rng) for _ in range(rng.randrange(3))]
        )
        return {"type": "function_call_output", "call_id": "call_" + _name(rng)[:40], "output": output}
    if roll < 0.82:
        item = {"type": "reasoning", "summary": [{"type": "summary_text", "text": _text(rng)}]}
        if rng.random() < 0.5:
            item["content"] = [{"type": "reasoning_text", "text": _text(rng)}]
        if rng.random() < 0.3:
            item["encrypted_content"] = _clean(random_text(rng))
        return item
    if roll < 0.88:
        return {"type": "compaction", "encrypted_content": _clean(random_text(rng))}
    if references:
        return {"type": "item_reference", "id": _item_id(rng, "msg")}
    return {"role": "user", "content": _text(rng)}


def valid_body(rng: random.Random, *, model: str = "scripted-model") -> dict[str, Any]:
    """A create-response body the validator must accept (within the default limits)."""
    body: dict[str, Any] = {}
    if rng.random() < 0.85:
        body["model"] = model
    roll = rng.random()
    if roll < 0.45:
        body["input"] = _text(rng)
    elif roll < 0.95:
        body["input"] = [valid_item(rng) for _ in range(rng.randrange(5))]
    tools: list[dict[str, Any]] = []
    if rng.random() < 0.3:
        names = list(dict.fromkeys(_name(rng) for _ in range(rng.randrange(1, 4))))
        for name in names:
            tool: dict[str, Any] = {"type": "function", "name": name}
            if rng.random() < 0.7:
                tool["parameters"] = {"type": "object", "properties": {"city": {"type": "string"}}}
            if rng.random() < 0.5:
                tool["description"] = _text(rng)
            if rng.random() < 0.3:
                tool["strict"] = rng.random() < 0.5
            tools.append(tool)
        body["tools"] = tools
    if rng.random() < 0.2:
        choices: list[Any] = ["none", "auto"]
        if tools:
            choices += [
                "required",
                {"type": "function", "name": rng.choice(tools)["name"]},
                {
                    "type": "allowed_tools",
                    "mode": rng.choice(("auto", "required", "none")),
                    "tools": [
                        {"type": "function", "name": t["name"]}
                        for t in tools[: rng.randrange(1, len(tools) + 1)]
                    ],
                },
            ]
        body["tool_choice"] = rng.choice(choices)
    optional: list[tuple[str, Callable[[], Any]]] = [
        ("instructions", lambda: _text(rng)),
        ("parallel_tool_calls", lambda: rng.random() < 0.5),
        ("temperature", lambda: rng.choice((0, 0.7, 2, 1.0, rng.uniform(0, 2)))),
        ("top_p", lambda: rng.choice((0, 1, 0.9, rng.random()))),
        ("presence_penalty", lambda: rng.uniform(-2, 2)),
        ("frequency_penalty", lambda: rng.choice((-2, 2, 0.0))),
        ("max_output_tokens", lambda: rng.choice((1, 16, 200, 4096, 2**63 - 1))),
        ("max_tool_calls", lambda: rng.choice((1, 5, 100))),
        ("top_logprobs", lambda: rng.randrange(21)),
        ("stream", lambda: rng.random() < 0.5),
        (
            "include",
            lambda: rng.sample(
                ["reasoning.encrypted_content", "message.output_text.logprobs"], rng.randrange(3)
            ),
        ),
        (
            "metadata",
            lambda: {_clean(random_text(rng))[:64]: _text(rng)[:512] for _ in range(rng.randrange(17))},
        ),
        ("truncation", lambda: rng.choice(("auto", "disabled"))),
        ("service_tier", lambda: rng.choice(("auto", "default", "flex", "priority"))),
        ("safety_identifier", lambda: _name(rng)),
        ("prompt_cache_key", lambda: _name(rng)),
        ("user", lambda: rng.choice(("user-1", "", "漢字", "x" * 100))),
        ("stream_options", lambda: {"include_obfuscation": False}),
        ("seed", lambda: rng.choice((0, 1, 42, 2**31, 2**63 - 1))),
        (
            "reasoning",
            lambda: {
                k: v
                for k, v in (
                    ("effort", rng.choice(("none", "minimal", "low", "medium", "high", "xhigh", None))),
                    ("summary", rng.choice(("auto", "concise", "detailed", None))),
                )
                if rng.random() < 0.6
            },
        ),
        ("text", lambda: _text_field(rng)),
    ]
    for key, make in optional:
        if rng.random() < 0.12:
            body[key] = make()
    if rng.random() < 0.1:
        body["store"] = rng.random() < 0.7
    if rng.random() < 0.1 and body.get("store", True):
        body["background"] = rng.random() < 0.5
    # null is "absent" for every optional parameter
    for key in list(body):
        if key not in ("model", "input", "tools") and rng.random() < 0.03:
            body[key] = None
    return body


def _text_field(rng: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if rng.random() < 0.5:
        out["verbosity"] = rng.choice(("low", "medium", "high"))
    kind = rng.choice(("text", "json_object", "json_schema", None))
    if kind == "json_schema":
        out["format"] = {
            "type": kind,
            "name": _name(rng),
            "schema": {"type": "object", "properties": {"a": {"type": "integer"}}},
            "strict": rng.random() < 0.5,
        }
    elif kind is not None:
        out["format"] = {"type": kind}
    return out


# --- mutations --------------------------------------------------------------------------------


def _pick_container(rng: random.Random, value: Any) -> Any:
    """A random object or array inside ``value`` (``value`` itself, or deeper)."""
    current = value
    while True:
        children = list(current.values()) if isinstance(current, dict) else current
        inner = [c for c in children if isinstance(c, dict | list)]
        if not inner or rng.random() < 0.3:
            return current
        current = rng.choice(inner)


def _replacement(rng: random.Random, old: Any) -> Any:
    roll = rng.random()
    if roll < 0.35:
        return random_scalar(rng)
    if roll < 0.55:
        return random_json(rng)
    if roll < 0.65:  # the same value of another type
        if isinstance(old, str):
            return rng.choice(([old], {"text": old}, len(old), None, old.upper(), old + "\x00", old * 3))
        if isinstance(old, bool):
            return rng.choice((int(old), str(old).lower(), [old]))
        if isinstance(old, int | float):
            return rng.choice(
                (
                    str(old),
                    [old],
                    -old if old == old else 0,
                    old + 1,
                    old - 1,
                    old * 2**40,
                    float(old) if abs(old) < 1e300 else old,
                )
            )
        if isinstance(old, list):
            return rng.choice(({}, old[:1], old * 2, {"0": old[0]} if old else {}, ""))
        if isinstance(old, dict):
            return rng.choice(([old], list(old.values()), list(old), {}, ""))
        return rng.choice((0, "", [], {}))
    if roll < 0.72:
        return deep(rng, rng.choice((2, 63, 64, 65, 100, 1100)), old)
    if roll < 0.8:
        return valid_item(rng)
    if roll < 0.85:
        return "x" * rng.choice((MAX_TEXT, MAX_TEXT + 1)) if rng.random() < 0.02 else rng.choice(ODD_TEXT)
    return rng.choice(WORDS)


def mutate(rng: random.Random, body: Any, times: int = 1) -> Any:
    """``body`` (changed in place where it is a container) after ``times`` random mutations."""
    for _ in range(times):
        if not isinstance(body, dict | list) or rng.random() < 0.02:
            body = _replacement(rng, body)
            continue
        node = _pick_container(rng, body)
        roll = rng.random()
        if isinstance(node, dict):
            keys = list(node)
            names = BODY_KEYS if node is body else KNOWN_KEYS
            if keys and roll < 0.45:
                key = rng.choice(keys)
                node[key] = _replacement(rng, node[key])
            elif keys and roll < 0.6:
                del node[rng.choice(keys)]
            elif keys and roll < 0.68:  # renamed
                key = rng.choice(keys)
                node[rng.choice(names) if rng.random() < 0.8 else random_text(rng)] = node.pop(key)
            elif roll < 0.9:
                node[rng.choice(names)] = _replacement(rng, None)
            else:
                node[random_text(rng)] = random_json(rng)
        else:
            if node and roll < 0.4:
                i = rng.randrange(len(node))
                node[i] = _replacement(rng, node[i])
            elif node and roll < 0.55:
                del node[rng.randrange(len(node))]
            elif node and roll < 0.7:  # repeated: past a count limit, or duplicate names
                node.extend([node[rng.randrange(len(node))]] * rng.choice((1, 2, 16, 130, 300, 1100)))
            else:
                node.insert(rng.randrange(len(node) + 1), _replacement(rng, None))
    return body


def to_bytes(rng: random.Random, value: Any) -> bytes:
    """``value`` as JSON text: orjson's (compact or indented), or the standard library's
    (which writes numbers past 64 bits, NaN, Infinity and lone surrogates, escaped to
    ASCII or not), at any depth."""
    if rng.random() < 0.8:
        try:
            return orjson.dumps(value, option=orjson.OPT_INDENT_2 if rng.random() < 0.1 else 0)
        except (TypeError, orjson.JSONEncodeError):
            pass
    ascii_ = rng.random() < 0.5
    try:
        text = json.dumps(value, ensure_ascii=ascii_)  # the C writer (no indent)
    except RecursionError:  # too deep for the standard library's writer
        text = dumps_deep(value, ascii_)
    return text.encode("utf-8", "surrogatepass")


class _Raw(str):
    """JSON text already written (punctuation, keys)."""


def dumps_deep(value: Any, ensure_ascii: bool = True) -> str:
    """``value`` as JSON text, written without recursion (so at any depth)."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Raw):
            out.append(item)
        elif isinstance(item, dict):
            out.append("{")
            stack.append(_Raw("}"))
            entries = list(item.items())
            for i in range(len(entries) - 1, -1, -1):
                key, child = entries[i]
                stack.append(child)
                stack.append(_Raw(("," if i else "") + json.dumps(key, ensure_ascii=ensure_ascii) + ":"))
        elif isinstance(item, list):
            out.append("[")
            stack.append(_Raw("]"))
            for i in range(len(item) - 1, -1, -1):
                stack.append(item[i])
                if i:
                    stack.append(_Raw(","))
        else:
            out.append(json.dumps(item, ensure_ascii=ensure_ascii))
    return "".join(out)


def damage_bytes(rng: random.Random, raw: bytes) -> bytes:
    """``raw`` with a few bytes flipped, inserted, removed, cut, prefixed or re-encoded."""
    data = bytearray(raw)
    for _ in range(rng.randrange(1, 4)):
        roll = rng.random()
        if roll < 0.2 and data:
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif roll < 0.35:
            data[rng.randrange(len(data) + 1) : 0] = rng.choice(
                (
                    b'"',
                    b"{",
                    b"[",
                    b"]",
                    b"}",
                    b",",
                    b":",
                    b"\\",
                    b"\x00",
                    b"\xff",
                    b"\xc3",
                    b"\xed\xa0\x80",
                    b"1e999",
                )
            )
        elif roll < 0.5 and data:
            del data[rng.randrange(len(data))]
        elif roll < 0.6 and data:
            del data[rng.randrange(len(data)) :]
        elif roll < 0.68:
            data[0:0] = rng.choice((b"\xef\xbb\xbf", b" \n\t", b"\xff\xfe"))
        elif roll < 0.75:
            data += rng.choice((b" ", b"x", b"{}", b"\x00", b"\n\n"))
        elif roll < 0.85 and data.startswith(b"{") and len(data) > 2:  # a key given twice
            data[1:1] = (
                b'"' + rng.choice(BODY_KEYS).encode() + b'":' + to_bytes(rng, random_scalar(rng)) + b","
            )
        elif roll < 0.92:
            try:
                return data.decode("utf-8").encode(rng.choice(("utf-16", "utf-32", "latin-1")), "replace")
            except UnicodeDecodeError:
                pass
        else:
            return bytes(rng.randrange(256) for _ in range(rng.randrange(40)))
    return bytes(data)


# --- the request validator --------------------------------------------------------------------

LIMITS_CHOICES: Final = (
    *(RequestLimits(),) * 6,
    RequestLimits(max_input_items=2, max_content_parts=1, max_tools=1, max_item_references=0),
    RequestLimits(max_input_items=0, max_content_parts=0, max_tools=0, max_item_references=0),
    RequestLimits(max_json_depth=3),
    RequestLimits(max_json_depth=255),  # what the JSON writer still takes
)
OPTIONS: Final[tuple[tuple[tuple[str, ...], frozenset[str] | None], ...]] = (
    ((), None),
    ((), None),
    (("stream", "background", "store"), None),  # /v1/responses/input_tokens
    ((), COMPACT_KEYS),  # /v1/responses/compact
)


@dataclass(slots=True)
class ValidatorCase:
    """One input of the validator: a decoded body or JSON bytes, the limits, the app's
    ``drop``/``only`` options, and whether it must be accepted."""

    kind: str
    value: Any
    limits: RequestLimits = field(default_factory=RequestLimits)
    drop: tuple[str, ...] = ()
    only: frozenset[str] | None = None
    must_accept: bool = False

    def __repr__(self) -> str:
        where = "request_of" if isinstance(self.value, bytes) else "parse_request"
        extra = f", drop={self.drop}" if self.drop else ""
        extra += ", only=COMPACT_KEYS" if self.only is not None else ""
        extra += f", {self.limits}" if self.limits != RequestLimits() else ""
        return f"{where}[{self.kind}{extra}]({short_repr(self.value, 3000)})"


def make_validator_case(rng: random.Random) -> ValidatorCase:
    """A random input of the validator (see the module docstring)."""
    roll = rng.random()
    limits = rng.choice(LIMITS_CHOICES)
    drop, only = rng.choice(OPTIONS)
    if roll < 0.08:  # valid: accepted whole, decoded or as bytes
        body = valid_body(rng)
        value: Any = body if rng.random() < 0.5 else to_bytes(rng, body)
        return ValidatorCase("valid", value, must_accept=True)
    if roll < 0.6:
        body = mutate(rng, valid_body(rng), rng.choice((1, 1, 1, 2, 2, 3, 4)))
        kind = "mutated"
    elif roll < 0.72:
        body = random_json(rng)
        if rng.random() < 0.5:
            body = {rng.choice(BODY_KEYS): body}
        kind = "random-json"
    elif roll < 0.76:
        body = valid_body(rng)
        body[rng.choice(BODY_KEYS)] = deep(rng, rng.randrange(60, 1101))
        kind = "deep"
    elif roll < 0.92:
        raw = damage_bytes(rng, to_bytes(rng, valid_body(rng)))
        return ValidatorCase("damaged-bytes", raw, limits, drop, only)
    else:
        raw = bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
        return ValidatorCase("random-bytes", raw, limits, drop, only)
    value = body if rng.random() < 0.5 else to_bytes(rng, body)
    return ValidatorCase(kind, value, limits, drop, only)


def check_api_error(error: APIError) -> None:
    """An error the client is at fault for (4xx), with the envelope the wire shows."""
    assert 400 <= error.status < 500, f"status {error.status} for {type(error).__name__}: {error.message}"
    body = error.body()
    assert list(body) == ["error"], body
    payload = body["error"]
    assert set(payload) == {"message", "type", "param", "code"}, payload
    assert isinstance(payload["message"], str) and payload["message"], payload
    assert isinstance(payload["type"], str) and isinstance(payload["code"], str), payload
    assert payload["param"] is None or isinstance(payload["param"], str), payload
    json.dumps(body)


def check_validator_case(case: ValidatorCase) -> None:
    """Only typed 4xx errors; an accepted body gives a :class:`ResponseRequest`."""
    try:
        if isinstance(case.value, bytes):
            result = request_of(case.value, case.limits, case.drop, case.only)
        else:
            result = parse_request(case.value, case.limits)
    except APIError as exc:
        check_api_error(exc)
        if isinstance(case.value, bytes):
            orjson.dumps(exc.body())  # as the server writes it
        if case.must_accept:
            raise AssertionError(f"a valid body was refused: {exc.code} {exc.param}: {exc.message}") from exc
        return
    assert isinstance(result, ResponseRequest), type(result)
    for item in (typed.to_json() for typed in result.items):
        assert item["type"] in INPUT_ITEM_TYPES, item
        assert isinstance(item.get("id"), str), item
        assert item["id"] or item["type"] == "item_reference", item  # a reference to "" is a 404 later


# --- the HTTP surface: a scripted engine ------------------------------------------------------

MODEL: Final = "scripted-model"
KEYS: Final = ("sk-fuzz-a", "sk-fuzz-b")
VOCABULARY: Final = 201088
TERMINAL_EVENTS: Final = frozenset({"response.completed", "response.incomplete", "response.failed", "error"})
REQUEST_ID: Final = re.compile(r"[A-Za-z0-9._:/+=@-]{1,128}")
"""An answer's ``x-request-id``: the client's when sane, else the server's ``req_…``."""


class InjectedFailure(EngineError):
    """The failure the fuzz engine raises on purpose (a response ``failed``, no bug)."""


def _scripts() -> list[list[int]]:
    """Known answers, as the ids a model samples (the server tests' own scripts)."""
    tests = str(Path(__file__).resolve().parents[1] / "tests" / "server")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    _ids = importlib.import_module("live").completion
    answer = Message.assistant("Hello there!", channel="final")
    thinking = Message.assistant("The user says hi. I answer.", channel="analysis")
    call = Message.tool_call("functions.get_weather", '{"city": "Paris"}')
    bad_call = Message.tool_call("functions.no_such_tool", "not json {")
    preamble = Message.assistant("Let me look.", channel="commentary")
    return [
        _ids(answer),
        _ids(thinking, answer),
        _ids(call),
        _ids(thinking, call),
        _ids(bad_call),
        _ids(preamble, call),
        _ids(Message.assistant('{"a": 1}', channel="final")),
        _ids(Message.assistant("😀 漢字 e\u0301 <|start|>", channel="final")),
    ]


class FuzzEngine:
    """An engine sampling a script chosen from ``rng`` (set per input): a known answer,
    one cut short, random ids (control tokens among them), nothing, or a failure midway."""

    def __init__(self) -> None:
        self.scripts = _scripts()
        self.rng = random.Random(0)
        self._info = ModelInfo(id=MODEL, context_length=4096, engine="fuzz")
        self.tokenizer = None  # the model speaks Harmony
        self.enforces_grammar = False

    @property
    def info(self) -> ModelInfo:
        return self._info

    def _script(self) -> tuple[list[int], int | None]:
        """The ids to play, and after how many of them to fail (``None``: never)."""
        rng = self.rng
        roll = rng.random()
        ids_ = list(rng.choice(self.scripts))
        if roll < 0.55:
            return ids_, None
        if roll < 0.65:
            return ids_[: rng.randrange(len(ids_) + 1)], None
        if roll < 0.8:
            control = (200002, 200012, 200005, 200006, 200007, 200008, 199999, 200003)
            return [
                rng.choice(control) if rng.random() < 0.2 else rng.randrange(VOCABULARY)
                for _ in range(rng.randrange(40))
            ], None
        if roll < 0.85:
            return [], None
        if roll < 0.92:
            return ids_ + [rng.randrange(VOCABULARY) for _ in range(rng.randrange(20))], None
        return ids_, rng.randrange(len(ids_) + 1)

    async def generate(self, prompt: Sequence[int], params: SamplingParams) -> AsyncIterator[Chunk]:
        script, fail_at = self._script()
        if params.max_tokens is not None:
            script = script[: params.max_tokens]
        size = self.rng.randrange(1, 9)
        for start in range(0, len(script) + 1, size):
            await asyncio.sleep(0)  # other requests run between chunks
            if fail_at is not None and start >= fail_at:
                raise InjectedFailure("the fuzz engine failed on purpose")
            piece = script[start : start + size]
            if not piece:
                break
            stop = next((i for i, t in enumerate(piece) if t in params.stop_token_ids), None)
            if stop is not None:
                piece = piece[: stop + 1]
            top = params.logprobs
            logprobs = None
            if top is not None:
                logprobs = tuple(
                    TokenLogprob(t, -(t % 13) / 4, tuple((t + j, -(t % 13) / 4 - j / 2) for j in range(top)))
                    for t in piece
                )
            yield Chunk(tuple(piece), logprobs)
            if stop is not None:
                return
        if fail_at is not None:
            raise InjectedFailure("the fuzz engine failed on purpose")

    async def aclose(self) -> None:
        return None


# --- the HTTP surface: the app in process -----------------------------------------------------

HTTP_LIMITS: Final = Limits(
    max_body_bytes=64 * 1024,
    requests_per_minute=None,
    auth_failures_per_minute=30,
    max_url_bytes=2048,
    max_header_bytes=4096,
)
SERVICE_SETTINGS: Final = ServiceSettings(
    limits=RequestLimits(max_input_items=64, max_conversation_items=256, max_input_tokens=3000),
    background_linger_seconds=0.2,
    cancel_wait_seconds=0.5,
    poll_seconds=0.01,
    publish_seconds=0.0,
)
ANSWER_SECONDS: Final = 20.0
"""The longest one request may take before the input counts as a hang."""


class _ErrorLog(logging.Handler):
    """Keeps the records at ``ERROR`` and above that the server logs."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@dataclass(slots=True)
class Answer:
    """What the app sent back for one request."""

    status: int
    headers: dict[str, str]
    body: bytes
    complete: bool


@dataclass(slots=True)
class Call:
    """One HTTP request as the server would hand it to the app."""

    method: str
    path: str
    query: bytes = b""
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    body: bytes = b""
    chunks: int = 1
    leave: int | None = None
    """After how many body messages of the answer the client goes away (``0``: as soon as
    its request is sent; ``None``: never). No invariant holds then on the answer but its
    status, and nothing escaping."""
    gone_raises: bool = False
    """Whether a write to the client gone raises ``OSError`` (ASGI 2.4 lets servers do so)."""
    client: tuple[str, int] = ("127.0.0.1", 50000)

    def __repr__(self) -> str:
        target_ = self.path + ("?" + self.query.decode("latin-1") if self.query else "")
        head = ", ".join(f"{k.decode('latin-1')}: {short_repr(v, 80)}" for k, v in self.headers)
        left = "" if self.leave is None else f" (client leaves after {self.leave} writes)"
        return f"{self.method} {target_!r} [{head}] body={short_repr(self.body, 1500)} in {self.chunks}{left}"


class Harness:
    """The app over a service with a SQLite store in memory, on an event loop of its own
    that runs while an input runs (responses in the background run on during later inputs)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.engine = FuzzEngine()
        self.service = ResponseService(
            self.engine,
            SQLiteStore(":memory:"),
            sealer=Sealer(bytes(range(32))),
            settings=SERVICE_SETTINGS,
            admission=Admission(max_per_key=6),
        )
        self.app = create_app(self.service, keys=KeyChecker(KEYS), limits=HTTP_LIMITS)
        self.errors = _ErrorLog()
        logger = logging.getLogger("openchatml")
        self._logging = (logger.level, logger.propagate)
        logger.addHandler(self.errors)
        logger.setLevel(logging.INFO)
        logger.propagate = False  # the fuzzer checks what is logged; nothing is printed
        self.response_ids: list[str] = []
        self.item_ids: list[str] = []
        self.loop.run_until_complete(self._startup())

    async def _startup(self) -> None:
        self.service.start_maintenance()

    def close(self) -> None:
        self.loop.run_until_complete(self.service.aclose())
        self.loop.run_until_complete(asyncio.sleep(0))
        self.loop.run_until_complete(self.loop.shutdown_default_executor())
        logger = logging.getLogger("openchatml")
        logger.removeHandler(self.errors)
        logger.setLevel(self._logging[0])
        logger.propagate = self._logging[1]
        self.loop.close()

    # --- one request ------------------------------------------------------------------

    async def send(self, call: Call) -> Answer:
        """``call`` through the app, as uvicorn hands it over: the body in ``call.chunks``
        pieces, then (once the answer is complete, or when the client leaves)
        ``http.disconnect``. Raises what escapes the app; ``TimeoutError`` on a hang."""
        raw_path = call.path.encode("ascii")
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.4"},
            "http_version": "1.1",
            "method": call.method,
            "scheme": "http",
            "path": unquote(call.path),  # as uvicorn decodes it
            "raw_path": raw_path,
            "query_string": call.query,
            "root_path": "",
            "headers": call.headers,
            "client": call.client,
            "server": ("127.0.0.1", 8000),
            "state": {},
            "extensions": {},
        }
        size = max(1, -(-len(call.body) // call.chunks)) if call.body else 1
        pieces = [call.body[i : i + size] for i in range(0, len(call.body), size)] or [b""]
        done = asyncio.Event()
        progress = asyncio.Event()
        answer = Answer(0, {}, b"", False)
        parts: list[bytes] = []
        gone = False

        async def receive() -> MutableMapping[str, Any]:
            nonlocal gone
            if pieces:
                piece = pieces.pop(0)
                return {"type": "http.request", "body": piece, "more_body": bool(pieces)}
            if call.leave is None:
                await done.wait()
            else:
                while len(parts) < call.leave and not done.is_set():
                    progress.clear()
                    await progress.wait()
            gone = True
            return {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            if gone and call.gone_raises:
                raise OSError("the client is gone")
            if message["type"] == "http.response.start":
                assert answer.status == 0, "the answer was started twice"
                answer.status = int(message["status"])
                answer.headers = {
                    k.decode("latin-1").lower(): v.decode("latin-1") for k, v in message.get("headers", [])
                }
            elif message["type"] == "http.response.body":
                assert answer.status, "a body before the answer started"
                assert not answer.complete, "a body after the answer ended"
                parts.append(bytes(message.get("body", b"")))
                progress.set()
                if not message.get("more_body", False):
                    answer.complete = True
                    done.set()

        await asyncio.wait_for(self.app(scope, receive, send), ANSWER_SECONDS)
        answer.body = b"".join(parts)
        return answer

    # --- checks -----------------------------------------------------------------------

    def check(self, call: Call, answer: Answer) -> None:
        """The invariants of one answer (see the module docstring)."""
        if call.leave is not None:  # the client left: it may get no answer at all
            assert answer.status == 0 or 100 <= answer.status < 500, f"status {answer.status}"
            return
        assert 100 <= answer.status < 500, f"status {answer.status}: {answer.body[:600]!r}"
        assert answer.complete, "the answer was not completed"
        request_id = answer.headers.get("x-request-id", "")
        assert REQUEST_ID.fullmatch(request_id), f"x-request-id {request_id!r}"
        ignored = answer.headers.get("openchatml-ignored-parameters")
        if ignored is not None:
            assert ignored.isascii() and ignored.isprintable(), f"ignored parameters {ignored!r}"
            assert ignored.count(", ") < MAX_REPORTED, f"ignored parameters {ignored!r}"
        kind = answer.headers.get("content-type", "")
        head = call.method == "HEAD"
        if 300 <= answer.status < 400:  # a redirect (a trailing slash): to a path of ours
            location = answer.headers.get("location", "")
            assert location.startswith("http://testserver/"), answer.headers
            return
        if answer.status in (429, 503):
            assert answer.headers.get("retry-after", "").isdigit(), f"{answer.status} without Retry-After"
        if not 200 <= answer.status < 300:
            assert kind.startswith("application/json"), f"non-2xx {answer.status} as {kind!r}"
            if head:
                return
            body = orjson.loads(answer.body)
            assert isinstance(body, dict) and list(body) == ["error"], body
            assert set(body["error"]) == {"message", "type", "param", "code"}, body
            assert isinstance(body["error"]["message"], str) and isinstance(body["error"]["code"], str), body
            return
        if head:
            return
        if kind.startswith("text/event-stream"):
            self.check_sse(call, answer.body)
        elif kind.startswith("application/json"):
            body = orjson.loads(answer.body)
            if isinstance(body, dict) and body.get("object") == "response" and "deleted" not in body:
                self.remember(body)
                status = body.get("status")
                if call.method == "POST" and call.path.endswith("/responses") and not body.get("background"):
                    assert status in ("completed", "incomplete", "failed", "cancelled"), body
                assert status in (
                    "completed",
                    "incomplete",
                    "failed",
                    "cancelled",
                    "queued",
                    "in_progress",
                ), body
                if status == "failed":
                    self.check_failure(body.get("error"))

    def check_sse(self, call: Call, raw: bytes) -> None:
        """Blocks of ``event:``/``data:`` lines whose JSON ``type`` is the event, numbered
        in order, ending in ``data: [DONE]`` after a terminal event (if any event)."""
        text = raw.decode("utf-8")
        assert text.endswith("\n\ndata: [DONE]\n\n") or text == "data: [DONE]\n\n", (
            f"cut stream: {text[-300:]!r}"
        )
        blocks = [b for b in text.split("\n\n") if b]
        assert blocks[-1] == "data: [DONE]"
        events = []
        for block in blocks[:-1]:
            lines = block.split("\n")
            assert len(lines) == 2 and lines[0].startswith("event: ") and lines[1].startswith("data: "), block
            event = orjson.loads(lines[1][6:])
            assert event["type"] == lines[0][7:], block
            events.append(event)
        numbers = [e["sequence_number"] for e in events]
        if numbers:
            assert numbers == list(range(numbers[0], numbers[0] + len(numbers))), numbers
        if not events:
            assert call.method == "GET", "a create stream without events"
            return
        if call.method == "POST":
            assert events[0]["type"] == "response.created" and numbers[0] == 0, events[0]
        last = events[-1]
        assert last["type"] in TERMINAL_EVENTS, f"the stream ends with {last['type']}"
        for event in events:
            if event["type"] == "error":  # OpenAI's error event holds the error's fields itself
                self.check_failure(event.get("error", event))
            response = event.get("response")
            if isinstance(response, dict):
                self.remember(response)
                if event["type"] == "response.failed":
                    self.check_failure(response.get("error"))

    @staticmethod
    def check_failure(error: Any) -> None:
        """A failed response failed for the engine's failure on purpose, not for the server's."""
        assert isinstance(error, dict), error
        assert error.get("code") != "server_error", f"a response failed inside the server: {error}"

    def remember(self, response: dict[str, Any]) -> None:
        """Keep the ids of responses and items the server gave, for later requests."""
        rid = response.get("id")
        if isinstance(rid, str) and rid not in self.response_ids[-64:]:
            self.response_ids.append(rid)
            del self.response_ids[:-256]
        for item in response.get("output") or ():
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                self.item_ids.append(item["id"])
        del self.item_ids[:-256]

    async def health(self) -> None:
        answer = await self.send(Call("GET", "/health"))
        assert answer.status == 200, f"/health answered {answer.status}: {answer.body[:300]!r}"
        assert orjson.loads(answer.body)["status"] == "ok"

    # --- one input --------------------------------------------------------------------

    async def run_calls(self, calls: Sequence[Call]) -> list[Answer]:
        """Send ``calls`` at once, check every answer, then ``/health``; the answers."""
        answers = await asyncio.gather(*(self.send(c) for c in calls), return_exceptions=True)
        checked: list[Answer] = []
        for call, answer in zip(calls, answers, strict=True):
            if isinstance(answer, BaseException):
                raise AssertionError(
                    f"{type(answer).__name__} escaped the app on {call!r}: {answer}"
                ) from answer
            try:
                self.check(call, answer)
            except Exception as exc:
                raise AssertionError(f"{exc} — on {call!r}") from exc
            checked.append(answer)
        await self.health()
        return checked

    def run(self, rng: random.Random, calls: Sequence[Call]) -> list[Answer]:
        """One input: ``calls`` at once, with the engine's choices drawn from ``rng``; any
        error the server logged meanwhile is a failure. Returns the answers."""
        self.engine.rng = rng
        before = len(self.errors.records)
        answers = self.loop.run_until_complete(self.run_calls(calls))
        # let what the requests started (background runs, writes) take a few steps
        for _ in range(2):
            self.loop.run_until_complete(asyncio.sleep(0))
        logged = self.errors.records[before:]
        if logged:
            record = logged[0]
            trace = "".join(traceback.format_exception(*record.exc_info)) if record.exc_info else ""
            raise AssertionError(f"the server logged an error: {record.getMessage()}\n{trace}")
        admission = self.service.admission
        live = sum(1 for r in self.service.runs.values() if r.task is not None and not r.task.done())
        assert admission.running + admission.queued <= live, (
            f"{admission.running} running and {admission.queued} queued tickets for {live} live runs"
        )
        return answers


_HARNESS: Harness | None = None


def harness() -> Harness:
    """The process's harness (made on first use, after ``fork``)."""
    global _HARNESS
    if _HARNESS is None:
        _HARNESS = Harness()
    return _HARNESS


def close_harness() -> None:
    """Close the process's harness, if there is one (the next input makes a fresh one)."""
    global _HARNESS
    if _HARNESS is not None:
        _HARNESS.close()
        _HARNESS = None


# --- the HTTP surface: random requests --------------------------------------------------------

METHODS: Final = (
    "GET",
    "POST",
    "DELETE",
    "PUT",
    "PATCH",
    "HEAD",
    "OPTIONS",
    "TRACE",
    "get",
    "FUZZ",
    "CONNECT",
)
QUERY_KEYS: Final = (
    "stream",
    "starting_after",
    "limit",
    "order",
    "after",
    "include",
    "include[]",
    "before",
    "x",
)


def quote(text: str, safe: str = "") -> str:
    """``text`` percent-encoded (lone surrogates as the bytes that would carry them)."""
    return _quote(text, safe=safe, errors="surrogatepass")


def random_id(rng: random.Random, h: Harness) -> str:
    """A response id: one the server gave, one like it, or anything."""
    roll = rng.random()
    if roll < 0.45 and h.response_ids:
        return rng.choice(h.response_ids[-32:])
    if roll < 0.55 and h.item_ids:
        return rng.choice(h.item_ids[-32:])
    if roll < 0.65:
        return ids.response_id()
    if roll < 0.75:
        return "resp_" + "a" * rng.choice((ids.MAX_ID_LENGTH - 5, ids.MAX_ID_LENGTH - 4, 1000))
    return quote(random_text(rng), safe="") or "x"


def random_query(rng: random.Random, h: Harness) -> bytes:
    """A query string of known and unknown parameters with odd values."""
    if rng.random() < 0.4:
        return b""
    pairs = []
    for _ in range(rng.randrange(1, 4)):
        key = rng.choice(QUERY_KEYS)
        value = rng.choice(
            (
                "true",
                "false",
                "1",
                "0",
                "TRUE",
                "yes",
                "",
                "-1",
                "-2",
                "20",
                "100",
                "101",
                "9" * 21,
                str(2**53),
                str(2**53 + 1),
                "1e3",
                "asc",
                "desc",
                " 5",
                "٣",  # an Arabic-Indic digit: int() takes it
                random_text(rng),
                random_id(rng, h),
            )
        )
        pairs.append(quote(key, safe="[]") + ("" if rng.random() < 0.05 else "=" + quote(value, safe="")))
    query = "&".join(pairs)
    if rng.random() < 0.05:
        query += "&" + "x" * rng.choice((100, 3000))
    if rng.random() < 0.05:
        query += "%zz%"
    return query.encode()


def random_path(rng: random.Random, h: Harness) -> tuple[str, str]:
    """A method and path: mostly known routes, sometimes anything."""
    prefix = "/v1" if rng.random() < 0.75 else ""
    rid = random_id(rng, h)
    routes = (
        (30, "POST", "/responses"),
        (10, "GET", f"/responses/{rid}"),
        (4, "DELETE", f"/responses/{rid}"),
        (5, "POST", f"/responses/{rid}/cancel"),
        (5, "GET", f"/responses/{rid}/input_items"),
        (5, "POST", "/responses/input_tokens"),
        (5, "POST", "/responses/compact"),
        (2, "GET", "/models"),
        (2, "GET", f"/models/{rng.choice((MODEL, 'x', 'a/b/c', quote(random_text(rng), safe='')))}"),
        (1, "GET", "/health"),
        (1, "GET", "/metrics"),
        (0.3, "GET", "/openapi.json"),
        (0.3, "GET", "/docs"),
        (1, "GET", "/"),
        (2, "GET", "/" + quote(random_text(rng), safe="/")),
        (2, "POST", "/responses/" + rid + "/" + quote(random_text(rng))),
    )
    _, method, path = rng.choices(routes, [r[0] for r in routes])[0]
    path = prefix + path if path.startswith("/responses") or path.startswith("/models") else path
    if rng.random() < 0.15:
        method = rng.choice(METHODS)
    roll = rng.random()
    if roll < 0.03:
        path += "/"
    elif roll < 0.05:
        path = path.replace("/", "//", 1)
    elif roll < 0.07:
        path = "/v1/../v1" + path[3:] if path.startswith("/v1") else path + "/.."
    elif roll < 0.08:
        path += "/" + "a" * 2100
    elif roll < 0.09:
        path += "%00"
    return method, path


def random_headers(rng: random.Random, body: bytes, chunks: int) -> list[tuple[bytes, bytes]]:
    """Authorization (mostly right), content type and length (mostly true), the wire
    dialect (``OpenChatML-Wire``, right or wrong, or an SDK's headers), and others."""
    headers: list[tuple[bytes, bytes]] = [(b"host", b"testserver")]
    roll = rng.random()
    if roll < 0.85:
        auth = b"Bearer " + rng.choice(KEYS).encode()
        if rng.random() < 0.05:
            auth = rng.choice((auth.lower(), auth + b" ", b"BEARER  " + KEYS[0].encode(), auth + b"\x80"))
    elif roll < 0.93:
        auth = rng.choice((b"", b"Bearer", b"Bearer ", b"Basic eDp5", b"Bearer sk-wrong", b"Bearer \xff\xfe"))
    else:
        auth = None
    if auth is not None:
        headers.append((b"authorization", auth))
    if rng.random() < 0.9:
        kind = rng.choice(
            (
                b"application/json",
                b"application/json",
                b"application/json; charset=utf-8",
                b"text/plain",
                b"multipart/form-data; boundary=x",
                b"application/x-www-form-urlencoded",
                b"",
                b"\xff",
            )
        )
        headers.append((b"content-type", kind))
    if body or rng.random() < 0.3:
        length = str(len(body)).encode()
        roll = rng.random()
        if roll < 0.05:
            length = rng.choice(
                (b"99999999999999999999", b"-1", b"abc", b"0", b"", str(len(body) + 7).encode())
            )
        if chunks == 1 or rng.random() < 0.5:
            headers.append((b"content-length", length))
    if rng.random() < 0.2:
        for _ in range(rng.randrange(1, 4)):
            name = rng.choice(
                (b"accept", b"x-request-id", b"openai-beta", b"accept-encoding", b"x-fuzz", b"cookie")
            )
            value = rng.choice((b"*/*", b"text/event-stream", b"", b"\x80\xff", b"gzip", b"a" * 200, b"x=1"))
            headers.append((name, value))
    if rng.random() < 0.15:  # the wire dialect: asked by name (or badly), or picked by the client
        name = rng.choice((b"openchatml-wire", b"openchatml-wire", b"x-stainless-lang", b"originator"))
        value = rng.choice((b"openai", b"openresponses", b"auto", b" OpenAI ", b"klingon", b"", b"\xff"))
        headers.append((name, value))
    if rng.random() < 0.02:
        headers.append((b"x-big", b"a" * rng.choice((3000, 5000))))
    if rng.random() < 0.03:
        rng.shuffle(headers)
    return headers


def random_body(rng: random.Random, method: str, path: str, h: Harness) -> bytes:
    """A body for a request: a valid-ish create body (often streamed), one mutated, random
    JSON, damaged bytes, nothing, or one past the size limit."""
    if method not in ("POST", "PUT", "PATCH") and rng.random() < 0.9:
        return b""
    roll = rng.random()
    if roll < 0.5:
        body = http_body(rng, h)
        if path.endswith("/compact") and rng.random() < 0.8:
            body = {k: v for k, v in body.items() if k in COMPACT_KEYS}
    elif roll < 0.78:
        body = mutate(rng, http_body(rng, h), rng.choice((1, 1, 2, 3)))
    elif roll < 0.85:
        body = random_json(rng)
    elif roll < 0.9:
        return damage_bytes(rng, to_bytes(rng, http_body(rng, h)))
    elif roll < 0.94:
        return rng.choice((b"", b"{}", b"null", b"[]", b"\xff", b'{"input": "hi"'))
    elif roll < 0.96:
        big = {"model": MODEL, "input": "x" * (HTTP_LIMITS.max_body_bytes + rng.choice((-200, 1, 10_000)))}
        return orjson.dumps(big)
    else:
        body = {
            "model": MODEL,
            "input": "hi",
            "instructions": deep(rng, rng.choice((10, 63, 64, 65, 1000)), "x"),
        }
    return to_bytes(rng, body)


def http_body(rng: random.Random, h: Harness) -> dict[str, Any]:
    """A create body for the fuzz server: valid, streamed half the time, chained to a known
    response or referring to known items sometimes."""
    model = MODEL if rng.random() < 0.9 else rng.choice(("fuzz-model", "other/scripted-model", ""))
    body = valid_body(rng, model=model)
    if rng.random() < 0.5:
        body["stream"] = True
    if rng.random() < 0.15 and h.response_ids:
        body["previous_response_id"] = rng.choice(h.response_ids[-32:])
    if rng.random() < 0.1 and h.item_ids and isinstance(body.get("input"), list):
        body["input"].append({"type": "item_reference", "id": rng.choice(h.item_ids[-32:])})
    if rng.random() < 0.1:
        body["background"] = True
        body["store"] = True
    if rng.random() < 0.1:
        body["max_output_tokens"] = rng.randrange(1, 20)
    return body


def random_call(rng: random.Random, h: Harness) -> Call:
    """One random request."""
    method, path = random_path(rng, h)
    body = random_body(rng, method, path, h)
    chunks = rng.choice((1, 1, 1, 2, 7)) if body else 1
    return Call(
        method,
        path,
        random_query(rng, h) if method != "POST" or rng.random() < 0.1 else b"",
        random_headers(rng, body, chunks),
        body,
        chunks,
        leave=rng.choice((0, 0, 1, 2, 3, 5, 8)) if rng.random() < 0.05 else None,
        gone_raises=rng.random() < 0.5,
        client=("127.0.0.1", 50000)
        if rng.random() < 0.1
        else (f"10.{rng.randrange(256)}.{rng.randrange(256)}.1", 4000),
    )


def racing_calls(rng: random.Random, h: Harness, *, leaving: bool = True) -> list[Call]:
    """A few requests at once on the same response: create (background or streamed),
    stream, retrieve, cancel, delete; with ``leaving``, some clients that create leave early."""
    rid = rng.choice(h.response_ids[-16:]) if h.response_ids else ids.response_id()
    auth = [(b"authorization", b"Bearer " + KEYS[0].encode()), (b"content-type", b"application/json")]
    calls: list[Call] = []
    for _ in range(rng.randrange(2, 5)):
        roll = rng.random()
        if roll < 0.3:
            body = http_body(rng, h)
            calls.append(
                Call(
                    "POST",
                    "/v1/responses",
                    b"",
                    auth,
                    orjson.dumps(body),
                    leave=rng.randrange(4) if leaving and rng.random() < 0.1 else None,
                    gone_raises=rng.random() < 0.5,
                )
            )
        elif roll < 0.5:
            query = b"stream=true" + (
                b"&starting_after=%d" % rng.randrange(-1, 6) if rng.random() < 0.5 else b""
            )
            calls.append(Call("GET", f"/v1/responses/{rid}", query, auth))
        elif roll < 0.65:
            calls.append(Call("POST", f"/v1/responses/{rid}/cancel", b"", auth))
        elif roll < 0.75:
            calls.append(Call("DELETE", f"/v1/responses/{rid}", b"", auth))
        elif roll < 0.85:
            calls.append(Call("GET", f"/v1/responses/{rid}/input_items", b"limit=3&order=asc", auth))
        else:
            calls.append(Call("GET", f"/v1/responses/{rid}", b"", auth))
    return calls


@dataclass(slots=True)
class HTTPCase:
    """One input of the HTTP target: its requests, sent at once."""

    calls: list[Call]

    def __repr__(self) -> str:
        return " || ".join(repr(c) for c in self.calls)


def http_one(rng: random.Random) -> None:
    """One input of ``server:http`` (raises :class:`~.target.FuzzFailure` on a violation)."""
    h = harness()
    calls = racing_calls(rng, h) if rng.random() < 0.1 else [random_call(rng, h)]
    case = HTTPCase(calls)
    try:
        h.run(rng, calls)
    except Exception as exc:
        raise FuzzFailure(short_repr(case, 4000), exc) from exc


TARGETS: list[Target] = [
    target("server:request-validator", VALIDATOR_MINIMUM, make_validator_case, check_validator_case),
    Target("server:http", HTTP_MINIMUM, http_one),
]
