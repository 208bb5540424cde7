"""openchatml against openai-harmony, token for token.

Conversations are generated in openchatml's model, translated to openai-harmony's, and
rendered by both (history, completion, training; auto-drop on and off); the ids must be
identical. The reference's renders are then parsed by both; the messages must agree,
except where the reference misreads its own output (listed in ``_harmony_misreads``).
"""

from __future__ import annotations

import json
import string
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openchatml import (
    ChannelConfig,
    Conversation,
    CoTPolicy,
    DeveloperContent,
    Message,
    ReasoningEffort,
    RenderConfig,
    Renderer,
    Role,
    SystemContent,
    TextContent,
    ToolDescription,
    ToolNamespaceConfig,
    parse_tokens,
)
from openchatml.core.typescript import schema_to_typescript

H: Any = pytest.importorskip("openai_harmony")

KEEP = Renderer(RenderConfig(cot=CoTPolicy.KEEP))
AUTO = Renderer(RenderConfig(cot=CoTPolicy.AUTO_DROP))

# --- strategies ----------------------------------------------------------------------

ident = st.text(string.ascii_lowercase + "_", min_size=1, max_size=8).filter(
    lambda s: s not in {r.value for r in Role}
)
words = st.text(string.ascii_letters + string.digits + " .,-'\"`()", max_size=30)
body = st.one_of(
    st.text(st.characters(exclude_categories=["Cs"]), max_size=60),
    st.sampled_from(["", "<|start|>", "a<|end|>b", "<<|message|>", "x<", "<|channel|>final"]),
    words,
)
json_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    # short mantissas only: the reference's JSON reader (serde_json without
    # float_roundtrip) rounds some longer ones to a neighbouring float, e.g.
    # 1.1340591265035e-14 → 1.1340591265034999e-14, 3e23 → 2.9999999999999997e23;
    # its fast exact path covers mantissas below 2**53 with exponents within ±22
    st.builds(lambda m, e: float(f"{m}e{e}"), st.integers(-(10**6), 10**6), st.integers(-22, 22)),
    st.sampled_from([1.5, 1e20, 1e-7, 0.1, 123456789.125, 1e16, 1e15, -0.0, 2.5e-5, 1e-5, 5e-324]),
    words,
)
json_value = st.recursive(
    json_scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ident, inner, max_size=3),
    max_leaves=6,
)


