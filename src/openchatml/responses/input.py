"""Open Responses items → a Harmony :class:`~openchatml.Conversation`.

``build_conversation(request, items, settings=…, sealer=…)`` gives the conversation the
model samples after:

* a ``system`` message from the server's settings and the request (reasoning effort,
  knowledge cutoff, current date);
* a ``developer`` message from ``instructions``, the ``tools`` (the ``functions``
  namespace and one per ``namespace`` tool, see :mod:`.tool_prompt`: a function's JSON
  Schema rendered as TypeScript; a custom tool as a function of one string, see
  :mod:`.custom_tools`; a tool the client runs as the function of
  :mod:`.client_tools`) and a ``json_schema`` text format (``# Response Formats``);
* one message per item: user / system / developer messages as they are (system and
  developer items become developer messages: Harmony has one system message, the
  server's), assistant messages on ``final`` or, with ``phase: commentary``, on
  ``commentary``; function calls on ``commentary to=functions.NAME`` (``NAMESPACE.NAME``
  for a function of a namespace; JSON arguments), custom tool calls likewise with their
  raw input and no content type, calls of the client's tools (``local_shell_call`` …)
  as calls of their functions; the outputs of all as tool messages of the tool called
  (a ``function_call_output`` may answer any of them); reasoning items as ``analysis``
  (from ``content``, else the sealed ``encrypted_content``, else the summary); compaction
  items expand to the messages they sealed.

``items`` is everything in order: a previous response's input and output, then the new
input, with ``item_reference`` already resolved, as typed items (:mod:`.wire.items`).
:func:`message_items` is the way back: messages → items. Which earlier ``analysis`` is rendered
is the renderer's business (its chain-of-thought policy), not this module's.

A text-only model cannot read images, video or binary files: such content is refused
with :class:`~.errors.RequestError` (code ``unsupported_content``) rather than silently
dropped. A file whose ``file_data`` is UTF-8 text is read as text.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from ..core.content import (
    DEFAULT_IDENTITY,
    DeveloperContent,
    ReasoningEffort,
    ResponseFormat,
    SystemContent,
    ToolNamespaceConfig,
)
from ..core.interchange import InterchangeError, message_from_json
from ..core.messages import Conversation, Intent, Message, Role
from ..tools.browser import browser_namespace
from ..tools.python import DEFAULT_TIMEOUT, python_namespace
from . import ids
from .client_tools import call_message, output_call_id, output_text, recipient_of
from .crypto import Sealer
from .custom_tools import FUNCTIONS, custom_call, is_custom_call
from .errors import RequestError
from .mcp_calls import mcp_messages
from .request import ResponseRequest
from .request_tools import BROWSER, BROWSER_ACTIONS, BROWSER_SEARCH, PYTHON
from .tool_index import ToolIndex
from .tool_prompt import harmony_namespaces
from .wire.content import InputFile, InputPart, InputText, OutputPart, OutputText, ReasoningText
from .wire.items import (
    AssistantMessage,
    ClientCall,
    ClientCallOutput,
    CodeInterpreterCall,
    CodeLogs,
    CompactionItem,
    CustomToolCall,
    CustomToolCallOutput,
    DeveloperMessage,
    FunctionCall,
    FunctionCallOutput,
    InputItem,
    Item,
    PageFind,
    Phase,
    ReasoningItem,
    SearchQuery,
    SystemMessage,
    ToolCall,
    UserMessage,
    WebSearchCall,
)
from .wire.mcp_items import McpApprovalRequest, McpApprovalResponse, McpCall, McpListTools
from .wire.tools import JsonSchemaFormat

NO_OUTPUTS: Final = "(the output of this call was not kept)"
"""The reply to a stored code interpreter call without ``outputs``."""
NO_PAGE: Final = "(the page this call showed was not kept; its cursor stays open)"
"""The reply to a stored browser call: the page it showed is not stored with the item."""

REASONING_KIND: Final = "reasoning"
COMPACTION_KIND: Final = "compaction"

_EFFORT: Final = {
    "none": ReasoningEffort.LOW,
    "minimal": ReasoningEffort.LOW,
    "low": ReasoningEffort.LOW,
    "medium": ReasoningEffort.MEDIUM,
    "high": ReasoningEffort.HIGH,
    "xhigh": ReasoningEffort.HIGH,
}


@dataclass(frozen=True, slots=True)
class PromptSettings:
    """What the server puts into every system message.

    ``current_date`` ``None`` means today's date (UTC) when the prompt is built.
    """

    model_identity: str | None = DEFAULT_IDENTITY
    knowledge_cutoff: str | None = "2024-06"
    reasoning_effort: ReasoningEffort = ReasoningEffort.MEDIUM
    current_date: str | None = None
    python_timeout: float = DEFAULT_TIMEOUT
    """How long a cell of the hosted ``python`` tool may run, as its description says."""
    browser_source: str = "web"
    """What the hosted browser searches, as its description's ``sources=`` line says."""


