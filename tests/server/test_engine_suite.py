"""The server over real engines, started as a user starts it: ``openchatml serve``.

The same tests run against the in-process transformers engine and, through
``--upstream``, against a real vLLM (CPU) and a real llama.cpp ``llama-server`` (built
from source, the model converted to GGUF), all serving the tiny random-weight gpt-oss. A
random model samples random tokens, so the tests assert what must hold whatever it says:
every body and event valid against the schema, usage counted from the real tokens,
greedy decoding repeatable, chains, background runs, cancellation and disconnects
stopping the engine, and (over vLLM and llama.cpp) output items equal to what the
upstream's own completion endpoint samples for the same prompt, translated offline.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import openai
import pytest
from cli_server import CliServer
from openapi import validate
from test_responses_api import WEATHER_TOOL, check_stream, sse_events

from openchatml.demo_models.tiny_random import ensure_tiny_model
from openchatml.engines.upstream_requests import HARMONY_RESERVED, llamacpp_grammar
from openchatml.responses.dialect import HarmonyDialect
from openchatml.responses.input import build_conversation
from openchatml.responses.request import parse_request
from openchatml.responses.resource import ResponseState
from openchatml.responses.stream import EventBuilder

MODEL = "tiny-gpt-oss"
TERMINAL = ("completed", "incomplete", "failed", "cancelled")
UPSTREAM_RUNNING = {"vllm": "vllm:num_requests_running", "llamacpp": "llamacpp:requests_processing"}
"""Each upstream's Prometheus gauge of the requests it is generating for."""


@pytest.fixture(
    scope="module",
    params=[
        "transformers",
        pytest.param("vllm", marks=pytest.mark.vllm),
        pytest.param("llamacpp", marks=pytest.mark.llamacpp),
    ],
)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliServer]:
    """``openchatml serve`` over the tiny model: in process, or through a real vLLM or llama.cpp."""
    home = tmp_path_factory.mktemp(f"serve-{request.param}")
    upstream = None
    if request.param in UPSTREAM_RUNNING:
        upstream = request.getfixturevalue(f"{request.param}_server").base_url
        args = ["--upstream", upstream]
    else:
        args = ["--model", str(ensure_tiny_model()), "--device", "cpu"]
    running = CliServer(args, home, engine=request.param, upstream=upstream)
    yield running
    running.stop()
    assert running.process.returncode == 0, running.log()


def running_count(url: str, metric: str) -> float:
    """The sum of a gauge's samples on a Prometheus ``/metrics`` page."""
    text = httpx.get(f"{url}/metrics", timeout=10).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(metric))


def settle(url: str, metric: str, seconds: float = 20.0) -> float:
    """Wait until ``metric`` reads 0 (or ``seconds`` pass); its last value."""
    deadline = time.monotonic() + seconds
    value = running_count(url, metric)
    while value and time.monotonic() < deadline:
        time.sleep(0.05)
        value = running_count(url, metric)
    return value


def upstream_settles(server: CliServer) -> None:
    """The upstream engine (if any) soon generates for no request."""
    if server.upstream:
        metric = UPSTREAM_RUNNING[server.engine]
        assert settle(server.upstream, metric) == 0, f"{server.engine} still generating"