def _decorate(schema_st: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        schema = dict(draw(schema_st))
        if draw(st.booleans()):
            schema["description"] = draw(words)
        if draw(st.integers(0, 5)) == 0:
            schema["title"] = draw(words)
        if draw(st.integers(0, 5)) == 0:
            schema["examples"] = draw(st.lists(words | st.integers(), max_size=2))
        if draw(st.integers(0, 3)) == 0:
            schema["default"] = draw(json_value)
        if draw(st.integers(0, 4)) == 0:
            schema["nullable"] = draw(st.booleans())
        return schema

    return build()


leaf_schema = st.one_of(
    st.just({"type": "string"}),
    st.builds(lambda e: {"type": "string", "enum": e}, st.lists(words, min_size=1, max_size=4)),
    st.sampled_from([{"type": "number"}, {"type": "integer"}, {"type": "boolean"}, {"type": "null"}]),
    st.sampled_from([{"type": ["number", "string"]}, {"type": ["integer", "null"]}, {}]),
    st.just({"type": "array"}),
)


def _compound(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def obj(draw: st.DrawFn) -> dict[str, Any]:
        props = draw(st.dictionaries(ident, inner, max_size=4))
        schema: dict[str, Any] = {"type": "object", "properties": props}
        if props and draw(st.booleans()):
            schema["required"] = draw(st.lists(st.sampled_from(sorted(props)), unique=True))
        return schema

    return st.one_of(
        obj(),
        st.builds(lambda items: {"type": "array", "items": items}, inner),
        st.builds(lambda vs: {"oneOf": vs}, st.lists(inner, min_size=1, max_size=3)),
    )


schema = st.recursive(_decorate(leaf_schema), lambda inner: _decorate(_compound(inner)), max_leaves=8)
parameters = st.builds(
    lambda props, req: {"type": "object", "properties": props, **({"required": req} if req else {})},
    st.dictionaries(ident, schema, max_size=4),
    st.lists(ident, max_size=2),
)
tool = st.builds(
    ToolDescription,
    name=ident,
    description=st.one_of(words, st.just("line one\nline two\n")),
    parameters=st.one_of(st.none(), parameters),
)
namespace = st.builds(
    lambda name, desc, tools: ToolNamespaceConfig(name, desc, tuple(tools)),
    ident,
    st.one_of(st.none(), words),
    st.lists(tool, max_size=3),
)
system_content = st.builds(
    SystemContent,
    model_identity=st.one_of(st.none(), words),
    reasoning_effort=st.one_of(st.none(), st.sampled_from(list(ReasoningEffort))),
    conversation_start_date=st.one_of(st.none(), st.just("2025-06-28")),
    knowledge_cutoff=st.one_of(st.none(), st.just("2024-06")),
    channel_config=st.one_of(
        st.none(),
        st.builds(
            lambda chans, req: ChannelConfig(tuple(chans), req),
            st.lists(st.sampled_from(["analysis", "commentary", "final"]), unique=True),
            st.booleans(),
        ),
    ),
    tools=st.one_of(
        st.none(),
        st.sampled_from(
            [
                {"browser": ToolNamespaceConfig.browser()},
                {"python": ToolNamespaceConfig.python()},
                {"python": ToolNamespaceConfig.python(), "browser": ToolNamespaceConfig.browser()},
            ]
        ),
    ),
)
developer_content = st.builds(
    lambda instr, fns, extra: DeveloperContent(
        instructions=instr,
        tools=(
            ({"functions": ToolNamespaceConfig("functions", None, tuple(fns))} if fns is not None else {})
            | ({extra.name: extra} if extra is not None else {})
        )
        or None,
    ),
    st.one_of(st.none(), words),
    st.one_of(st.none(), st.lists(tool, max_size=3)),
    st.one_of(st.none(), namespace),
)
channel = st.sampled_from([None, "analysis", "commentary", "final"])
recipient = st.one_of(
    st.none(), st.sampled_from(["functions.get_weather", "browser.search", "python", "assistant", "all"])
)
content_type = st.one_of(st.none(), st.sampled_from([("json", True), ("json", False), ("text", False)]))


@st.composite
def message(draw: st.DrawFn) -> Message:
    kind = draw(st.sampled_from(["system", "developer", "user", "assistant", "assistant", "tool"]))
    if kind == "system":
        part = draw(st.one_of(system_content, body.map(TextContent)))
        return Message.from_role(Role.SYSTEM, part)
    if kind == "developer":
        part = draw(st.one_of(developer_content, body.map(TextContent)))
        return Message.from_role(Role.DEVELOPER, part)
    ct = draw(content_type)
    attrs: dict[str, Any] = {
        "channel": draw(channel),
        "recipient": draw(recipient),
        "content_type": ct[0] if ct else None,
        "constrained": ct[1] if ct else False,
    }
    texts = draw(st.lists(body, min_size=1, max_size=2))
    parts = [TextContent(t) for t in texts]
    if kind == "user":
        return Message.from_role(Role.USER, parts, name=draw(st.one_of(st.none(), ident)), **attrs)
    if kind == "assistant":
        return Message.from_role(Role.ASSISTANT, parts, **attrs)
    name = draw(st.sampled_from(["functions.get_weather", "browser.search", "python"]))
    return Message.from_role(Role.TOOL, parts, name=name, **attrs)


conversation = st.lists(message(), max_size=8).map(Conversation.from_messages)


# --- translation to openai-harmony -----------------------------------------------------


def _h_namespace(ns: ToolNamespaceConfig) -> Any:
    return H.ToolNamespaceConfig(
        name=ns.name,
        description=ns.description,
        tools=[
            H.ToolDescription.new(
                t.name, t.description, parameters=None if t.parameters is None else _plain(t.parameters)
            )
            for t in ns.tools
        ],
    )


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=dict))