def function_name(recipient: str) -> str:
    """The function a recipient names: ``functions.get_weather`` → ``get_weather``."""
    return recipient[len(FUNCTIONS) :] if recipient.startswith(FUNCTIONS) else recipient


def recipient_name(recipient: str) -> tuple[str, str | None]:
    """``(name, namespace)`` of the tool a Harmony recipient names:
    ``functions.get_weather`` → ``("get_weather", None)``, ``multi_agent_v1.spawn`` →
    ``("spawn", "multi_agent_v1")``."""
    if recipient.startswith(FUNCTIONS) or "." not in recipient:
        return function_name(recipient), None
    namespace, _, name = recipient.partition(".")
    return name, namespace


def call_recipient(item: ToolCall) -> str:
    """Whom the call ``item`` is addressed to in Harmony: ``functions.NAME``, or
    ``NAMESPACE.NAME`` for a tool of a namespace."""
    if isinstance(item, FunctionCall | CustomToolCall):
        return f"{item.namespace}.{item.name}" if item.namespace else f"{FUNCTIONS}{item.name}"
    return recipient_of(item)


def harmony_effort(effort: str | None, default: ReasoningEffort) -> ReasoningEffort:
    """The Harmony ``Reasoning:`` level for an Open Responses effort (none…xhigh)."""
    return default if effort is None else _EFFORT[effort]


def system_message(request: ResponseRequest, settings: PromptSettings) -> Message:
    """The system message: identity, knowledge cutoff, date, reasoning effort, and the
    built-in tools the request offers and ``tool_choice`` lets the model call (the texts
    gpt-oss was trained on): ``browser`` (web search, naming the server's source) and
    ``python`` (the code interpreter, with the server's timeout)."""
    date = settings.current_date or _dt.datetime.now(_dt.UTC).date().isoformat()
    callable_names = ToolIndex.of(request).selection(request.tool_choice)[1]
    tools: dict[str, ToolNamespaceConfig] = {}
    if any(name in callable_names for name in BROWSER_ACTIONS):
        tools[BROWSER] = browser_namespace(settings.browser_source)
    if PYTHON in callable_names:
        tools[PYTHON] = python_namespace(settings.python_timeout)
    return Message.system(
        SystemContent(
            model_identity=settings.model_identity,
            reasoning_effort=harmony_effort(request.reasoning_effort, settings.reasoning_effort),
            conversation_start_date=date,
            knowledge_cutoff=settings.knowledge_cutoff,
            tools=tools or None,
        )
    )


def code_call_messages(item: CodeInterpreterCall) -> list[Message]:
    """The model's ``python`` call of ``item`` (on ``analysis``) and the tool's reply: the
    logs of its ``outputs`` (a call stored without them replies that none were kept)."""
    call = Message.tool_call(
        PYTHON, item.code or "", call_id=item.id, channel="analysis", content_type="code", constrained=False
    )
    if item.outputs is None:
        text = NO_OUTPUTS
    else:
        text = "".join(output.logs for output in item.outputs if isinstance(output, CodeLogs))
    return [call, Message.tool_result(PYTHON, text, call_id=item.id, channel="analysis")]


