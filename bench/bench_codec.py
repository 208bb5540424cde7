"""openchatml against openai-harmony, in one run: render, batch parse, streaming parse.

Usage: ``.venv/bin/python bench/bench_codec.py [--repeat N] [--markdown]``

Workloads (the same inputs for every contender; outputs are checked equal first):

* render — a 40-message conversation with a system prompt, five function tools, tool
  calls and replies, rendered for completion (messages/s);
* batch parse — a ~20k-token completion (long analysis, a tool call, a long final
  answer) parsed in one call (tokens/s);
* streaming parse — the same completion fed one token at a time, reading the content
  delta after each token (tokens/s);
* floor — tiktoken ``encode_ordinary`` of the completion's text (tokens/s), the cost of
  BPE alone.

Each timing is the best of ``--repeat`` runs; ratios are openchatml / openai-harmony.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from openchatml.core.encoding import export_o200k_base

# openai-harmony reads o200k_base from this folder instead of downloading it
os.environ.setdefault(
    "TIKTOKEN_ENCODINGS_BASE", str(export_o200k_base(Path(tempfile.gettempdir()) / "openchatml-tiktoken"))
)

import openai_harmony as H

import openchatml as ocm
from openchatml import harmony as compat

WORDS = (
    "the model reads the question and plans which tool to call before it answers "
    "weather forecast Tokyo 東京 température précise données ☀️ 42 3.14 JSON schema "
    "because therefore however the user asked about rain wind humidity pressure"
).split()


def _prose(rng: random.Random, n_words: int) -> str:
    out = []
    for i in range(n_words):
        out.append(rng.choice(WORDS))
        if i % 17 == 16:
            out.append(".\n")
    return " ".join(out)


# --- inputs --------------------------------------------------------------------------

PROPS: dict[str, Any] = {
    "location": {"type": "string", "description": "City and country, e.g. Tokyo, JP"},
    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
    "days": {"type": "integer", "description": "Forecast length", "default": 1},
    "details": {"type": "array", "items": {"type": "string"}},
}


def conversation_40(mod: Any) -> Any:
    """The render workload, built with ``mod`` (openai_harmony or openchatml.harmony)."""
    tools = [
        mod.ToolDescription.new(
            f"tool_{i}", f"Tool number {i}.", parameters={"type": "object", "properties": PROPS}
        )
        for i in range(5)
    ]
    msgs = [
        mod.Message.from_role_and_content(
            mod.Role.SYSTEM, mod.SystemContent.new().with_conversation_start_date("2025-06-28")
        ),
        mod.Message.from_role_and_content(
            mod.Role.DEVELOPER,
            mod.DeveloperContent.new().with_instructions("Answer briefly.").with_function_tools(tools),
        ),
    ]
    i = 0
    while len(msgs) < 40:
        args = json.dumps({"location": f"City {i}", "unit": "celsius"})
        msgs += [
            mod.Message.from_role_and_content(mod.Role.USER, f"What is the weather in city {i} today?"),
            mod.Message.from_role_and_content(
                mod.Role.ASSISTANT, f"The user asks about city {i}; call tool_{i % 5}."
            ).with_channel("analysis"),
            mod.Message.from_role_and_content(mod.Role.ASSISTANT, args)
            .with_channel("commentary")
            .with_recipient(f"functions.tool_{i % 5}")
            .with_content_type("<|constrain|>json"),
            mod.Message.from_author_and_content(
                mod.Author.new(mod.Role.TOOL, f"functions.tool_{i % 5}"),
                json.dumps({"temperature": 20 + i, "sky": "clear"}),
            )
            .with_channel("commentary")
            .with_recipient("assistant"),
            mod.Message.from_role_and_content(
                mod.Role.ASSISTANT, f"It is {20 + i} °C and clear in city {i}."
            ).with_channel("final"),
        ]
        i += 1
    return mod.Conversation.from_messages(msgs[:40])


def native_conversation_40() -> ocm.Conversation:
    """The render workload in openchatml's own model."""
    tools = tuple(
        ocm.ToolDescription(f"tool_{i}", f"Tool number {i}.", {"type": "object", "properties": PROPS})
        for i in range(5)
    )
    msgs = [
        ocm.Message.system(ocm.SystemContent(conversation_start_date="2025-06-28")),
        ocm.Message.developer(
            ocm.DeveloperContent(
                instructions="Answer briefly.",
                tools={"functions": ocm.ToolNamespaceConfig("functions", None, tools)},
            )
        ),
    ]
    i = 0
    while len(msgs) < 40:
        msgs += [
            ocm.Message.user(f"What is the weather in city {i} today?"),
            ocm.Message.assistant(f"The user asks about city {i}; call tool_{i % 5}.", channel="analysis"),
            ocm.Message.tool_call(
                f"functions.tool_{i % 5}", json.dumps({"location": f"City {i}", "unit": "celsius"})
            ),
            ocm.Message.tool_result(
                f"functions.tool_{i % 5}", json.dumps({"temperature": 20 + i, "sky": "clear"})
            ),
            ocm.Message.assistant(f"It is {20 + i} °C and clear in city {i}."),
        ]
        i += 1
    return ocm.Conversation.from_messages(msgs[:40])


