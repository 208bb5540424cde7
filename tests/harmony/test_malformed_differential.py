"""``openchatml.harmony`` against ``openai_harmony`` on malformed completions, strict mode.

Good completions (random assistant turns, tool calls and replies, rendered) are broken
by deleting, duplicating, swapping and inserting special tokens, with a seeded generator.
Both libraries parse each one strictly; they must give the same messages, or both an
error with the same words, at the same token when streaming. The only disagreements
allowed are the documented misreadings of openai-harmony (README, "Where openchatml and
openai-harmony differ"), recognised here by the shape of a header, not by our parser.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

import openai_harmony as H
import pytest

from openchatml import harmony as C
from openchatml.core.tokens import (
    CALL_ID,
    CHANNEL_ID,
    CONSTRAIN_ID,
    END_ID,
    FIRST_SPECIAL_ID,
    MESSAGE_ID,
    RETURN_ID,
    START_ID,
)

SEED = 20240816
CASES = 3000
STREAMED_EVERY = 7
"""Every 7th case is also fed token by token to both streaming parsers."""

SPECIALS = [START_ID, CHANNEL_ID, MESSAGE_ID, CONSTRAIN_ID, END_ID, RETURN_ID, CALL_ID, 199999, 200014]
"""Inserted at random: the Harmony control tokens, ``<|endoftext|>`` and a reserved token."""
WORDS = ["the", "forecast", "is", "sunny", "Grüße", "☀️", "to=", "json", "42", "<|start|>", "\n"]
_STOPS = {END_ID, RETURN_ID, CALL_ID}
_NAMED_ROLE = re.compile(r"(user|assistant|system|developer):\S+\Z")
_ASCII_SPACE = re.compile("[\t\n\x0c\r ]+")


@pytest.fixture(scope="module")
def ours() -> C.HarmonyEncoding:
    """openchatml's drop-in encoding."""
    return C.load_harmony_encoding(C.HarmonyEncodingName.HARMONY_GPT_OSS)


# --- good completions -------------------------------------------------------------------


def _body(rng: random.Random) -> str:
    if rng.random() < 0.3:
        return json.dumps({"place": rng.choice(["Lyon", "Köln"]), "n": rng.randint(0, 9)})
    return " ".join(rng.choice(WORDS[:6]) for _ in range(rng.randint(0, 6)))


def _message(rng: random.Random, *, assistant: bool) -> C.Message:
    kind = rng.randrange(5)
    if kind == 0:  # a tool call
        msg = C.Message.from_role_and_content(C.Role.ASSISTANT, _body(rng))
        msg = msg.with_channel(rng.choice(["commentary", "analysis"])).with_recipient(
            rng.choice(["functions.get_weather", "browser.search", "python"])
        )
        return msg.with_content_type(rng.choice(["<|constrain|>json", "json", "code"]))
    if kind == 1 and not assistant:  # a tool reply
        author = C.Author.new(C.Role.TOOL, rng.choice(["functions.get_weather", "browser.search"]))
        msg = C.Message.from_author_and_content(author, _body(rng)).with_recipient("assistant")
        return msg.with_channel("commentary")
    channel = rng.choice(["analysis", "commentary", "final", None])
    msg = C.Message.from_role_and_content(C.Role.ASSISTANT, _body(rng))
    return msg if channel is None else msg.with_channel(channel)


def good_completion(ours: C.HarmonyEncoding, rng: random.Random) -> tuple[list[int], str | None]:
    """Rendered messages; half the time the prompt opened ``<|start|>assistant`` already."""
    role = rng.choice([None, "assistant"])
    tokens: list[int] = []
    for i in range(rng.randint(1, 4)):
        tokens += ours.render(_message(rng, assistant=i == 0 and role is not None))
    if role is None:
        return tokens, None
    opened = ours.encode("<|start|>assistant", allowed_special="all")
    assert tokens[: len(opened)] == opened
    return tokens[len(opened) :], role


def mutate(tokens: list[int], rng: random.Random) -> list[int]:
    """``tokens`` with one to three special tokens deleted, duplicated, swapped or inserted."""
    out = list(tokens)
    for _ in range(rng.randint(1, 3)):
        specials = [i for i, t in enumerate(out) if t >= FIRST_SPECIAL_ID]
        op = rng.randrange(4)
        if op == 3 or not specials:
            out.insert(rng.randint(0, len(out)), rng.choice(SPECIALS))
            continue
        at = rng.choice(specials)
        if op == 0:
            del out[at]
        elif op == 1:
            out.insert(at, out[at])
        else:
            other = min(max(at + rng.choice([-2, -1, 1, 2]), 0), len(out) - 1)
            out[at], out[other] = out[other], out[at]
    return out


# --- the documented misreadings ---------------------------------------------------------