def _h_part(part: Any) -> Any:
    if isinstance(part, TextContent):
        return H.TextContent(text=part.text)
    if isinstance(part, SystemContent):
        effort = None if part.reasoning_effort is None else H.ReasoningEffort(part.reasoning_effort.title())
        cc = part.channel_config
        return H.SystemContent(
            model_identity=part.model_identity,
            reasoning_effort=effort,
            conversation_start_date=part.conversation_start_date,
            knowledge_cutoff=part.knowledge_cutoff,
            channel_config=None
            if cc is None
            else H.ChannelConfig(
                valid_channels=list(cc.valid_channels), channel_required=cc.channel_required
            ),
            tools=None if part.tools is None else {k: _h_namespace(v) for k, v in part.tools.items()},
        )
    assert isinstance(part, DeveloperContent)
    return H.DeveloperContent(
        instructions=part.instructions,
        tools=None if part.tools is None else {k: _h_namespace(v) for k, v in part.tools.items()},
    )


def to_harmony(conv: Conversation) -> Any:
    out = []
    for m in conv:
        hm = H.Message(
            author=H.Author(role=H.Role(m.role.value), name=m.name),
            content=[_h_part(p) for p in m.content],
            channel=m.channel,
            recipient=m.recipient,
            content_type=None
            if m.content_type is None
            else ("<|constrain|>" if m.constrained else "") + m.content_type,
        )
        out.append(hm)
    return H.Conversation.from_messages(out)


def _normal(role: str, name: Any, channel: Any, recipient: Any, ctype: Any, text: str) -> tuple[Any, ...]:
    return (role, name, channel, recipient, ctype, text)


def _text_of(m: Message, has_tools: bool) -> str:
    """The body text a message renders to (structured contents included)."""
    out = []
    for p in m.content:
        if isinstance(p, SystemContent):
            out.append(p.to_text(has_function_tools=has_tools))
        elif isinstance(p, DeveloperContent):
            out.append(p.to_text())
        else:
            out.append(p.text)
    return "".join(out)


def _ours(messages: list[Message], has_tools: bool = False) -> list[tuple[Any, ...]]:
    return [
        _normal(
            m.role.value,
            m.name,
            m.channel,
            m.recipient,
            None if m.content_type is None else ("<|constrain|>" if m.constrained else "") + m.content_type,
            _text_of(m, has_tools),
        )
        for m in messages
    ]


def _theirs(messages: list[Any]) -> list[tuple[Any, ...]]:
    return [
        _normal(
            m.author.role.value,
            m.author.name,
            m.channel,
            m.recipient,
            m.content_type,
            "".join(c.text for c in m.content),
        )
        for m in messages
    ]


def _harmony_misreads(m: Message) -> bool:
    """Messages openai-harmony renders but cannot read back correctly."""
    if m.role is not Role.TOOL and m.name is not None:
        return True  # "user:alice" → Unknown role
    if m.role is Role.TOOL and m.recipient in (None, "all"):
        return True  # "functions.f<|channel|>…" without to= → Unknown role
    if m.content_type is not None and m.recipient in (None, "all"):
        return True  # "final <|constrain|>json", "commentary json" → read as the recipient
    return m.recipient == "all"  # not rendered, so nothing to read back


def _skip_unrenderable(conv: Conversation) -> bool:
    return any(m.role is Role.TOOL and m.name is None for m in conv)


# --- tests ---------------------------------------------------------------------------


@given(schema)
def test_schema_to_typescript_matches_reference(oracle: Any, schema: dict[str, Any]) -> None:
    tool = ToolDescription("f", "d", {"type": "object", "properties": {"p": schema}})
    conv = Conversation.from_messages(
        [
            Message.developer(
                DeveloperContent(tools={"functions": ToolNamespaceConfig("functions", None, (tool,))})
            )
        ]
    )
    assert KEEP.tokens(conv) == oracle.render_conversation(to_harmony(conv))


@given(conversation)
def test_render_is_token_exact(oracle: Any, conv: Conversation) -> None:
    hconv = to_harmony(conv)
    keep = H.RenderConversationConfig(auto_drop_analysis=False)
    assert KEEP.tokens(conv) == oracle.render_conversation(hconv, keep)
    assert AUTO.tokens(conv) == oracle.render_conversation(hconv)
    assert AUTO.completion_tokens(conv, Role.ASSISTANT) == oracle.render_conversation_for_completion(
        hconv, H.Role.ASSISTANT
    )
    assert KEEP.completion_tokens(conv, Role.USER) == oracle.render_conversation_for_completion(
        hconv, H.Role.USER, keep
    )
    assert AUTO.training_tokens(conv) == oracle.render_conversation_for_training(hconv)
    assert KEEP.training_tokens(conv) == oracle.render_conversation_for_training(hconv, keep)
    for m, hm in zip(conv, hconv.messages, strict=True):
        assert KEEP.message_tokens(m) == oracle.render(hm)


