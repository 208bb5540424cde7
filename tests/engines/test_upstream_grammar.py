"""A real vLLM (CPU) and a real llama-server sample under a request's grammar (fixtures
``vllm_server``, ``vllm_chat_server`` and ``llamacpp_server``, started once per session).

The tiny random-weight gpt-oss, left alone, never writes a call; under a ``required``
grammar it calls the one tool at every seed, with arguments that validate, and under a
``none`` grammar it only ever answers. The tiny Qwen3 chat model does the same under its
template's grammar (vLLM only: llama.cpp's converter does not know its tokenizer's
pre-tokenizer). llama-server's lazy grammars apply from their trigger on.

vLLM 0.32 pins llguidance below 1.8, which leaves JSON whitespace unbounded (the grammar's
``whitespace_pattern`` is not read): the random model then writes long runs of it inside
the arguments, so the vLLM generations get the whole context window.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

import jsonschema
import pytest

from llamacpp_harness import LlamaServer
from openchatml import Conversation, Message, Renderer, load_encoding, parse_tokens
from openchatml.core.tokens import CALL_ID, CHANNEL_ID, RETURN_ID
from openchatml.engines.base import SamplingParams
from openchatml.engines.guidance import in_language
from openchatml.engines.tokenizer import HFTokenizer
from openchatml.engines.upstream import UpstreamEngine
from openchatml.templates.analysis.template_analysis import analyze_source
from openchatml.templates.environment import ChatTemplate
from openchatml.templates.grammar import ToolGrammar, Trigger, harmony_tool_call_grammar, tool_call_grammar
from openchatml.templates.grammar.tool_choice import FreeformTool
from openchatml.templates.parsing import ParsedMessage, ParseOptions, parse_output
from openchatml.templates.prompt import output_prefix, render_prompt
from vllm_harness import VllmServer

WEATHER_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 8},
        "unit": {"enum": ["celsius", "fahrenheit"]},
        "days": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 99}, "maxItems": 3},
    },
    "required": ["city", "unit"],
}
WEATHER = {"type": "function", "name": "get_weather", "parameters": WEATHER_SCHEMA}
STOPS = (RETURN_ID, CALL_ID, 199999)
SEEDS = range(4)
WINDOW = 4096
"""The servers' context per sequence: a generation may take all that the prompt leaves."""


def harmony_prompt() -> list[int]:
    conversation = Conversation.from_messages([Message.user("What is the weather in Paris?")])
    return Renderer().completion_tokens(conversation)


def sample(url: str, prompt: Sequence[int], params: SamplingParams, **connect: Any) -> list[int]:
    """The ids an engine connected to ``url`` samples; it must enforce grammars."""

    async def main() -> list[int]:
        async with await UpstreamEngine.connect(url, **connect) as engine:
            assert engine.enforces_grammar
            return [t async for chunk in engine.generate(prompt, params) for t in chunk]

    return asyncio.run(main())


def harmony_messages(ids: list[int], *, strict: bool = True) -> list[Message]:
    """The messages of an output; ``strict=False`` takes bytes that are not UTF-8 (replaced)."""
    head = load_encoding().encode("<|start|>assistant", allowed_special="all")
    return list(parse_tokens([*head, *ids], strict=strict))


def harmony_params(grammar: ToolGrammar, seed: int, max_tokens: int = WINDOW, **extra: Any) -> SamplingParams:
    return SamplingParams(
        max_tokens=max_tokens, seed=seed, stop_token_ids=STOPS, grammar=grammar, extra=extra
    )


def assert_weather_call(message: Message | None, arguments: str) -> None:
    assert message is not None and message.recipient == "functions.get_weather"
    jsonschema.validate(json.loads(arguments), WEATHER_SCHEMA)


# --- vLLM, gpt-oss --------------------------------------------------------------------------


@pytest.mark.vllm
def test_vllm_required_calls_at_every_seed(vllm_server: VllmServer) -> None:
    grammar = harmony_tool_call_grammar([WEATHER], tool_choice="required", reasoning_tokens=30)
    for seed in SEEDS:
        ids = sample(vllm_server.base_url, harmony_prompt(), harmony_params(grammar, seed))
        assert ids[-1] == CALL_ID, (seed, load_encoding().decode(ids[-60:]))
        call = harmony_messages(ids)[-1]
        assert_weather_call(call, call.text)