def search_call_messages(item: WebSearchCall) -> list[Message]:
    """The model's ``browser`` call of ``item`` (on ``analysis``, its arguments from the
    item's action) and the tool's reply (:data:`NO_PAGE`)."""
    action = item.action
    if isinstance(action, SearchQuery):
        recipient, arguments = BROWSER_SEARCH, {"query": action.query or ""}
    elif isinstance(action, PageFind):
        recipient, arguments = "browser.find", {"pattern": action.pattern}
    else:
        recipient, arguments = "browser.open", {"id": action.url or ""}
    text = json.dumps(arguments, ensure_ascii=False)
    call = Message.tool_call(
        recipient, text, call_id=item.id, channel="analysis", content_type="json", constrained=False
    )
    return [call, Message.tool_result(recipient, NO_PAGE, call_id=item.id, channel="analysis")]


def developer_message(request: ResponseRequest) -> Message | None:
    """The developer message (instructions, tools, response format), or ``None`` if empty."""
    instructions = request.instructions
    if request.text_format.type == "json_object":
        note = "Respond with a single JSON object."
        instructions = f"{instructions}\n\n{note}" if instructions else note
    index = ToolIndex.of(request)
    calls, _ = index.selection(request.tool_choice)
    tools = harmony_namespaces(index) if calls != "none" else {}  # nothing to call: none offered
    formats: tuple[ResponseFormat, ...] = ()
    fmt = request.text_format
    if isinstance(fmt, JsonSchemaFormat) and fmt.json_schema is not None:
        formats = (ResponseFormat(fmt.name, dict(fmt.json_schema), fmt.description),)
    if not instructions and not tools and not formats:
        return None
    return Message.developer(
        DeveloperContent(instructions=instructions, tools=tools or None, response_formats=formats)
    )


def _unsupported(param: str, kind: str) -> RequestError:
    return RequestError(
        f"This model reads text only: '{kind}' content at '{param}' cannot be given to it. "
        "Send the content as text (input_text), or a text file as input_file with file_data.",
        param=param,
        code="unsupported_content",
    )