def headers(tokens: list[int], role: str | None) -> list[list[int]]:
    """The id runs openai-harmony reads as headers (it keeps any id but ``<|message|>``)."""
    out: list[list[int]] = []
    state = "header" if role is not None else "start"
    current: list[int] = []
    for token in tokens:
        if state == "start" and token == START_ID:
            state, current = "header", []
        elif state == "header":
            if token == MESSAGE_ID:
                out.append(current)
                state = "body"
            else:
                current.append(token)
        elif state == "body" and token in _STOPS:
            state = "start"
    return out


def misread_by_reference(ours: C.HarmonyEncoding, header: list[int], role_known: bool) -> bool:
    """A header as a renderer writes it that openai-harmony misreads (README's list)."""
    if any(t >= FIRST_SPECIAL_ID and t not in (CHANNEL_ID, CONSTRAIN_ID) for t in header):
        return False
    text = ours.decode(header)
    before, _, after = text.partition("<|channel|>")
    words = _ASCII_SPACE.split(before.strip())
    if not role_known and words and _NAMED_ROLE.match(words[0]):
        return True  # a named user or assistant: "Unknown role", or read as a tool
    tool_name = "." in words[0] or words[0] in ("python", "browser")
    if not role_known and len(words) == 1 and not after.split()[1:] and tool_name:
        return True  # a tool reply without a recipient: "Unknown role"
    channel_rest = after.split(None, 1)[1:] if after and not after[0].isspace() else []
    lone = [w for w in _ASCII_SPACE.split(" ".join(channel_rest)) if w]
    if (len(lone) == 1 and not lone[0].startswith("to=")) or "<|constrain|>" in text:
        role_words = [w for w in words if w]
        return len(role_words) <= 1  # a content type with no recipient, read as the recipient
    return False


def exempt(ours: C.HarmonyEncoding, tokens: list[int], role: str | None) -> bool:
    """Whether a header of ``tokens`` is one openai-harmony misreads."""
    found = headers(tokens, role)
    return any(misread_by_reference(ours, h, role is not None and i == 0) for i, h in enumerate(found))


# --- the comparison ---------------------------------------------------------------------


def _batch(module: Any, encoding: Any, tokens: list[int], role: str | None) -> Any:
    try:
        got = encoding.parse_messages_from_completion_tokens(
            tokens, None if role is None else module.Role(role)
        )
    except module.HarmonyError as exc:
        return ("error", getattr(exc, "message", str(exc)))
    return [json.loads(m.to_json()) for m in got]


def _stream(module: Any, encoding: Any, tokens: list[int], role: str | None) -> Any:
    parser = module.StreamableParser(encoding, None if role is None else module.Role(role))
    for i, token in enumerate(tokens):
        try:
            parser.process(token)
        except module.HarmonyError as exc:
            return ("error", i, getattr(exc, "message", str(exc)))
    try:
        parser.process_eos()
    except module.HarmonyError as exc:
        return ("error", len(tokens), getattr(exc, "message", str(exc)))
    return [json.loads(m.to_json()) for m in parser.messages]


def test_malformed_completions_parse_like_reference(oracle: Any, ours: C.HarmonyEncoding) -> None:
    rng = random.Random(SEED)
    disagreements: list[tuple[str, str | None, Any, Any]] = []
    exempted = errors = 0
    for case in range(CASES):
        tokens, role = good_completion(ours, rng)
        tokens = mutate(tokens, rng)
        want, got = _batch(H, oracle, tokens, role), _batch(C, ours, tokens, role)
        if case % STREAMED_EVERY == 0 and want == got:
            want, got = _stream(H, oracle, tokens, role), _stream(C, ours, tokens, role)
        errors += isinstance(want, tuple)
        if want != got:
            if exempt(ours, tokens, role):
                exempted += 1
            else:
                disagreements.append((ours.decode(tokens), role, want, got))
    assert not disagreements, f"{len(disagreements)} disagreements, first: {disagreements[:3]}"
    assert errors > CASES // 10  # the mutations do break completions
    assert exempted < CASES // 10


def test_exemptions_are_recognised(ours: C.HarmonyEncoding) -> None:
    def tokens(text: str) -> list[int]:
        return ours.encode(text, allowed_special="all")

    assert exempt(ours, tokens("<|start|>user:bob<|message|>hi<|end|>"), None)
    assert exempt(ours, tokens("<|start|>functions.f<|message|>{}<|end|>"), None)
    assert exempt(ours, tokens("<|channel|>final <|constrain|>json<|message|>{}<|return|>"), "assistant")
    assert exempt(ours, tokens("<|channel|>final json<|message|>{}<|return|>"), "assistant")
    assert not exempt(ours, tokens("<|channel|>final<|message|>x<|start|>y<|return|>"), "assistant")
    assert not exempt(
        ours, tokens("<|channel|>commentary to=functions.f json<|message|>{}<|call|>"), "assistant"
    )
    assert not exempt(ours, tokens("<|start|>assistant<|channel|>a<|channel|>b<|message|>x<|end|>"), None)
