"""Fuzzing the request validator and the HTTP surface, in short budgets (the long runs are
``python fuzz/run.py --only server``, whose targets and helpers live in ``fuzz/server.py``).

The validator (``parse_request`` on decoded bodies, ``request_of`` on bytes) raises only
typed 4xx errors in the API's envelope, whatever the JSON, the bytes or the nesting, and
accepts every valid body. The app, driven in process over raw ASGI (see
``fuzz.server.Harness``), never answers >= 500, answers every non-2xx in the error
envelope, ends every SSE body with a terminal event and ``data: [DONE]``, logs no error,
leaks no admission ticket, and keeps answering ``/health`` — over random bodies, headers,
query strings, and clients that leave early.
"""

from __future__ import annotations

import importlib
import itertools
import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openchatml.responses.errors import APIError
from openchatml.responses.limits import MAX_JSON_DEPTH, RequestLimits
from openchatml.responses.request import ResponseRequest, parse_request
from openchatml.server.request_body import request_of

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

fuzz_server = importlib.import_module("fuzz.server")
fuzz_run = importlib.import_module("fuzz.run")

FAST = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HTTP = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# --- strategies -------------------------------------------------------------------------------

KEYS = st.sampled_from(fuzz_server.KNOWN_KEYS) | st.text(max_size=8)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.sampled_from(fuzz_server.NUMBERS)
    | st.text(max_size=20)
    | st.sampled_from(fuzz_server.WORDS)
)
JSON = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=20,
)
"""Any JSON value (numbers past 64 bits, NaN and infinities included)."""
ITEM_TYPES = (
    "message",
    "function_call",
    "function_call_output",
    "reasoning",
    "compaction",
    "item_reference",
    "input_text",
    None,
)
ITEMS = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(ITEM_TYPES),
        "role": st.sampled_from(("user", "assistant", "system", "developer", "tool")) | JSON,
        "content": st.text(max_size=10)
        | st.lists(
            st.fixed_dictionaries(
                {"type": st.sampled_from(("input_text", "output_text", "text", "refusal", "input_image"))},
                optional={"text": JSON, "refusal": JSON, "image_url": JSON, "annotations": JSON},
            ),
            max_size=3,
        )
        | JSON,
        **{k: JSON for k in ("id", "name", "call_id", "arguments", "output", "summary", "encrypted_content")},
    },
)
BODIES = st.fixed_dictionaries(
    {},
    optional={
        **{k: JSON for k in fuzz_server.BODY_KEYS},
        "model": st.just(fuzz_server.MODEL) | JSON,
        "input": st.text(max_size=20) | st.lists(ITEMS, max_size=4) | JSON,
        "stream": st.booleans() | JSON,
    },
)
"""Create-response bodies with every known parameter present or not, of any value."""


def check(value: Any, *, limits: RequestLimits | None = None) -> ResponseRequest | None:
    """``value`` (decoded, or bytes) through the validator: a request, or ``None`` after a
    typed 4xx error in the envelope; anything else fails."""
    case = fuzz_server.ValidatorCase("hypothesis", value, limits or RequestLimits())
    fuzz_server.check_validator_case(case)
    try:
        if isinstance(value, bytes):
            return request_of(value, case.limits)
        return parse_request(value, case.limits)
    except APIError:
        return None


def as_json_bytes(value: Any) -> bytes:
    """``value`` as JSON text (the standard library's writer: big numbers and NaN too)."""
    return json.dumps(value).encode()


# --- the validator ----------------------------------------------------------------------------


@FAST
@given(JSON)
def test_the_validator_takes_any_json_value(value: Any) -> None:
    check(value)
    check(as_json_bytes(value))


@FAST
@given(BODIES, st.sampled_from(fuzz_server.LIMITS_CHOICES))
def test_the_validator_takes_any_value_of_every_parameter(
    body: dict[str, Any], limits: RequestLimits
) -> None:
    check(body, limits=limits)
    check(as_json_bytes(body), limits=limits)


@FAST
@given(st.integers(0, 2**48), st.integers(1, 4))
def test_valid_bodies_are_accepted_and_their_mutations_refused_by_type(seed: int, times: int) -> None:
    rng = random.Random(seed)
    body = fuzz_server.valid_body(rng)
    assert isinstance(check(body), ResponseRequest), body
    assert isinstance(check(orjson.dumps(body)), ResponseRequest), body
    mutated = fuzz_server.mutate(rng, body, times)
    check(mutated)
    check(fuzz_server.to_bytes(rng, mutated))


