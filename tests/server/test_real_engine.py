"""The server over a real engine: transformers on CPU with a tiny random-weight gpt-oss.

A random model samples random tokens; whatever it samples, every answer is a valid
response (lenient parse), never a 500, and every event matches the schema.
"""

from __future__ import annotations

from typing import Any

import pytest
from openapi import validate
from test_responses_api import WEATHER_TOOL, check_stream, sse_events


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_model_gives_valid_responses(serve: Any, tiny_engine: Any, seed: int) -> None:
    server = serve(tiny_engine)
    body = {
        "model": "tiny",
        "input": f"Hello {seed}",
        "max_output_tokens": 48,
        "seed": seed,
        "temperature": 1.0,
    }
    with server.http() as http:
        plain = http.post("/v1/responses", json=body)
        tools = http.post("/v1/responses", json={**body, "tools": [WEATHER_TOOL]})
        stream = http.post("/v1/responses", json={**body, "stream": True})
    for reply in (plain, tools):
        assert reply.status_code == 200, reply.text
        validate(reply.json(), "ResponseResource")
        usage = reply.json()["usage"]
        assert 0 < usage["output_tokens"] <= 48 and usage["input_tokens"] > 20
    events = sse_events(stream.text)
    check_stream(events)
    assert events[-1]["response"]["usage"]["output_tokens"] <= 48


def test_sdk_over_real_engine(serve: Any, tiny_engine: Any) -> None:
    server = serve(tiny_engine)
    client = server.client()
    first = client.responses.create(model="tiny", input="Hi", max_output_tokens=32, temperature=0)
    again = client.responses.create(model="tiny", input="Hi", max_output_tokens=32, temperature=0)
    assert first.usage.output_tokens == again.usage.output_tokens  # greedy decoding repeats itself

    def strip(response: Any) -> list[dict[str, Any]]:
        drop = {"id", "call_id"}
        return [{k: v for k, v in o.model_dump().items() if k not in drop} for o in response.output]

    assert strip(first) == strip(again)
    follow = client.responses.create(
        model="tiny", input="More", previous_response_id=first.id, max_output_tokens=16
    )
    assert follow.previous_response_id == first.id
    assert follow.usage.input_tokens > first.usage.input_tokens
    assert client.responses.retrieve(first.id).id == first.id
