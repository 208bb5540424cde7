"""Rate limits: every request of a key counts, each WebSocket ``response.create`` too;
failed authentications are limited per client address, on a budget of their own."""

from __future__ import annotations

import json
from typing import Any

import pytest
from live import ScriptedEngine, completion
from openapi import validate

from openchatml import Message
from openchatml.responses.errors import AuthError, RateLimitError
from openchatml.server.auth import AuthGuard, Buckets, KeyChecker, RateLimiter, client_address
from openchatml.server.limits import Limits

ANSWER = completion(Message.assistant("Hello there!", channel="final"))
BODY = {"model": "scripted-model", "input": "hi", "store": False}


# --- the limiters ------------------------------------------------------------------------


def test_buckets_refill_and_say_when() -> None:
    buckets = Buckets(6)  # one token every 10 s
    for _ in range(6):
        assert buckets.wait("k", now=0.0) == 0
        buckets.take("k", now=0.0)
    assert buckets.wait("k", now=0.0) == 10
    assert buckets.wait("k", now=4.0) == 6
    assert buckets.wait("k", now=10.0) == 0
    assert buckets.wait("other", now=0.0) == 0


def test_buckets_forget_the_least_recently_used() -> None:
    buckets = Buckets(1, max_tracked=2)
    for name in ("a", "b", "a", "c"):
        buckets.take(name, now=0.0)
    assert len(buckets) == 2
    assert buckets.wait("b", now=0.0) == 0  # forgotten: a full bucket again
    assert buckets.wait("a", now=0.0) > 0 and buckets.wait("c", now=0.0) > 0


def test_rate_limiter_raises_with_retry_after() -> None:
    limiter = RateLimiter(2)
    limiter.check("k", now=0.0)
    limiter.check("k", now=0.0)
    with pytest.raises(RateLimitError) as caught:
        limiter.check("k", now=0.0)
    assert (caught.value.code, caught.value.retry_after) == ("rate_limit_exceeded", 30)
    limiter.check("k", now=30.0)
    RateLimiter(None).check("k")
    RateLimiter(0).check("k")


def test_auth_failures_have_their_own_budget_per_address() -> None:
    guard = AuthGuard(KeyChecker(["good"]), failures_per_minute=3)
    with pytest.raises(AuthError):
        guard.check("Bearer typo", "10.0.0.1", now=0.0)
    for _ in range(20):  # a typo does not starve the client: its key works, and costs nothing
        assert guard.check("Bearer good", "10.0.0.1", now=0.0) == "good"
    for _ in range(2):
        with pytest.raises(AuthError):
            guard.check(None, "10.0.0.1", now=0.0)
    for authorization in ("Bearer guess", "Bearer good"):  # over budget: nothing is tried
        with pytest.raises(RateLimitError) as caught:
            guard.check(authorization, "10.0.0.1", now=1.0)
        assert (caught.value.code, caught.value.retry_after) == ("too_many_auth_failures", 19)
    assert guard.check("Bearer good", "10.0.0.2", now=1.0) == "good"  # another address
    assert guard.check("Bearer good", "10.0.0.1", now=20.0) == "good"  # a failure refilled
    assert AuthGuard(KeyChecker(), failures_per_minute=1).check("Bearer x", "10.0.0.1") is None


def test_client_address() -> None:
    assert client_address("192.0.2.7") == "192.0.2.7"
    assert client_address("2001:db8:1:2:3:4:5:6") == client_address("2001:db8:1:2::9") == "2001:db8:1:2::/64"
    assert client_address("::ffff:192.0.2.7") == "192.0.2.7"
    assert client_address("testclient") == "testclient"
    assert client_address(None) == "unknown"


# --- the server --------------------------------------------------------------------------


def test_every_response_counts_on_every_transport(serve: Any) -> None:
    from websockets.sync.client import connect

    server = serve(ScriptedEngine(ANSWER), limits=Limits(requests_per_minute=5))
    with server.http() as http:
        assert http.post("/v1/responses", json=BODY).status_code == 200  # 1
        assert http.post("/v1/responses", json={**BODY, "stream": True}).status_code == 200  # 2
        for _ in range(3):  # never counted
            assert http.get("/health").status_code == 200
            assert http.get("/metrics").status_code == 200
    with connect(server.url.replace("http", "ws") + "/v1/responses") as ws:  # the handshake: 3

        def turn() -> dict[str, Any]:
            ws.send(json.dumps({"type": "response.create", **BODY}))
            while True:
                event = json.loads(ws.recv(timeout=20))
                if event["type"] in ("response.completed", "error"):
                    return dict(event)

        assert turn()["type"] == "response.completed"  # 4
        assert turn()["type"] == "response.completed"  # 5
        refused = turn()
        validate(refused, "WebSocketErrorEvent")
        assert refused["status"] == 429 and refused["error"]["code"] == "rate_limit_exceeded"
        assert refused["error"]["headers"]["retry-after"].isdigit()
        ws.send("not json")  # the connection stays open
        answer = json.loads(ws.recv(timeout=20))
        assert answer["status"] == 400 and answer["error"]["code"] == "invalid_json"
    with server.http() as http:
        over = http.post("/v1/responses", json=BODY)
        assert over.status_code == 429 and over.headers["retry-after"].isdigit()
        assert http.get("/health").status_code == 200


def test_failed_authentication_is_limited(serve: Any) -> None:
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    server = serve(ScriptedEngine(ANSWER), keys=["good"], limits=Limits(auth_failures_per_minute=3))
    good = {"Authorization": "Bearer good"}
    with server.http() as http:
        assert http.get("/v1/models", headers={"Authorization": "Bearer typo"}).status_code == 401
        assert http.post("/v1/responses", json=BODY, headers=good).status_code == 200
        assert http.get("/v1/models").status_code == 401
        with pytest.raises(InvalidStatus) as refused:  # a WebSocket handshake is refused as HTTP
            connect(server.url.replace("http", "ws") + "/v1/responses")
        assert refused.value.response.status_code == 401
        flooded = http.get("/v1/models", headers={"Authorization": "Bearer guess"})
        assert flooded.status_code == 429
        assert flooded.headers["retry-after"].isdigit() and int(flooded.headers["retry-after"]) >= 1
        error = flooded.json()["error"]
        assert (error["type"], error["code"]) == ("too_many_requests", "too_many_auth_failures")
        assert http.get("/v1/models", headers=good).status_code == 429  # the address waits, whatever the key
        with pytest.raises(InvalidStatus) as refused:
            connect(server.url.replace("http", "ws") + "/v1/responses", additional_headers=good)
        assert refused.value.response.status_code == 429
        assert refused.value.response.headers["retry-after"].isdigit()
        assert http.get("/health").status_code == 200  # never limited