def completion_tokens(rng: random.Random) -> list[int]:
    """A ~20k-token completion that follows ``<|start|>assistant``."""
    msgs = [
        ocm.Message.assistant(_prose(rng, 9000), channel="analysis"),
        ocm.Message.tool_call("functions.tool_1", json.dumps({"location": "Tokyo, JP"})),
        ocm.Message.tool_result("functions.tool_1", json.dumps({"temperature": 21})),
        ocm.Message.assistant(_prose(rng, 500), channel="analysis"),
        ocm.Message.assistant(_prose(rng, 6800), channel="final"),
    ]
    renderer = ocm.Renderer(ocm.RenderConfig(cot=ocm.CoTPolicy.KEEP))
    tokens = renderer.training_tokens(msgs)
    head = renderer.encoding.encode_ordinary("assistant")
    return tokens[1 + len(head) :]


# --- timing --------------------------------------------------------------------------


def best(fn: Callable[[], object], repeat: int, inner: int = 1) -> float:
    """Best seconds per call of ``fn`` over ``repeat`` runs of ``inner`` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - start) / inner)
    return min(times)


def stream(parser: Any, tokens: list[int]) -> None:
    process = parser.process
    for token in tokens:
        process(token)
        parser.last_content_delta  # noqa: B018 - read as a streaming client does


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--repeat", type=int, default=7)
    args.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    opts = args.parse_args(argv)
    rng = random.Random(20250628)

    ref = H.load_harmony_encoding(H.HarmonyEncodingName.HARMONY_GPT_OSS)
    ours = compat.load_harmony_encoding(compat.HarmonyEncodingName.HARMONY_GPT_OSS)
    native = ocm.Renderer(ocm.RenderConfig(cot=ocm.CoTPolicy.AUTO_DROP))

    # render
    h_conv, c_conv, n_conv = conversation_40(H), conversation_40(compat), native_conversation_40()
    want = ref.render_conversation_for_completion(h_conv, H.Role.ASSISTANT)
    assert ours.render_conversation_for_completion(c_conv, compat.Role.ASSISTANT) == want
    assert native.completion_tokens(n_conv) == want
    rows: list[tuple[str, str, float, float]] = []
    t_ref = best(lambda: ref.render_conversation_for_completion(h_conv, H.Role.ASSISTANT), opts.repeat, 20)
    t_compat = best(
        lambda: ours.render_conversation_for_completion(c_conv, compat.Role.ASSISTANT), opts.repeat, 20
    )
    t_native = best(lambda: native.completion_tokens(n_conv), opts.repeat, 20)
    rows.append(("render 40 messages (harmony API)", "messages/s", 40 / t_compat, 40 / t_ref))
    rows.append(("render 40 messages (native API)", "messages/s", 40 / t_native, 40 / t_ref))

    # batch parse
    tokens = completion_tokens(rng)
    n = len(tokens)
    want_msgs = [m.to_dict() for m in ref.parse_messages_from_completion_tokens(tokens, H.Role.ASSISTANT)]
    got = [m.to_dict() for m in ours.parse_messages_from_completion_tokens(tokens, compat.Role.ASSISTANT)]
    assert json.dumps(got, sort_keys=True, default=str) == json.dumps(want_msgs, sort_keys=True, default=str)
    t_ref = best(lambda: ref.parse_messages_from_completion_tokens(tokens, H.Role.ASSISTANT), opts.repeat)
    t_compat = best(
        lambda: ours.parse_messages_from_completion_tokens(tokens, compat.Role.ASSISTANT), opts.repeat
    )
    t_native = best(lambda: ocm.parse_tokens(tokens, ocm.Role.ASSISTANT), opts.repeat)
    rows.append((f"batch parse {n} tokens (harmony API)", "tokens/s", n / t_compat, n / t_ref))
    rows.append((f"batch parse {n} tokens (native API)", "tokens/s", n / t_native, n / t_ref))

    # streaming parse
    t_ref = best(lambda: stream(H.StreamableParser(ref, H.Role.ASSISTANT), tokens), opts.repeat)
    t_compat = best(lambda: stream(compat.StreamableParser(ours, compat.Role.ASSISTANT), tokens), opts.repeat)
    t_native = best(lambda: stream(ocm.StreamParser(ocm.Role.ASSISTANT), tokens), opts.repeat)
    rows.append(("streaming parse, token by token (harmony API)", "tokens/s", n / t_compat, n / t_ref))
    rows.append(("streaming parse, token by token (native API)", "tokens/s", n / t_native, n / t_ref))

    # floor: BPE alone
    text = ocm.load_encoding().decode(tokens)
    encode = ocm.load_encoding().encode_ordinary
    floor_n = len(encode(text))
    t_floor = best(lambda: encode(text), opts.repeat)

    if opts.markdown:
        print("| workload | unit | openchatml | openai-harmony | ratio |")
        print("| --- | --- | ---: | ---: | ---: |")
        for name, unit, a, b in rows:
            print(f"| {name} | {unit} | {a:,.0f} | {b:,.0f} | {a / b:.1f}× |")
        print(f"| tiktoken encode_ordinary (floor) | tokens/s | {floor_n / t_floor:,.0f} | | |")
    else:
        width = max(len(r[0]) for r in rows) + 2
        print(f"{'workload':<{width}}{'openchatml':>14}{'openai-harmony':>16}{'ratio':>8}  unit")
        for name, unit, a, b in rows:
            print(f"{name:<{width}}{a:>14,.0f}{b:>16,.0f}{a / b:>7.1f}×  {unit}")
        floor = "tiktoken encode_ordinary (floor)"
        print(f"{floor:<{width}}{floor_n / t_floor:>14,.0f}{'':>24}  tokens/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