@given(conversation)
def test_parse_agrees_with_reference(oracle: Any, conv: Conversation) -> None:
    conv = Conversation.from_messages(m for m in conv if not _harmony_misreads(m))
    tokens = oracle.render_conversation(
        to_harmony(conv), H.RenderConversationConfig(auto_drop_analysis=False)
    )
    theirs = _theirs(oracle.parse_messages_from_completion_tokens(tokens, None))
    ours = parse_tokens(tokens, check_constraints=False)
    assert _ours(ours) == theirs
    assert _ours(ours) == _ours(list(conv), conv.has_function_tools)


@given(st.lists(message(), min_size=1, max_size=4))
def test_completion_parse_agrees_with_reference(oracle: Any, msgs: list[Message]) -> None:
    """A sampled completion: the prompt ended in ``<|start|>assistant``."""
    msgs = [m.with_(author=m.author.__class__(Role.ASSISTANT)) for m in msgs if not _harmony_misreads(m)]
    msgs = [m for m in msgs if all(isinstance(p, TextContent) for p in m.content)]
    if not msgs:
        return
    tokens = KEEP.tokens(msgs)
    head = KEEP.encoding.encode_ordinary("assistant")
    assert tokens[1 : 1 + len(head)] == head
    completion = tokens[1 + len(head) :]
    theirs = _theirs(oracle.parse_messages_from_completion_tokens(completion, H.Role.ASSISTANT))
    assert _ours(parse_tokens(completion, Role.ASSISTANT, check_constraints=False)) == theirs


def test_stop_tokens_match(oracle: Any, encoding: Any) -> None:
    assert set(encoding.stop_tokens()) == set(oracle.stop_tokens())
    assert set(encoding.stop_tokens_for_assistant_actions()) == set(
        oracle.stop_tokens_for_assistant_actions()
    )


def test_special_tokens_match(oracle: Any, encoding: Any) -> None:
    assert set(encoding.special_tokens) == oracle.special_tokens_set
    for text, tid in encoding.special_tokens.items():
        assert oracle.encode(text, allowed_special="all") == [tid]


@given(st.text(max_size=200))
def test_ordinary_encoding_matches(oracle: Any, encoding: Any, text: str) -> None:
    assert encoding.encode_ordinary(text) == oracle.encode(text, disallowed_special=())


def test_builtin_tool_namespaces_match(oracle: Any) -> None:
    for ours, theirs in (
        (ToolNamespaceConfig.browser(), H.ToolNamespaceConfig.browser()),
        (ToolNamespaceConfig.python(), H.ToolNamespaceConfig.python()),
    ):
        assert ours.name == theirs.name
        assert ours.description == theirs.description
        assert [(t.name, t.description, _plain(t.parameters)) for t in ours.tools] == [
            (t.name, t.description, t.parameters) for t in theirs.tools
        ]


def test_schema_edge_cases_render() -> None:
    """A few shapes written out, so a reader sees what the translation gives."""
    assert schema_to_typescript({"type": "array", "items": {"type": "string"}}) == "string[]"
    assert schema_to_typescript({"type": "string", "enum": ["a", "b"]}) == '"a" | "b"'
    assert schema_to_typescript({"type": ["integer", "string"]}) == "number | string"
    assert schema_to_typescript({"type": "array"}) == "Array<any>"
    assert schema_to_typescript({"oneOf": [{"type": "string"}, {"type": "number"}]}) == (
        "\n | string\n | number"
    )
    obj = {
        "type": "object",
        "properties": {"u": {"type": "string", "enum": ["c", "f"], "default": "c"}, "n": {"type": "number"}},
        "required": ["n"],
    }
    assert schema_to_typescript(obj) == '{\nu?: "c" | "f", // default: c\nn: number,\n}'
