"""What UpstreamEngine asks an upstream server for under a grammar (httpx's MockTransport
records the bodies), and the grammar probe of ``connect`` against the stub server of
``upstream_stub``: the grammar each dialect carries, lazy triggers, the ids a grammar may
end on, and a server that refuses or ignores grammars."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from typing import Any

import httpx
import orjson
import pytest
from upstream_stub import PROMPT, Running, Stub, completions, lists_of, stub_params, with_engine

from openchatml.core.tokens import CALL_ID, CHANNEL_ID, END_ID, RETURN_ID
from openchatml.engines.base import ModelInfo, SamplingParams
from openchatml.engines.upstream import UpstreamEngine
from openchatml.engines.upstream_events import UpstreamError
from openchatml.engines.upstream_requests import HARMONY_RESERVED, Flavor, llamacpp_trigger
from openchatml.templates.grammar import ToolGrammar, Trigger, harmony_tool_call_grammar

TOOL = {"type": "function", "name": "get_time", "parameters": {"type": "object", "properties": {}}}
STOPS = (RETURN_ID, CALL_ID, 199999)
REQUIRED = harmony_tool_call_grammar([TOOL], tool_choice="required")
NONE = harmony_tool_call_grammar([TOOL], tool_choice="none")
AUTO = harmony_tool_call_grammar([TOOL], tool_choice="auto")


class Recorder:
    """A MockTransport handler that records each request's JSON body and answers with a
    short stream of the dialect asked for (or ``status`` with an error object)."""

    def __init__(self, status: int = 200) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.status = status

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = orjson.loads(request.content)
        self.bodies.append(body)
        if self.status != 200:
            error = {"error": {"message": "grammar: unknown rule", "type": "BadRequestError"}}
            return httpx.Response(self.status, json=error)
        if request.url.path == "/completion":
            events = [
                {"tokens": [11], "stop": False, "tokens_predicted": 1},
                {"tokens": [], "stop": True, "tokens_predicted": 1, "stop_type": "limit"},
            ]
        else:
            events = [{"choices": [{"index": 0, "token_ids": [11], "finish_reason": "length"}]}]
        data = b"".join(b"data: " + orjson.dumps(event) + b"\n\n" for event in events)
        return httpx.Response(200, content=data, headers={"content-type": "text/event-stream"})


def sent(
    flavor: Flavor,
    grammar: ToolGrammar | None,
    *,
    enforces: bool = True,
    tokenizer: Any = None,
    recorder: Callable[[httpx.Request], httpx.Response] | None = None,
) -> dict[str, Any]:
    """The body one generation sends, ``grammar`` in its params."""
    handler = recorder or Recorder()

    async def main() -> None:
        client = httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url="http://upstream")
        info = ModelInfo(id="m", context_length=1024, engine=flavor)
        engine = UpstreamEngine(client, info, flavor=flavor, enforces_grammar=enforces, tokenizer=tokenizer)
        async with engine:
            params = SamplingParams(max_tokens=1, seed=1, stop_token_ids=STOPS, grammar=grammar)
            async for _ in engine.generate(PROMPT, params):
                pass

    asyncio.run(main())
    assert isinstance(handler, Recorder)
    return handler.bodies[-1]


def banned(body: dict[str, Any]) -> set[int]:
    biases = body.get("logit_bias", [])
    assert all(bias is False for _, bias in biases)
    return {token for token, _ in biases}


# --- request bodies -------------------------------------------------------------------------


def test_vllm_sends_the_lark_grammar_as_structured_outputs() -> None:
    body = sent("vllm", REQUIRED)
    assert body["structured_outputs"] == {"grammar": REQUIRED.lark_fixed_spacing}
    assert "<[200012]>" in REQUIRED.lark  # special tokens as token references
    assert "logit_bias" not in body


def test_no_grammar_goes_where_the_server_does_not_enforce_it() -> None:
    assert "structured_outputs" not in sent("vllm", REQUIRED, enforces=False)
    assert "structured_outputs" not in sent("vllm", None)
    for body in (sent("llamacpp", REQUIRED, enforces=False), sent("llamacpp", None)):
        assert not {"grammar", "grammar_lazy", "grammar_triggers", "logit_bias"} & set(body)


def test_llamacpp_sends_the_gbnf_with_token_references() -> None:
    body = sent("llamacpp", REQUIRED)
    assert body["grammar"] == REQUIRED.gbnf
    assert "<[200008]>" in REQUIRED.gbnf and "<|message|>" not in REQUIRED.gbnf
    assert "grammar_lazy" not in body and "grammar_triggers" not in body


def test_llamacpp_bans_the_end_ids_a_grammar_does_not_end_on() -> None:
    """A call ends on ``<|call|>``, an answer on ``<|return|>``: llama.cpp would take any
    end-of-generation id where the grammar may end."""
    assert "<[200012]>?" in REQUIRED.gbnf and "<[200002]>" not in REQUIRED.gbnf
    assert banned(sent("llamacpp", REQUIRED)) == {RETURN_ID, 199999, *HARMONY_RESERVED}
    assert "<[200002]>?" in NONE.gbnf and "<[200012]>" not in NONE.gbnf
    assert banned(sent("llamacpp", NONE)) == {CALL_ID, 199999, *HARMONY_RESERVED}


def test_llamacpp_bans_reserved_ids_for_harmony_only() -> None:
    """o200k_harmony's ``<|reserved_N|>`` are never in a Harmony output, and llama.cpp
    matches a special token against text rules by its text."""
    assert len(HARMONY_RESERVED) == 201088 - 199998 - 9
    assert not {RETURN_ID, CALL_ID, END_ID, CHANNEL_ID} & set(HARMONY_RESERVED)
    template_model = sent("llamacpp", REQUIRED, tokenizer=object())
    assert banned(template_model) == {RETURN_ID, 199999}


def test_llamacpp_lazy_grammar_and_its_triggers() -> None:
    assert AUTO.lazy and AUTO.triggers == (Trigger(" to=functions."),)
    body = sent("llamacpp", AUTO)
    assert body["grammar"] == AUTO.gbnf
    assert body["grammar_lazy"] is True
    assert body["grammar_triggers"] == [{"type": 1, "value": " to=functions."}]
    assert body["preserved_tokens"] == [" to=functions."]
    assert banned(body) == set(HARMONY_RESERVED)  # the answer before the trigger ends as it may


def test_llamacpp_trigger_objects() -> None:
    assert llamacpp_trigger(Trigger("<tool_call>", "word", 151657)) == {
        "type": 0,
        "value": "<tool_call>",
        "token": 151657,
    }
    assert llamacpp_trigger(Trigger("[TOOL_CALLS]")) == {"type": 1, "value": "[TOOL_CALLS]"}
    assert llamacpp_trigger(Trigger(r"^\s*(\{)", "pattern")) == {"type": 2, "value": r"^\s*(\{)"}
    token = dataclasses.replace(AUTO, triggers=(Trigger("<|channel|>", "word", CHANNEL_ID),))
    body = sent("llamacpp", token)
    assert body["grammar_triggers"] == [{"type": 0, "value": "<|channel|>", "token": CHANNEL_ID}]
    assert body["preserved_tokens"] == ["<|channel|>"]


def test_extra_fields_win_over_the_grammar_fields() -> None:
    async def main() -> dict[str, Any]:
        recorder = Recorder()
        client = httpx.AsyncClient(transport=httpx.MockTransport(recorder), base_url="http://upstream")
        engine = UpstreamEngine(client, ModelInfo(id="m"), flavor="llamacpp", enforces_grammar=True)
        params = SamplingParams(max_tokens=1, grammar=NONE, extra={"logit_bias": [[5, 1.0]]})
        async with engine:
            async for _ in engine.generate(PROMPT, params):
                pass
        return recorder.bodies[-1]

    assert asyncio.run(main())["logit_bias"] == [[5, 1.0]]


@pytest.mark.parametrize("flavor", ["vllm", "llamacpp"])
def test_a_grammar_the_upstream_refuses_is_an_upstream_error(flavor: Flavor) -> None:
    with pytest.raises(UpstreamError, match="answered 400: grammar: unknown rule") as info:
        sent(flavor, REQUIRED, recorder=Recorder(400))
    assert info.value.status == 400


# --- the probe ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["", "/llama"])
def test_connect_probes_that_grammars_are_enforced(upstream: Running, stub: Stub, path: str) -> None:
    async def body(engine: UpstreamEngine) -> bool:
        return engine.enforces_grammar

    assert with_engine(upstream.url + path, body) is True
    probes = [seen.body for seen in stub.requests if seen.probe]
    assert len(probes) == 2
    grammars = [probe["grammar"] if path else probe["structured_outputs"]["grammar"] for probe in probes]
    assert ['"7"' in grammars[0], '"8"' in grammars[1]] == [True, True]
    assert all("<[0]>?" in grammar for grammar in grammars)  # token references must be read
    assert all(probe["prompt"] == [0] and probe["temperature"] == 0.0 for probe in probes)
    if not path:
        assert grammars[0].startswith("%llguidance")


@pytest.mark.parametrize("mode", ["refuse", "ignore"])
@pytest.mark.parametrize("path", ["", "/llama"])
def test_an_upstream_without_grammars_is_logged_and_gets_none(
    upstream: Running, stub: Stub, caplog: pytest.LogCaptureFixture, path: str, mode: str
) -> None:
    stub.grammars = mode

    async def body(engine: UpstreamEngine) -> tuple[bool, list[list[int]]]:
        params = dataclasses.replace(stub_params(), grammar=REQUIRED)
        return engine.enforces_grammar, await lists_of(engine, params)

    with caplog.at_level(logging.WARNING, logger="openchatml.engines.upstream"):
        enforces, ids = with_engine(upstream.url + path, body)
    assert enforces is False
    assert [t for chunk in ids for t in chunk] == [11, 12, 13, 14, 15, 16]
    sent_body = completions(stub)[0].body
    assert not {"grammar", "structured_outputs"} & set(sent_body)
    (record,) = caplog.records
    assert "does not enforce grammars" in record.getMessage()
    assert "checked after parsing only" in record.getMessage()
    assert ("answered 400: grammars are not supported" in record.getMessage()) == (mode == "refuse")
    assert ("answered 'x'" in record.getMessage()) == (mode == "ignore")


def test_llamacpp_gap_under_a_grammar_is_replayed_to_the_end(upstream: Running, stub: Stub) -> None:
    """A resumed stream would start the grammar over: the replay asks for every id at once."""
    script = [[11], [12], [13], [14], [15], [16], [RETURN_ID]]
    params = dataclasses.replace(stub_params(script=script, drop=[2]), grammar=REQUIRED)

    async def body(engine: UpstreamEngine) -> list[list[int]]:
        return await lists_of(engine, params)

    assert with_engine(upstream.url + "/llama", body) == [[11], [12], [13, 14, 15, 16, RETURN_ID]]
    first, replay = (seen.body for seen in completions(stub))
    assert first["stream"] is True and first["grammar"] == REQUIRED.gbnf
    assert replay["stream"] is False and replay["n_predict"] == first["n_predict"]
    assert replay["grammar"] == first["grammar"] and replay["seed"] == first["seed"]
