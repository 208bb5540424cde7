"""``POST /v1/chat/completions`` over real models: a chat-template model (the prompt is the
one transformers renders from the same chat messages; a random one streams valid chunks
without markers), the random tiny gpt-oss in process, and the tiny gpt-oss behind a real
vLLM (CPU), whose forced tool call is enforced upstream. Every body and chunk is checked
against the OpenAI SDK's own types (helpers of ``test_chat_completions``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_server import CliServer
from live import LiveServer, make_service
from openai.types.chat import ChatCompletion
from test_chat_completions import HARMONY_MARKERS, HI, WEATHER, ask, gathered, said, stream, without_ids
from test_template_model import ScriptedTemplateEngine, no_markers, qwen_engine
from test_template_model import serve as serve_template

__all__ = ["qwen_engine"]  # the fixture, shared with the template model's tests


# --- a chat-template model --------------------------------------------------------------------


def test_a_template_model_renders_the_chat_as_transformers_does(qwen_engine: Any, tmp_path: Path) -> None:
    tokenizer = qwen_engine.tokenizer.hf_tokenizer
    answer = (
        "<think>\nThe user wants a word.\n</think>\n\nLet me check."
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call><|im_end|>'
    )
    engine = ScriptedTemplateEngine(qwen_engine.tokenizer, answer, chunk=2)
    server = serve_template(engine, tmp_path)
    try:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": "Let me check.",
                "reasoning_content": "The user wants the weather.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "Sunny"},
            {"role": "user", "content": "And Rome?"},
        ]
        with server.http() as http:
            body = {"model": "scripted-qwen3", "messages": messages, "tools": [WEATHER]}
            at_once = said(ask(http, **body))
            chunks = stream(http, **body)
        expected = tokenizer.apply_chat_template(
            [
                *messages[:2],
                {
                    **messages[2],
                    "tool_calls": [
                        {
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                        }
                    ],
                },
                {"role": "tool", "content": "Sunny"},
                messages[4],
            ],
            tools=[WEATHER],
            add_generation_prompt=True,
            tokenize=False,
        )
        assert tokenizer.decode(engine.prompts[-1]) == expected
        assert without_ids(gathered(chunks)) == without_ids(at_once)
        assert at_once["reasoning_content"] == "The user wants a word."
        assert at_once["content"] == "Let me check."
        assert [(c["name"], json.loads(c["arguments"])) for c in at_once["tool_calls"]] == [
            ("get_weather", {"city": "Rome"})
        ]
        assert at_once["finish_reason"] == "tool_calls"
    finally:
        server.__exit__()


def test_a_random_template_model_streams_valid_marker_free_chunks(qwen_engine: Any, tmp_path: Path) -> None:
    server = serve_template(qwen_engine, tmp_path)
    try:
        with server.http() as http:
            for seed in range(2):
                answer = ask(http, model="tiny-qwen3", tools=[WEATHER], max_tokens=40, seed=seed)
                for choice in answer["choices"]:
                    no_markers(choice["message"]["content"] or "")
                    no_markers(choice["message"].get("reasoning_content") or "")
            chunks = stream(http, model="tiny-qwen3", max_tokens=30, temperature=0, n=2)
        for n in (0, 1):
            text = gathered(chunks, n)
            no_markers(text["content"] or "")
            no_markers(text["reasoning"] or "")
        reply = server.client().chat.completions.create(model="tiny-qwen3", messages=HI, max_tokens=20)
        assert reply.choices[0].finish_reason in ("stop", "length", "tool_calls")
    finally:
        server.__exit__()


# --- the random tiny gpt-oss, in process --------------------------------------------------------


def test_the_tiny_gpt_oss_answers_valid_completions(tiny_engine: Any, tmp_path: Path) -> None:
    with LiveServer(make_service(tiny_engine)) as server, server.http() as http:
        answer = ask(http, model="tiny", max_tokens=40, seed=1, n=2)
        chunks = stream(http, model="tiny", max_tokens=40, seed=1, stream_options={"include_usage": True})
        texts = [c["message"]["content"] or "" for c in answer["choices"]]
        text = gathered(chunks)
        texts += [text["content"] or "", text["reasoning"] or ""]
        for marker in HARMONY_MARKERS:
            assert not any(marker in t for t in texts), marker
        assert chunks[-1]["usage"]["completion_tokens"] <= 40
        reply = server.client().chat.completions.create(
            model="tiny", messages=HI, max_tokens=16, temperature=0
        )
        assert reply.choices[0].finish_reason in ("stop", "length")


# --- over a real vLLM ----------------------------------------------------------------------------


@pytest.mark.vllm
def test_over_a_real_vllm_a_forced_call_is_enforced(vllm_server: Any, tmp_path: Path) -> None:
    city = {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 8}},
        "required": ["city"],
    }
    strict = {"type": "function", "function": {"name": "get_weather", "parameters": city, "strict": True}}
    server = CliServer(["--upstream", vllm_server.base_url], tmp_path / "serve")
    try:
        client = server.client()
        model = client.models.list().data[0].id
        forced = {"type": "function", "function": {"name": "get_weather"}}
        for seed in range(2):
            reply = client.chat.completions.create(
                model=model,
                messages=HI,
                tools=[strict],
                tool_choice=forced,
                max_tokens=3500,  # unbounded JSON whitespace (see test_upstream_grammar)
                seed=seed,
            )
            ChatCompletion.model_validate(reply.model_dump(), strict=True)
            calls = reply.choices[0].message.tool_calls or []
            assert reply.choices[0].finish_reason == "tool_calls", server.log()
            assert [call.function.name for call in calls] == ["get_weather"]
            assert set(json.loads(calls[0].function.arguments)) == {"city"}
        with server.http() as http:
            chunks = stream(http, model=model, max_tokens=30, stream_options={"include_usage": True})
        text = gathered(chunks)
        for marker in HARMONY_MARKERS:
            assert marker not in (text["content"] or "") + (text["reasoning"] or "")
        assert chunks[-1]["usage"]["completion_tokens"] <= 30
    finally:
        server.stop()