def _file_text(part: InputFile, param: str) -> str:
    data = part.file_data
    if data is None:
        raise RequestError(
            f"Files are read from 'file_data' only; this server does not fetch 'file_url' or 'file_id' "
            f"(at '{param}').",
            param=param,
            code="unsupported_content",
        )
    payload = data.split(",", 1)[1] if data.startswith("data:") and "," in data else data
    try:
        raw = base64.b64decode(payload, validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        raise _unsupported(param, "input_file (binary data)") from None
    return f"[file: {part.filename}]\n{text}" if part.filename else text


def _input_text(parts: Sequence[InputPart], param: str) -> str:
    texts: list[str] = []
    for j, part in enumerate(parts):
        where = f"{param}[{j}]"
        if isinstance(part, InputText):
            texts.append(part.text)
        elif isinstance(part, InputFile):
            texts.append(_file_text(part, where))
        else:
            raise _unsupported(where, part.type)
    return "\n".join(texts) if any(isinstance(p, InputFile) for p in parts) else "".join(texts)


def _assistant_text(parts: Sequence[OutputPart]) -> str:
    return "".join(p.text if isinstance(p, OutputText) else p.refusal for p in parts)


def reasoning_text(item: ReasoningItem, sealer: Sealer | None, param: str) -> str | None:
    """The chain of thought a reasoning item carries, or ``None`` when it carries none."""
    if item.content:
        return "".join(p.text for p in item.content)
    sealed = item.encrypted_content
    if sealed:
        if sealer is None:
            raise RequestError(
                "This server cannot read encrypted_content (no key).",
                param=param,
                code="invalid_encrypted_content",
            )
        payload = sealer.open(REASONING_KIND, sealed, param=f"{param}.encrypted_content")
        if not isinstance(payload, dict) or not isinstance(payload.get("text"), str):
            raise RequestError(
                "The encrypted reasoning content is malformed.", param=param, code="invalid_encrypted_content"
            )
        return str(payload["text"])
    if item.summary:
        return "\n\n".join(p.text for p in item.summary)
    return None


def compaction_messages(item: CompactionItem, sealer: Sealer | None, param: str) -> list[Message]:
    """The messages a compaction item sealed."""
    if sealer is None:
        raise RequestError(
            "This server cannot read compaction items (no key).",
            param=param,
            code="invalid_encrypted_content",
        )
    payload = sealer.open(COMPACTION_KIND, item.encrypted_content, param=f"{param}.encrypted_content")
    try:
        return [message_from_json(m) for m in payload["messages"]]
    except (InterchangeError, KeyError, TypeError) as exc:
        raise RequestError(
            f"The compaction item is malformed: {exc}", param=param, code="invalid_encrypted_content"
        ) from None


def item_messages(
    items: Sequence[InputItem], *, sealer: Sealer | None = None, param: str = "input"
) -> list[Message]:
    """The messages of ``items`` in order (no system or request developer message)."""
    recipients = {i.call_id: call_recipient(i) for i in items if isinstance(i, ToolCall)}
    recipients |= {i.id: f"{i.server_label}.{i.name}" for i in items if isinstance(i, McpApprovalRequest)}
    out: list[Message] = []
    for index, item in enumerate(items):
        out.extend(_item_to_messages(item, f"{param}[{index}]", recipients, sealer))
    return out


def _item_to_messages(
    item: InputItem, param: str, recipients: Mapping[str, str], sealer: Sealer | None
) -> Iterable[Message]:
    if isinstance(item, AssistantMessage):
        text = _assistant_text(item.content)
        if item.phase == "commentary":
            return [Message.assistant(text, channel="commentary", intent=Intent.PREAMBLE.value)]
        return [Message.assistant(text, channel="final")]
    if isinstance(item, UserMessage):
        return [Message.user(_input_text(item.content, f"{param}.content"))]
    if isinstance(item, SystemMessage | DeveloperMessage):
        text = _input_text(item.content, f"{param}.content")
        return [Message.developer(DeveloperContent(instructions=text))]
    if isinstance(item, FunctionCall):
        return [Message.tool_call(call_recipient(item), item.arguments, call_id=item.call_id)]
    if isinstance(item, CustomToolCall):
        return [custom_call(item.name, item.input, item.call_id, item.namespace)]
    if isinstance(item, ClientCall):
        return [call_message(item)]
    if isinstance(item, CodeInterpreterCall):
        return code_call_messages(item)
    if isinstance(item, WebSearchCall):
        return search_call_messages(item)
    if isinstance(item, McpListTools | McpCall | McpApprovalRequest | McpApprovalResponse):
        return mcp_messages(item, recipients)
    if isinstance(item, FunctionCallOutput | CustomToolCallOutput | ClientCallOutput):
        return [_output_message(item, param, recipients)]
    if isinstance(item, ReasoningItem):
        thought = reasoning_text(item, sealer, param)
        return [] if thought is None else [Message.assistant(thought, channel="analysis")]
    if isinstance(item, CompactionItem):
        return compaction_messages(item, sealer, param)
    raise RequestError(f"Item of type {item.type!r} at '{param}' cannot be given to the model.", param=param)


def _output_message(
    item: FunctionCallOutput | CustomToolCallOutput | ClientCallOutput,
    param: str,
    recipients: Mapping[str, str],
) -> Message:
    """The tool message of an output: from the tool its call (found by ``call_id``) called."""
    call_id = (
        item.call_id if isinstance(item, FunctionCallOutput | CustomToolCallOutput) else output_call_id(item)
    )
    recipient = recipients.get(call_id)
    if recipient is None:
        kind = item.type.removeprefix("openai:").removesuffix("_output").replace("_", " ")
        where = "id" if isinstance(item, ClientCallOutput) and item.call_id is None else "call_id"
        raise RequestError(
            f"No tool call found for {kind} output with call_id {call_id!r}.",
            param=f"{param}.{where}",
            code="invalid_value",
        )
    if isinstance(item, ClientCallOutput):
        text = output_text(item)
    else:
        output = item.output
        text = output if isinstance(output, str) else _input_text(output, f"{param}.output")
    return Message.tool_result(recipient, text, call_id=call_id)


def message_items(messages: Iterable[Message]) -> list[Item]:
    """The items of ``messages`` (what :func:`item_messages` reads, written back): user
    and developer messages, assistant answers and preambles, reasoning (``analysis``),
    function and custom tool calls (a call without a content type; ``NAMESPACE.NAME``
    read as a tool of that namespace) and their outputs; system messages and other tools'
    messages have none (a call of a tool the client runs reads as a function call)."""
    out: list[Item] = []
    custom_ids: set[str] = set()
    call_ids: set[str] = set()
    for message in messages:
        role, text = message.role, message.text
        if role is Role.USER:
            out.append(UserMessage(content=(InputText(text=text),)))
        elif role is Role.DEVELOPER:
            content = message.content[0] if message.content else None
            instructions = content.instructions if isinstance(content, DeveloperContent) else text
            out.append(DeveloperMessage(content=(InputText(text=instructions or ""),)))
        elif (
            role is Role.TOOL
            and message.name
            and (message.name.startswith(FUNCTIONS) or (message.call_id or "") in call_ids)
        ):
            call_id = message.call_id or ""
            output = CustomToolCallOutput if call_id in custom_ids else FunctionCallOutput
            out.append(output(call_id=call_id, output=text))
        elif is_custom_call(message):
            call_id = message.call_id or ids.call_id()
            custom_ids.add(call_id)
            call_ids.add(call_id)
            name, namespace = recipient_name(message.recipient or "")
            out.append(CustomToolCall(call_id=call_id, name=name, input=text, namespace=namespace))
        elif role is Role.ASSISTANT and message.recipient is not None:
            call_id = message.call_id or ids.call_id()
            call_ids.add(call_id)
            name, namespace = recipient_name(message.recipient)
            out.append(FunctionCall(call_id=call_id, name=name, arguments=text, namespace=namespace))
        elif role is Role.ASSISTANT and message.channel in (None, "final", "commentary"):
            phase: Phase = "commentary" if message.channel == "commentary" else "final_answer"
            out.append(AssistantMessage(content=(OutputText(text=text),), phase=phase))
        elif role is Role.ASSISTANT:
            out.append(ReasoningItem(content=(ReasoningText(text=text),)))
    return out


def build_conversation(
    request: ResponseRequest,
    items: Sequence[InputItem],
    *,
    settings: PromptSettings | None = None,
    sealer: Sealer | None = None,
) -> Conversation:
    """System message, developer message, then the messages of ``items``.

    Raises :class:`RequestError` for content the model cannot read, a function call
    output without its call, or sealed content that does not open.
    """
    settings = settings or PromptSettings()
    messages = [system_message(request, settings)]
    developer = developer_message(request)
    if developer is not None:
        messages.append(developer)
    messages.extend(item_messages(items, sealer=sealer))
    chat = any(m.role is not Role.SYSTEM and m.role is not Role.DEVELOPER for m in messages)
    if not chat and request.generate:  # a warm-up may prepare the instructions alone
        raise RequestError(
            "The request has no input: give 'input' or 'previous_response_id'.",
            param="input",
            code="missing_required_parameter",
        )
    return Conversation.from_messages(messages)