@pytest.mark.vllm
def test_vllm_free_sampling_never_calls(vllm_server: VllmServer) -> None:
    """Without a grammar the random model does not find the call syntax."""
    ids = sample(
        vllm_server.base_url, harmony_prompt(), SamplingParams(max_tokens=120, seed=0, stop_token_ids=STOPS)
    )
    assert CALL_ID not in ids


@pytest.mark.vllm
def test_vllm_none_answers_and_never_calls(vllm_server: VllmServer) -> None:
    grammar = harmony_tool_call_grammar([WEATHER], tool_choice="none", reasoning_tokens=30)
    for seed in SEEDS:
        ids = sample(vllm_server.base_url, harmony_prompt(), harmony_params(grammar, seed, 400))
        assert ids[-1] == RETURN_ID and CALL_ID not in ids
        messages = harmony_messages(ids)
        assert messages[-1].channel == "final" and all(m.recipient is None for m in messages)


# --- vLLM, a chat-template model ------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ChatModel:
    """The tiny Qwen3 chat model: its tokenizer, its analysed format, a prompt offering the
    weather tool, and what that prompt already wrote of the answer."""

    tokenizer: HFTokenizer
    prompt: list[int]
    prefix: str
    tools: tuple[dict[str, Any], ...]

    @property
    def format(self) -> Any:
        assert self.tokenizer.chat_template is not None
        return analyze_source(self.tokenizer.chat_template)

    def grammar(self, tool_choice: str) -> ToolGrammar:
        return tool_call_grammar(
            self.format,
            self.tools,
            tool_choice=tool_choice,
            prefix=self.prefix,
            reasoning_tokens=30,
            special_tokens=dict(self.tokenizer.markers),
        )

    def parse(self, ids: list[int]) -> ParsedMessage:
        options = ParseOptions(tools=self.tools, prefix=self.prefix)
        return parse_output(self.format, self.tokenizer.decode(ids), options)


@pytest.fixture(scope="module")
def chat_model(vllm_chat_server: VllmServer) -> ChatModel:
    tokenizer = HFTokenizer.load(vllm_chat_server.model_dir)
    assert tokenizer.chat_template is not None
    template = ChatTemplate(tokenizer.chat_template)
    tools = ({"type": "function", "function": {"name": "get_weather", "parameters": dict(WEATHER_SCHEMA)}},)
    question = "What is the weather in Paris?"
    text = render_prompt(template, [Message.user(question)], tools=tools)
    prefix = output_prefix(template, [{"role": "user", "content": question}], tools=tools)
    return ChatModel(tokenizer, tokenizer.encode(text), prefix, tools)


def chat_params(model: ChatModel, grammar: ToolGrammar, seed: int) -> SamplingParams:
    return SamplingParams(
        max_tokens=600, seed=seed, stop_token_ids=model.tokenizer.stop_token_ids, grammar=grammar
    )


@pytest.mark.vllm
def test_vllm_template_required_calls_at_every_seed(
    vllm_chat_server: VllmServer, chat_model: ChatModel
) -> None:
    grammar = chat_model.grammar("required")
    for seed in SEEDS:
        ids = sample(
            vllm_chat_server.base_url,
            chat_model.prompt,
            chat_params(chat_model, grammar, seed),
            tokenizer=chat_model.tokenizer,
        )
        assert ids[-1] in chat_model.tokenizer.stop_token_ids, chat_model.tokenizer.decode(ids)[-600:]
        message = chat_model.parse(ids)
        assert [call.name for call in message.tool_calls] and not message.content.strip()
        for call in message.tool_calls:
            assert call.name == "get_weather"
            jsonschema.validate(json.loads(call.arguments), WEATHER_SCHEMA)


@pytest.mark.vllm
def test_vllm_template_none_never_calls(vllm_chat_server: VllmServer, chat_model: ChatModel) -> None:
    """The tiny chat model calls now and then of its own; under ``none`` it never does."""
    grammar = chat_model.grammar("none")
    for seed in range(8):
        ids = sample(
            vllm_chat_server.base_url,
            chat_model.prompt,
            chat_params(chat_model, grammar, seed),
            tokenizer=chat_model.tokenizer,
        )
        assert not chat_model.parse(ids).tool_calls
        assert "<tool_call>" not in chat_model.tokenizer.decode(ids)


# --- llama.cpp, gpt-oss --------------------------------------------------------------------


