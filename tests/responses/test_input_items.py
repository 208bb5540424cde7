"""Items ⇄ messages: every item type becomes the messages the model reads, and back.

``item_messages`` reads typed items (a store's JSON read back with ``load_item``);
``message_items`` writes messages back as items; the model's own items (reasoning,
preambles, answers, function calls) also come back through the event stream, from the
tokens of their messages.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from test_stream import completion

from openchatml import Message
from openchatml.core.content import DeveloperContent
from openchatml.core.interchange import message_to_json
from openchatml.responses.crypto import Sealer
from openchatml.responses.errors import RequestError
from openchatml.responses.input import (
    COMPACTION_KIND,
    REASONING_KIND,
    item_messages,
    message_items,
)
from openchatml.responses.request import parse_request
from openchatml.responses.resource import ResponseState
from openchatml.responses.stream import EventBuilder
from openchatml.responses.wire.content import (
    InputFile,
    InputImage,
    InputText,
    OutputText,
    ReasoningText,
    Refusal,
    SummaryText,
)
from openchatml.responses.wire.items import (
    AssistantMessage,
    CompactionItem,
    DeveloperMessage,
    FunctionCall,
    FunctionCallOutput,
    Item,
    ItemReference,
    ReasoningItem,
    SystemMessage,
    UserMessage,
    load_item,
)

SEALER = Sealer(bytes(range(32)))
CALL = FunctionCall(call_id="call_1", name="get_weather", arguments='{"city":"Paris"}')
TEXT_FILE = base64.b64encode(b"a,b\n1,2").decode()

CASES: list[tuple[Item, list[Message]]] = [
    (UserMessage(content=(InputText(text="Hi"),)), [Message.user("Hi")]),
    (
        UserMessage(content=(InputText(text="Sum:"), InputFile(filename="t.csv", file_data=TEXT_FILE))),
        [Message.user("Sum:\n[file: t.csv]\na,b\n1,2")],
    ),
    (SystemMessage(content=(InputText(text="Policy."),)), [Message.developer(DeveloperContent("Policy."))]),
    (
        DeveloperMessage(content=(InputText(text="Be brief."),)),
        [Message.developer(DeveloperContent("Be brief."))],
    ),
    (AssistantMessage(content=(OutputText(text="Hello"),)), [Message.assistant("Hello", channel="final")]),
    (
        AssistantMessage(content=(OutputText(text="Checking."),), phase="commentary"),
        [Message.assistant("Checking.", channel="commentary", intent="preamble")],
    ),
    (AssistantMessage(content=(Refusal(refusal="No."),)), [Message.assistant("No.", channel="final")]),
    (CALL, [Message.tool_call("functions.get_weather", '{"city":"Paris"}', call_id="call_1")]),
    (
        FunctionCallOutput(call_id="call_1", output="sunny"),
        [Message.tool_result("functions.get_weather", "sunny", call_id="call_1")],
    ),
    (
        FunctionCallOutput(call_id="call_1", output=(InputText(text="rain"),)),
        [Message.tool_result("functions.get_weather", "rain", call_id="call_1")],
    ),
    (
        ReasoningItem(content=(ReasoningText(text="Think."),)),
        [Message.assistant("Think.", channel="analysis")],
    ),
    (
        ReasoningItem(encrypted_content=SEALER.seal(REASONING_KIND, {"text": "Sealed."})),
        [Message.assistant("Sealed.", channel="analysis")],
    ),
    (ReasoningItem(summary=(SummaryText(text="Gist."),)), [Message.assistant("Gist.", channel="analysis")]),
    (ReasoningItem(), []),
    (
        CompactionItem(
            encrypted_content=SEALER.seal(
                COMPACTION_KIND, {"messages": [message_to_json(Message.user("old"))]}
            )
        ),
        [Message.user("old")],
    ),
]


@pytest.mark.parametrize(
    ("item", "messages"), CASES, ids=lambda c: type(c).__name__ if not isinstance(c, list) else ""
)
def test_every_item_becomes_its_messages(item: Item, messages: list[Message]) -> None:
    items: list[Any] = [item] if not isinstance(item, FunctionCallOutput) else [CALL, item]
    skip = len(items) - 1
    assert item_messages(items, sealer=SEALER)[skip:] == messages
    stored = [load_item(i.to_json()) for i in items]  # the same items read back from their JSON
    assert item_messages(stored, sealer=SEALER)[skip:] == messages


@pytest.mark.parametrize(
    ("item", "param", "code"),
    [
        (
            UserMessage(content=(InputImage(image_url="https://x/y.png"),)),
            "input[0].content[0]",
            "unsupported_content",
        ),
        (
            UserMessage(content=(InputFile(file_url="https://x/a.pdf"),)),
            "input[0].content[0]",
            "unsupported_content",
        ),
        (FunctionCallOutput(call_id="nowhere", output="x"), "input[0].call_id", "invalid_value"),
        (ItemReference(id="msg_1"), "input[0]", "invalid_value"),
        (
            CompactionItem(encrypted_content="ocm1.nonsense"),
            "input[0].encrypted_content",
            "invalid_encrypted_content",
        ),
    ],
)
def test_what_the_model_cannot_read_is_refused(item: Any, param: str, code: str) -> None:
    with pytest.raises(RequestError) as caught:
        item_messages([item], sealer=SEALER)
    assert (caught.value.param, caught.value.code) == (param, code)


def _without_ids(items: list[Item]) -> list[dict[str, Any]]:
    return [{k: v for k, v in i.to_json().items() if k not in ("id", "status")} for i in items]


def test_messages_become_items_again() -> None:
    items: list[Item] = [
        UserMessage(content=(InputText(text="Weather?"),)),
        DeveloperMessage(content=(InputText(text="Be brief."),)),
        ReasoningItem(content=(ReasoningText(text="Use the tool."),)),
        AssistantMessage(content=(OutputText(text="Checking."),), phase="commentary"),
        CALL,
        FunctionCallOutput(call_id="call_1", output="sunny"),
        AssistantMessage(content=(OutputText(text="Sunny."),), phase="final_answer"),
    ]
    back = message_items(item_messages(items))
    assert _without_ids(back) == _without_ids(items)
    assert item_messages(back) == item_messages(items)


def test_the_models_items_come_back_through_the_event_stream() -> None:
    """The model's items → their messages → Harmony tokens → the event stream → the same items."""
    items: list[Item] = [
        ReasoningItem(content=(ReasoningText(text="Use the tool."),)),
        AssistantMessage(content=(OutputText(text="Checking."),), phase="commentary"),
        FunctionCall(call_id="call_1", name="get_weather", arguments='{"city":"Paris"}'),
    ]
    request = parse_request({"model": "m", "input": "hi"})
    stream = EventBuilder(ResponseState("resp_1", request, "m"))
    stream.begin()
    stream.feed(completion(*item_messages(items)))
    stream.finish("stop")

    def comparable(item: Item) -> dict[str, Any]:
        data = {k: v for k, v in item.to_json().items() if k not in ("id", "status", "call_id")}
        for part in data.get("content") or ():
            part.pop("logprobs", None)
        return data

    assert [comparable(i) for i in stream.state.output] == [
        comparable(i) for i in [items[0].model_copy(update={"summary": ()}), *items[1:]]
    ]