@FAST
@given(st.binary(max_size=200) | st.integers(0, 2**48).map(lambda s: damaged(s)))
def test_the_validator_takes_any_bytes(raw: bytes) -> None:
    check(raw)
    for drop, only in fuzz_server.OPTIONS[2:]:
        fuzz_server.check_validator_case(fuzz_server.ValidatorCase("bytes", raw, RequestLimits(), drop, only))


def damaged(seed: int) -> bytes:
    """A valid body's JSON text, damaged byte by byte (see ``fuzz.server.damage_bytes``)."""
    rng = random.Random(seed)
    raw: bytes = fuzz_server.damage_bytes(rng, orjson.dumps(fuzz_server.valid_body(rng)))
    return raw


@pytest.mark.parametrize("depth", [63, 64, 65, 254, 255, 1023, 1024, 1025, 1100])
@pytest.mark.parametrize("kind", ["list", "dict", "mixed"])
def test_deep_nesting_is_refused_by_name(depth: int, kind: str) -> None:
    rng = random.Random(depth)
    value: Any = "x"
    for i in range(depth):
        as_list = kind == "list" or (kind == "mixed" and i % 2 == 0)
        value = [value] if as_list else {"x": value}
    for key in ("input", "instructions", "tools", "metadata", "user", "text"):
        body = {"model": fuzz_server.MODEL, key: value}
        for sent in (body, fuzz_server.dumps_deep(body).encode(), fuzz_server.to_bytes(rng, body)):
            result = check(sent)
            if depth + 1 > MAX_JSON_DEPTH:  # the body itself is one level
                assert result is None  # nesting past the limit never passes


# --- the HTTP surface -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def harness() -> Iterator[Any]:
    """The app in process, over a SQLite store in memory and the fuzz engine."""
    h = fuzz_server.Harness()
    yield h
    h.close()


AUTH = (b"authorization", b"Bearer " + fuzz_server.KEYS[0].encode())
JSON_TYPE = (b"content-type", b"application/json")
CREATE_ROUTES = ("/v1/responses", "/responses", "/v1/responses/input_tokens", "/v1/responses/compact")


_clients = itertools.count()


def send(h: Any, seed: int, *calls: Any) -> list[Any]:
    """``calls`` at once, each from an address of its own (so that the failed
    authentications of one test never lock another out); every invariant of
    ``fuzz.server`` is checked. The answers."""
    for call in calls:
        n = next(_clients)
        call.client = (f"10.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}", 40000)
    return list(h.run(random.Random(seed), list(calls)))


@HTTP
@given(
    st.one_of(
        BODIES.map(as_json_bytes),
        JSON.map(as_json_bytes),
        st.binary(max_size=100),
        st.integers(0, 2**48).map(damaged),
    ),
    st.sampled_from(CREATE_ROUTES),
    st.booleans(),
    st.integers(1, 4),
    st.integers(0, 2**32),
)
def test_random_bodies(harness: Any, body: bytes, path: str, stream: bool, chunks: int, seed: int) -> None:
    if stream and body.startswith(b"{") and body.endswith(b"}") and len(body) > 2:
        body = body[:-1] + b',"stream":true}'
    call = fuzz_server.Call("POST", path, b"", [AUTH, JSON_TYPE], body, chunks=chunks)
    send(harness, seed, call)


@HTTP
@given(st.integers(0, 2**48), st.sampled_from(CREATE_ROUTES))
def test_valid_and_mutated_bodies(harness: Any, seed: int, path: str) -> None:
    rng = random.Random(seed)
    body: Any = fuzz_server.http_body(rng, harness)
    if rng.random() < 0.6:
        body = fuzz_server.mutate(rng, body, rng.randrange(1, 4))
    call = fuzz_server.Call("POST", path, b"", [AUTH, JSON_TYPE], fuzz_server.to_bytes(rng, body))
    send(harness, seed, call)


HEADER_NAMES = st.sampled_from(
    (b"authorization", b"content-type", b"content-length", b"accept", b"x-request-id", b"cookie")
) | st.text("abcdefghijklmnopqrstuvwxyz0123456789-_!#$%&'*+.^`|~", min_size=1, max_size=12).map(str.encode)
HEADER_VALUES = st.binary(max_size=60).filter(
    lambda v: not any(c in v for c in b"\r\n\x00")
) | st.sampled_from(
    (
        b"Bearer " + fuzz_server.KEYS[0].encode(),
        b"Bearer x",
        b"application/json",
        b"-1",
        b"99999999999999999999",
    )
)
"""What an HTTP/1.1 parser hands over: token names (lowercased), values without CR, LF or NUL."""