@pytest.mark.llamacpp
def test_llamacpp_required_calls_at_every_seed(llamacpp_server: LlamaServer) -> None:
    """The call ends on ``<|call|>``: llama.cpp would end it on any end-of-generation id,
    the engine bans the others."""
    grammar = harmony_tool_call_grammar([WEATHER], tool_choice="required", reasoning_tokens=30)
    thought = 0
    for seed in SEEDS:
        ids = sample(llamacpp_server.base_url, harmony_prompt(), harmony_params(grammar, seed, 600))
        assert ids[-1] == CALL_ID, (seed, load_encoding().decode(ids[-60:]))
        *before, call = harmony_messages(ids)
        assert_weather_call(call, call.text)
        thought += any(m.channel == "analysis" for m in before)
    assert thought, "the model never reasoned before its call"


@pytest.mark.llamacpp
def test_llamacpp_none_answers_and_never_calls(llamacpp_server: LlamaServer) -> None:
    """llama.cpp samples an end-of-generation id outside its grammar, even inside a UTF-8
    character: the answer's last bytes may not be UTF-8 (parsed leniently here)."""
    grammar = harmony_tool_call_grammar([WEATHER], tool_choice="none", reasoning_tokens=30)
    for seed in SEEDS:
        ids = sample(llamacpp_server.base_url, harmony_prompt(), harmony_params(grammar, seed, 400))
        assert ids[-1] == RETURN_ID and CALL_ID not in ids
        messages = harmony_messages(ids, strict=False)
        assert messages[-1].channel == "final" and all(m.recipient is None for m in messages)


@pytest.mark.llamacpp
def test_llamacpp_lazy_auto_leaves_the_answer_free(llamacpp_server: LlamaServer) -> None:
    """Under ``auto``'s lazy grammar the text before its trigger (`` to=functions.``) is free
    (its bytes too: parsed leniently): the tiny model, which never writes the trigger,
    answers as it does alone."""
    grammar = harmony_tool_call_grammar([WEATHER], tool_choice="auto")
    assert grammar.lazy
    for seed in SEEDS:
        ids = sample(llamacpp_server.base_url, harmony_prompt(), harmony_params(grammar, seed, 400))
        assert ids[-1] == RETURN_ID and CALL_ID not in ids
        assert all(m.recipient is None for m in harmony_messages(ids, strict=False))


@pytest.mark.llamacpp
def test_llamacpp_lazy_grammar_holds_from_its_trigger_token(llamacpp_server: LlamaServer) -> None:
    """A lazy grammar triggered by a special token (``<|channel|>``, which the tiny model
    writes first): from the trigger on, the output is the call the grammar allows."""
    required = harmony_tool_call_grammar([WEATHER], tool_choice="required", reasoning_tokens=0)
    trigger = Trigger("<|channel|>", "word", CHANNEL_ID)
    grammar = dataclasses.replace(required, lazy=True, triggers=(trigger,))
    for seed in SEEDS:
        ids = sample(llamacpp_server.base_url, harmony_prompt(), harmony_params(grammar, seed, 600))
        assert ids[0] == CHANNEL_ID
        call = harmony_messages(ids)[-1]
        assert call.channel == "commentary"
        assert_weather_call(call, call.text)
        assert ids[-1] in (CALL_ID, RETURN_ID)  # lazy: any end-of-generation id may end it


PATCH = FreeformTool(
    "apply_patch",
    "lark",
    'start: "*** Begin Patch\\n" hunk+ "*** End Patch"\n'
    'hunk: "*** Add File: " NAME LF ("+" /[^\\n]{0,20}/ LF)~1..3\n'
    "NAME: /[a-z]{1,8}\\.txt/\n"
    "%import common.LF\n",
)
PIN = FreeformTool("set_pin", "regex", "[0-9]{4}-[a-z]{2,6}")


@pytest.mark.llamacpp
@pytest.mark.parametrize("tool", [PATCH, PIN], ids=lambda tool: tool.syntax)
def test_llamacpp_custom_tools_write_their_grammar(llamacpp_server: LlamaServer, tool: FreeformTool) -> None:
    """A custom tool's grammar, Lark or a regular expression, is GBNF rules: the call ends
    on ``<|call|>`` with its input in the grammar's language, at every seed."""
    grammar = harmony_tool_call_grammar(
        [WEATHER], tool_choice={"type": "custom", "name": tool.name}, freeform=[tool], reasoning_tokens=30
    )
    for seed in SEEDS:
        ids = sample(llamacpp_server.base_url, harmony_prompt(), harmony_params(grammar, seed, 600))
        assert ids[-1] == CALL_ID, (seed, load_encoding().decode(ids[-60:]))
        call = harmony_messages(ids)[-1]
        assert call.recipient == f"functions.{tool.name}"
        assert in_language(tool.syntax, tool.definition, call.text), (seed, call.text)