def without_ids(output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Output items with their fresh ids (item ids, call ids) removed."""
    return [{k: v for k, v in item.items() if k not in ("id", "call_id")} for item in output]


def test_serve_prints_what_it_serves(server: CliServer) -> None:
    line = next(line for line in server.log().splitlines() if line.startswith("openchatml serving"))
    assert f"http://127.0.0.1:{server.port}/v1/responses" in line
    assert "store: " in line and (server.engine if server.upstream else "transformers") in line
    with server.http() as http:
        models = http.get("/v1/models").json()
    validate_model = models["data"][0]
    assert models["object"] == "list" and validate_model["id"].endswith(MODEL)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_completions_are_valid_responses(server: CliServer, seed: int) -> None:
    body = {
        "model": MODEL,
        "input": f"Hello {seed}",
        "max_output_tokens": 48,
        "seed": seed,
        "temperature": 1.0,
    }
    with server.http() as http:
        plain = http.post("/v1/responses", json=body)
        tools = http.post("/v1/responses", json={**body, "tools": [WEATHER_TOOL]})
        stream = http.post("/v1/responses", json={**body, "stream": True})
        counted = http.post("/v1/responses/input_tokens", json=body)
    for reply in (plain, tools):
        assert reply.status_code == 200, reply.text
        validate(reply.json(), "ResponseResource")
        usage = reply.json()["usage"]
        assert 0 < usage["output_tokens"] <= 48
        assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert plain.json()["usage"]["input_tokens"] == counted.json()["input_tokens"]
    assert tools.json()["usage"]["input_tokens"] > plain.json()["usage"]["input_tokens"]
    events = sse_events(stream.text)
    check_stream(events)
    final = events[-1]["response"]
    assert final["usage"]["output_tokens"] <= 48
    with server.http() as http:
        assert http.get(f"/v1/responses/{final['id']}").json() == final


def test_sdk_greedy_chain_retrieve_delete(server: CliServer) -> None:
    client = server.client()
    first = client.responses.create(model=MODEL, input="Hi", max_output_tokens=32, temperature=0)
    again = client.responses.create(model=MODEL, input="Hi", max_output_tokens=32, temperature=0)
    assert without_ids([o.model_dump() for o in first.output]) == without_ids(
        [o.model_dump() for o in again.output]
    ), "greedy decoding repeats itself"
    assert first.usage.output_tokens == again.usage.output_tokens

    with client.responses.stream(model=MODEL, input="Hi", max_output_tokens=32, temperature=0) as stream:
        events = list(stream)
    kinds = [event.type for event in events]
    assert kinds[0] == "response.created" and kinds[-1] in ("response.completed", "response.incomplete")
    streamed = events[-1].response
    assert without_ids([o.model_dump() for o in streamed.output]) == without_ids(
        [o.model_dump() for o in first.output]
    ), "streamed and non-streamed greedy answers agree"

    follow = client.responses.create(
        model=MODEL, input="More", previous_response_id=first.id, max_output_tokens=8
    )
    assert follow.previous_response_id == first.id
    assert follow.usage.input_tokens > first.usage.input_tokens
    items = client.responses.input_items.list(follow.id, order="asc")
    assert [i.type for i in items.data][-1] == "message"
    assert items.data[-1].content[0].text == "More"
    assert client.responses.retrieve(follow.id).output_text == follow.output_text
    client.responses.delete(follow.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(follow.id)


def test_client_history_with_tool_results(server: CliServer) -> None:
    """A conversation the client carries itself: function call and its output as items."""
    items = [
        {"type": "message", "role": "user", "content": "Weather in Paris?"},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": '{"temp": 21}'},
    ]
    with server.http() as http:
        reply = http.post(
            "/v1/responses",
            json={"model": MODEL, "input": items, "tools": [WEATHER_TOOL], "max_output_tokens": 16},
        )
        orphan = http.post(
            "/v1/responses", json={"model": MODEL, "input": items[2:], "tools": [WEATHER_TOOL]}
        )
    assert reply.status_code == 200, reply.text
    validate(reply.json(), "ResponseResource")
    assert orphan.status_code == 400
    validate(orphan.json()["error"], "Error")
    assert orphan.json()["error"]["param"].startswith("input")


def test_max_output_tokens_gives_incomplete(server: CliServer) -> None:
    reply = server.client().responses.create(
        model=MODEL, input="Tell me a story", max_output_tokens=4, extra_body={"seed": 3}
    )
    if reply.status == "incomplete":
        assert reply.incomplete_details.reason == "max_output_tokens"
        assert reply.usage.output_tokens == 4
    else:  # the model sampled a stop token within four tokens
        assert reply.status == "completed" and reply.usage.output_tokens <= 4


def test_background_poll_and_cancel(server: CliServer) -> None:
    client = server.client()
    short = client.responses.create(model=MODEL, input="hi", background=True, max_output_tokens=8)
    assert short.status in ("queued", "in_progress")
    deadline = time.monotonic() + 60
    while (got := client.responses.retrieve(short.id)).status not in TERMINAL:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert got.usage.output_tokens <= 8

    cancelled = 0
    for sampling in [{"temperature": 0}, *({"seed": seed} for seed in range(4))]:
        # it may end its turn on its own before the cancel lands
        long = client.responses.create(
            model=MODEL,
            input="Write at length.",
            background=True,
            max_output_tokens=3000,
            extra_body=sampling,
        )
        try:
            answer = client.responses.cancel(long.id)
        except openai.ConflictError:
            assert client.responses.retrieve(long.id).status in TERMINAL
            continue
        assert answer.status == "cancelled"
        assert client.responses.retrieve(long.id).status == "cancelled"
        cancelled += 1
        break
    assert cancelled == 1
    assert settle(server.url, "openchatml_responses_running") == 0
    upstream_settles(server)


def test_client_disconnect_stops_generation(server: CliServer) -> None:
    body = {"model": MODEL, "input": "Go on forever.", "stream": True, "max_output_tokens": 3000}
    # greedy, the tiny model writes final answers forever; sampled, it may end its turn
    # first. The client leaves at its first event: a fast upstream (vLLM samples the tiny
    # model at thousands of tokens a second) must still be stopped short of the limit.
    for sampling in [{"temperature": 0}, *({"seed": seed} for seed in range(8))]:
        with (
            httpx.Client(base_url=server.url, timeout=60) as http,
            http.stream("POST", "/v1/responses", json={**body, **sampling}) as reply,
        ):
            lines = reply.iter_lines()
            first = json.loads(next(line for line in lines if line.startswith("data: "))[len("data: ") :])
        assert settle(server.url, "openchatml_responses_running") == 0, (
            "generation went on after the client left"
        )
        upstream_settles(server)
        stored = server.client().responses.retrieve(first["response"]["id"])
        if stored.status == "completed":  # the turn ended before the server heard the client go
            continue
        assert stored.status == "cancelled", stored.status
        assert stored.usage.output_tokens < 3000
        return
    pytest.fail("every try ended its turn before the client left")


def test_websocket_turns(server: CliServer) -> None:
    from websockets.sync.client import connect

    with connect(server.url.replace("http", "ws") + "/v1/responses") as ws:
        previous = None
        for text in ("hi", "again"):
            message = {"type": "response.create", "model": MODEL, "input": text, "max_output_tokens": 16}
            if previous:
                message["previous_response_id"] = previous
            ws.send(json.dumps({**message, "store": False}))
            events: list[dict[str, Any]] = []
            while not events or events[-1]["type"] not in (
                "response.completed",
                "response.incomplete",
                "error",
            ):
                events.append(json.loads(ws.recv(timeout=60)))
            check_stream(events)
            previous = events[-1]["response"]["id"]


Sampler = Callable[[httpx.Client, Any], tuple[list[int], bool]]
"""Asks the upstream itself for a greedy completion of a prepared prompt: its ids, and
whether it ended on a stop id (else on the token limit)."""


def assert_output_is_what_upstream_samples(server: CliServer, sample: Sampler) -> None:
    """Our greedy responses over ``server.upstream`` == the items its own completion ids
    for the same prompt and grammar (``sample``) translate to here, with the same usage and
    status."""
    assert server.upstream is not None
    for text, tools in (("Hello", []), ("Weather in Paris?", [WEATHER_TOOL])):
        body = {"model": MODEL, "input": text, "tools": tools, "max_output_tokens": 40, "temperature": 0}
        ours = server.client().responses.create(**body)
        request = parse_request(body)
        conversation = build_conversation(request, request.items)
        prepared = HarmonyDialect().prepare(request, conversation, context_length=4096)  # with its grammar
        with httpx.Client(base_url=server.upstream, timeout=120) as http:
            model = http.get("/v1/models").json()["data"][0]["id"]
            ids, stopped = sample(http, prepared)
        stream = EventBuilder(ResponseState("resp_x", request, model), prompt_tokens=len(prepared.prompt))
        stream.begin()
        stream.feed(ids)
        expected = stream.finish("stop" if stopped else "length")[-1].to_json()["response"]
        assert ours.usage.input_tokens == len(prepared.prompt)
        assert ours.usage.output_tokens == len(ids)
        assert without_ids([o.model_dump(exclude_none=True) for o in ours.output]) == without_ids(
            [{k: v for k, v in o.items() if v is not None} for o in expected["output"]]
        )
        assert ours.status == expected["status"]


def grammar_fields(prepared: Any) -> dict[str, Any]:
    """vLLM's fields for the prepared request's grammar, as the engine sends them."""
    grammar = prepared.params.grammar
    return {} if grammar is None else {"structured_outputs": {"grammar": grammar.lark_fixed_spacing}}


def llamacpp_grammar_fields(prepared: Any) -> dict[str, Any]:
    """llama-server's fields for the prepared request's grammar, as the engine sends them."""
    grammar = prepared.params.grammar
    if grammar is None:
        return {}
    return llamacpp_grammar(grammar, prepared.params.stop_token_ids, HARMONY_RESERVED)


@pytest.mark.parametrize("server", [pytest.param("vllm", marks=pytest.mark.vllm)], indirect=True)
def test_output_equals_what_vllm_samples(server: CliServer) -> None:
    """Our response over vLLM == vLLM's /v1/completions ids for the same prompt, translated here."""

    def sample(http: httpx.Client, prepared: Any) -> tuple[list[int], bool]:
        model = http.get("/v1/models").json()["data"][0]["id"]
        sampled = http.post(
            "/v1/completions",
            json={
                "model": model,
                "prompt": prepared.prompt,
                "max_tokens": 40,
                "temperature": 0,
                "stop_token_ids": list(prepared.params.stop_token_ids),
                "skip_special_tokens": False,
                "return_token_ids": True,
                **grammar_fields(prepared),
            },
        ).json()["choices"][0]
        return sampled["token_ids"], sampled["finish_reason"] == "stop"

    assert_output_is_what_upstream_samples(server, sample)


@pytest.mark.parametrize("server", [pytest.param("llamacpp", marks=pytest.mark.llamacpp)], indirect=True)
def test_output_equals_what_llamacpp_samples(server: CliServer) -> None:
    """Our response over llama.cpp == llama-server's own non-streamed /completion ids for
    the same prompt (it ends a turn on its end-of-generation ids, gpt-oss's stop ids),
    translated here."""

    def sample(http: httpx.Client, prepared: Any) -> tuple[list[int], bool]:
        answer = http.post(
            "/completion",
            json={
                "prompt": prepared.prompt,
                "n_predict": 40,
                "temperature": 0,
                "return_tokens": True,
                **llamacpp_grammar_fields(prepared),
            },
        ).json()
        assert answer["tokens_predicted"] == len(answer["tokens"])
        return answer["tokens"], answer["stop_type"] == "eos"

    assert_output_is_what_upstream_samples(server, sample)


def test_clean_shutdown_keeps_state(server: CliServer) -> None:
    """A second server on the same data directory sees what the first stored; SIGTERM
    stops it gracefully (status 0), as SIGINT does the first."""
    created = server.client().responses.create(model=MODEL, input="remember me", max_output_tokens=4)
    second = CliServer(server.args, server.home)
    try:
        assert second.client().responses.retrieve(created.id).id == created.id
    finally:
        second.stop(signal.SIGTERM)
    assert second.process.returncode == 0, second.log()
    assert "openchatml stopped" in second.log()