@HTTP
@given(
    st.lists(st.tuples(HEADER_NAMES, HEADER_VALUES), max_size=6),
    st.sampled_from(
        ("POST /v1/responses", "GET /v1/models", "GET /v1/responses/x", "DELETE /v1/responses/x")
    ),
    st.booleans(),
    st.integers(0, 2**32),
)
def test_random_headers(
    harness: Any, headers: list[tuple[bytes, bytes]], route: str, stream: bool, seed: int
) -> None:
    method, path = route.split(" ")
    body = (
        orjson.dumps({"model": fuzz_server.MODEL, "input": "hi", "stream": stream})
        if method == "POST"
        else b""
    )
    call = fuzz_server.Call(method, path, b"", headers, body)
    send(harness, seed, call)


QUERY_KEYS = st.sampled_from(fuzz_server.QUERY_KEYS) | st.text(max_size=6)
QUERY_VALUES = st.sampled_from(
    ("true", "false", "1", "0", "-1", "-2", "101", "9" * 21, "asc", "desc")
) | st.text(max_size=12)


@HTTP
@given(
    st.lists(st.tuples(QUERY_KEYS, QUERY_VALUES), max_size=4),
    st.sampled_from(("", "/input_items", "/cancel")),
    st.integers(0, 2**32),
)
def test_random_query_strings(harness: Any, pairs: list[tuple[str, str]], tail: str, seed: int) -> None:
    rng = random.Random(seed)
    if not harness.response_ids:  # one stored response to ask about
        send(harness, seed, create_call({"stream": False}))
    rid = rng.choice(harness.response_ids) if rng.random() < 0.8 else fuzz_server.random_id(rng, harness)
    query = "&".join(
        quote(k, safe="", errors="surrogatepass") + "=" + quote(v, safe="", errors="surrogatepass")
        for k, v in pairs
    )
    method = "POST" if tail == "/cancel" else "GET"
    call = fuzz_server.Call(method, f"/v1/responses/{rid}{tail}", query.encode(), [AUTH])
    send(harness, seed, call)


def create_call(extra: dict[str, Any], **options: Any) -> Any:
    body = {"model": fuzz_server.MODEL, "input": "hi", **extra}
    return fuzz_server.Call("POST", "/v1/responses", b"", [AUTH, JSON_TYPE], orjson.dumps(body), **options)


@HTTP
@given(st.integers(0, 2**48))
def test_requests_racing_on_one_response(harness: Any, seed: int) -> None:
    rng = random.Random(seed)
    send(harness, seed, create_call({"background": rng.random() < 0.5, "stream": rng.random() < 0.5}))
    send(harness, seed, *fuzz_server.racing_calls(rng, harness, leaving=False))  # see below for leaving


# --- clients that leave -----------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_clients_that_leave(harness: Any, stream: bool) -> None:
    """The client goes away right after its request, or after a few writes of a stream
    (as uvicorn tells the app: ``http.disconnect``, later writes dropped): nothing escapes
    the app, nothing is logged as an error."""
    for seed in range(60):
        leave = 0 if not stream else seed % 4
        (answer,) = send(harness, seed, create_call({"stream": stream}, leave=leave))
        assert answer.status in (200, 499), answer  # the response ran (or began to)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_clients_that_leave_a_server_whose_writes_then_raise(harness: Any, stream: bool) -> None:
    """The same on an ASGI 2.4 server that raises ``OSError`` on a write to a client gone."""
    for seed in range(20):
        leave = 0 if not stream else seed % 4
        (answer,) = send(harness, seed, create_call({"stream": stream}, leave=leave, gone_raises=True))
        # 0: the client was gone before the answer began, so no write reached it
        assert answer.status in (0, 200, 499), answer


# --- the long runner's targets ----------------------------------------------------------------


def test_every_server_target_runs_in_the_runner() -> None:
    try:
        results = [fuzz_run.run_target(t, seed=1, minimum=20) for t in fuzz_server.TARGETS]
    finally:
        fuzz_server.close_harness()
    assert [(r.name, r.examples) for r in results if not r.ok] == []
    assert [(r.name, r.inputs, r.stopped) for r in results] == [
        ("server:request-validator", 20, "done"),
        ("server:http", 20, "done"),
    ]
    minimums = {t.name: t.minimum for t in fuzz_server.TARGETS}
    assert minimums == {"server:request-validator": 1_000_000, "server:http": 20_000}
    assert [t.name for t in fuzz_run.load_targets(("fuzz.server",))] == list(minimums)
