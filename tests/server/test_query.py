"""Query-string parameters: absent ones take their default, malformed or out-of-range ones
are a 400 naming the parameter."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from starlette.requests import Request

from openchatml.responses.errors import RequestError
from openchatml.server.query import MAX_QUERY_INT, bool_param, choice_param, id_param, int_param


def request(query: str) -> Request:
    scope = {"type": "http", "method": "GET", "path": "/", "query_string": query.encode(), "headers": []}
    return Request(scope)


def refused(call: Callable[..., object], *args: object, **options: object) -> RequestError:
    with pytest.raises(RequestError) as caught:
        call(*args, **options)
    assert caught.value.status == 400
    return caught.value


def test_int_param() -> None:
    assert int_param(request(""), "limit", 20) == 20
    assert int_param(request("limit=7"), "limit", 20, low=1, high=100) == 7
    assert int_param(request(f"after={MAX_QUERY_INT}"), "after", None) == MAX_QUERY_INT
    for raw in ("x", "1e3", "9" * 21, ""):
        error = refused(int_param, request(f"limit={raw}"), "limit", 20)
        assert error.param == "limit" and "must be an integer" in error.message
    error = refused(int_param, request("limit=101"), "limit", 20, low=1, high=100)
    assert error.message == "'limit' must be between 1 and 100, got 101."


def test_bool_param() -> None:
    assert bool_param(request(""), "stream") is False
    assert [bool_param(request(f"stream={raw}"), "stream") for raw in ("true", "TRUE", "1")] == [True] * 3
    assert [bool_param(request(f"stream={raw}"), "stream") for raw in ("false", "0")] == [False] * 2
    error = refused(bool_param, request("stream=yes"), "stream")
    assert error.param == "stream" and error.message == "'stream' must be 'true' or 'false', got 'yes'."


def test_choice_param() -> None:
    assert choice_param(request(""), "order", "desc", ("asc", "desc")) == "desc"
    assert choice_param(request("order=asc"), "order", "desc", ("asc", "desc")) == "asc"
    error = refused(choice_param, request("order=up"), "order", "desc", ("asc", "desc"))
    assert error.param == "order" and error.message == "'order' must be 'asc' or 'desc'."


def test_id_param() -> None:
    assert id_param(request(""), "after", 8) is None
    assert id_param(request("after=msg_1234"), "after", 8) == "msg_1234"
    error = refused(id_param, request("after=msg_12345"), "after", 8)
    assert error.param == "after" and error.message == "'after' is longer than 8 characters."
