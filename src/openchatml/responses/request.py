"""A create-response request body, checked and normalised into :class:`ResponseRequest`.

``parse_request(body)`` takes the decoded JSON of ``POST /v1/responses`` and returns a
frozen :class:`ResponseRequest`, or raises :class:`~.errors.RequestError` naming the
offending ``param`` (``input[2].content[0].type``). Input items come out in the form the
API returns them (``ItemField``): every item has an ``id`` and a ``status``, string
content becomes one ``input_text`` / ``output_text`` part. ``item_reference`` items are
kept as they are, for the server to resolve against its store.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from . import ids
from .errors import RequestError
from .limits import DEFAULT_LIMITS, RequestLimits

MAX_TEXT: Final = 10 * 1024 * 1024
"""The longest string the schema admits in one text field (10 MiB)."""

_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""Names of tools, functions and formats: matched against the whole string (``fullmatch``)."""
_EFFORTS: Final = ("none", "minimal", "low", "medium", "high", "xhigh")
_SUMMARIES: Final = ("auto", "concise", "detailed")
_CHOICES: Final = ("none", "auto", "required")
_INCLUDES: Final = ("reasoning.encrypted_content", "message.output_text.logprobs")
_MAX_INCLUDES: Final = 32
_ACCEPTED_UNUSED: Final = ("user", "stream_options", "service_tier", "safety_identifier", "prompt_cache_key")


@dataclass(frozen=True, slots=True)
class FunctionTool:
    """A function the model may call: name, description, JSON Schema parameters, strictness."""

    name: str
    description: str | None = None
    parameters: Mapping[str, Any] | None = None
    strict: bool = True

    def to_json(self) -> dict[str, Any]:
        """The tool as the response echoes it (``FunctionTool``)."""
        return {
            "type": "function",
            "name": self.name,
            "description": self.description,
            "parameters": dict(self.parameters) if self.parameters is not None else None,
            "strict": self.strict,
        }


@dataclass(frozen=True, slots=True)
class TextFormat:
    """``text.format``: ``text``, ``json_object`` or ``json_schema`` (with name and schema)."""

    type: str = "text"
    name: str | None = None
    schema: Mapping[str, Any] | None = None
    description: str | None = None
    strict: bool = False

    def to_json(self) -> dict[str, Any]:
        """The format as the response echoes it (``TextField.format``)."""
        if self.type != "json_schema":
            return {"type": self.type}
        # The response schema echoes json_schema formats without the schema itself.
        return {
            "type": "json_schema",
            "name": self.name,
            "description": self.description,
            "schema": None,
            "strict": self.strict,
        }


@dataclass(frozen=True, slots=True)
class ResponseRequest:
    """A checked create-response request. ``input`` holds normalised items."""

    model: str | None = None
    input: tuple[dict[str, Any], ...] = ()
    instructions: str | None = None
    previous_response_id: str | None = None
    tools: tuple[FunctionTool, ...] = ()
    tool_choice: str | dict[str, Any] = "auto"
    parallel_tool_calls: bool = True
    text_format: TextFormat = field(default_factory=TextFormat)
    verbosity: str | None = None
    reasoning_effort: str | None = None
    reasoning_summary: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    max_output_tokens: int | None = None
    max_tool_calls: int | None = None
    top_logprobs: int | None = None
    stream: bool = False
    background: bool = False
    store: bool = True
    include: tuple[str, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=dict)
    truncation: str = "disabled"
    service_tier: str | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    seed: int | None = None

    @property
    def wants_encrypted_reasoning(self) -> bool:
        """Whether ``include`` asks for ``reasoning.encrypted_content``."""
        return "reasoning.encrypted_content" in self.include

    @property
    def wants_logprobs(self) -> bool:
        """Whether ``include`` asks for ``message.output_text.logprobs``."""
        return "message.output_text.logprobs" in self.include


# --- small typed readers -----------------------------------------------------------


def _fail(param: str, message: str, code: str = "invalid_value") -> RequestError:
    return RequestError(message, param=param, code=code)


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )


def _str(value: Any, param: str, *, optional: bool = False, max_len: int = MAX_TEXT) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise _fail(
            param,
            f"Invalid type for '{param}': expected a string, but got {_type_name(value)}.",
            "invalid_type",
        )
    if len(value) > max_len:
        raise _fail(param, f"'{param}' is too long: at most {max_len} characters.", "string_above_max_length")
    return value


def _req_str(value: Any, param: str, *, max_len: int = MAX_TEXT) -> str:
    out = _str(value, param, max_len=max_len)
    assert out is not None
    return out


def _bool(value: Any, param: str, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _fail(
            param,
            f"Invalid type for '{param}': expected a boolean, but got {_type_name(value)}.",
            "invalid_type",
        )
    return value


def _number(value: Any, param: str, lo: float, hi: float) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(
            param,
            f"Invalid type for '{param}': expected a number, but got {_type_name(value)}.",
            "invalid_type",
        )
    if not lo <= value <= hi:
        raise _fail(param, f"'{param}' must be between {lo:g} and {hi:g}, got {value}.")
    return float(value)


def _int(value: Any, param: str, lo: int, hi: int | None = None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(
            param,
            f"Invalid type for '{param}': expected an integer, but got {_type_name(value)}.",
            "invalid_type",
        )
    if value < lo or (hi is not None and value > hi):
        bound = f"at least {lo}" if hi is None else f"between {lo} and {hi}"
        raise _fail(param, f"'{param}' must be {bound}, got {value}.")
    return value


def _obj(value: Any, param: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(
            param,
            f"Invalid type for '{param}': expected an object, but got {_type_name(value)}.",
            "invalid_type",
        )
    return value


def _list(value: Any, param: str) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(
            param,
            f"Invalid type for '{param}': expected an array, but got {_type_name(value)}.",
            "invalid_type",
        )
    return value


def _enum(value: Any, param: str, allowed: tuple[str, ...], *, optional: bool = True) -> str | None:
    if value is None and optional:
        return None
    if value not in allowed:
        choices = ", ".join(repr(a) for a in allowed)
        raise _fail(param, f"Invalid value for '{param}': {value!r}. Supported values are: {choices}.")
    return str(value)


# --- content parts ------------------------------------------------------------------


def _input_part(raw: Any, param: str) -> dict[str, Any]:
    part = _obj(raw, param)
    kind = part.get("type")
    if kind in ("input_text", "text"):
        return {"type": "input_text", "text": _req_str(part.get("text"), f"{param}.text")}
    if kind == "input_image":
        url = _str(part.get("image_url"), f"{param}.image_url", optional=True, max_len=20 * 1024 * 1024)
        file_id = _str(part.get("file_id"), f"{param}.file_id", optional=True)
        if url is None and file_id is None:
            raise _fail(param, f"'{param}' needs 'image_url' or 'file_id'.", "missing_required_parameter")
        detail = _enum(part.get("detail"), f"{param}.detail", ("low", "high", "auto")) or "auto"
        out: dict[str, Any] = {"type": "input_image", "image_url": url, "detail": detail}
        if file_id is not None:
            out["file_id"] = file_id
        return out
    if kind == "input_file":
        out = {"type": "input_file"}
        for key in ("filename", "file_data", "file_url", "file_id"):
            value = _str(part.get(key), f"{param}.{key}", optional=True, max_len=32 * 1024 * 1024)
            if value is not None:
                out[key] = value
        if not any(k in out for k in ("file_data", "file_url", "file_id")):
            raise _fail(
                param, f"'{param}' needs 'file_data', 'file_url' or 'file_id'.", "missing_required_parameter"
            )
        return out
    if kind == "input_video":
        return {"type": "input_video", "video_url": _req_str(part.get("video_url"), f"{param}.video_url")}
    raise _fail(
        f"{param}.type",
        f"Invalid content type {kind!r} at '{param}': expected 'input_text', 'input_image' or 'input_file'.",
    )


def _output_part(raw: Any, param: str) -> dict[str, Any]:
    part = _obj(raw, param)
    kind = part.get("type")
    if kind in ("output_text", "input_text", "text"):
        annotations = part.get("annotations") or []
        return {
            "type": "output_text",
            "text": _req_str(part.get("text"), f"{param}.text"),
            "annotations": _list(annotations, f"{param}.annotations"),
        }
    if kind == "refusal":
        return {"type": "refusal", "refusal": _req_str(part.get("refusal"), f"{param}.refusal")}
    raise _fail(
        f"{param}.type", f"Invalid content type {kind!r} at '{param}': expected 'output_text' or 'refusal'."
    )


def _text_part(raw: Any, param: str, kinds: tuple[str, ...]) -> dict[str, Any]:
    part = _obj(raw, param)
    kind = part.get("type")
    if kind not in kinds:
        raise _fail(
            f"{param}.type",
            f"Invalid content type {kind!r} at '{param}': expected "
            + " or ".join(repr(k) for k in kinds)
            + ".",
        )
    return {"type": kind, "text": _req_str(part.get("text"), f"{param}.text")}


# --- items ----------------------------------------------------------------------------


def _item_id(item: Mapping[str, Any], param: str, make: Any) -> str:
    value = _str(item.get("id"), f"{param}.id", optional=True, max_len=ids.MAX_ID_LENGTH)
    return value if value else str(make())


def _message_item(item: dict[str, Any], param: str) -> dict[str, Any]:
    role = _enum(
        item.get("role"), f"{param}.role", ("user", "assistant", "system", "developer"), optional=False
    )
    content = item.get("content")
    parts: list[dict[str, Any]]
    if role == "assistant":
        if isinstance(content, str):
            parts = [
                {"type": "output_text", "text": _req_str(content, f"{param}.content"), "annotations": []}
            ]
        else:
            parts = [
                _output_part(p, f"{param}.content[{i}]")
                for i, p in enumerate(_list(content, f"{param}.content"))
            ]
    elif isinstance(content, str):
        parts = [{"type": "input_text", "text": _req_str(content, f"{param}.content")}]
    else:
        parts = [
            _input_part(p, f"{param}.content[{i}]") for i, p in enumerate(_list(content, f"{param}.content"))
        ]
    out: dict[str, Any] = {
        "type": "message",
        "id": _item_id(item, param, ids.message_id),
        "status": "completed",
        "role": role,
        "content": parts,
    }
    if role == "assistant":
        phase = _enum(item.get("phase"), f"{param}.phase", ("commentary", "final_answer"))
        if phase is not None:
            out["phase"] = phase
    return out


def _function_call_item(item: dict[str, Any], param: str) -> dict[str, Any]:
    name = _req_str(item.get("name"), f"{param}.name", max_len=64)
    if not _NAME.fullmatch(name):
        raise _fail(f"{param}.name", f"Invalid '{param}.name': {name!r} must match ^[a-zA-Z0-9_-]+$.")
    return {
        "type": "function_call",
        "id": _item_id(item, param, ids.function_call_id),
        "call_id": _req_str(item.get("call_id"), f"{param}.call_id", max_len=64),
        "name": name,
        "arguments": _req_str(item.get("arguments"), f"{param}.arguments"),
        "status": "completed",
    }


def _function_call_output_item(item: dict[str, Any], param: str) -> dict[str, Any]:
    output = item.get("output")
    value: str | list[dict[str, Any]]
    if isinstance(output, str):
        value = output
    else:
        value = [
            _input_part(p, f"{param}.output[{i}]") for i, p in enumerate(_list(output, f"{param}.output"))
        ]
    return {
        "type": "function_call_output",
        "id": _item_id(item, param, ids.function_call_output_id),
        "call_id": _req_str(item.get("call_id"), f"{param}.call_id", max_len=64),
        "output": value,
        "status": "completed",
    }


def _reasoning_item(item: dict[str, Any], param: str) -> dict[str, Any]:
    summary = item.get("summary")
    out: dict[str, Any] = {
        "type": "reasoning",
        "id": _item_id(item, param, ids.reasoning_id),
        "summary": [
            _text_part(p, f"{param}.summary[{i}]", ("summary_text",))
            for i, p in enumerate(_list(summary if summary is not None else [], f"{param}.summary"))
        ],
    }
    content = item.get("content")
    if content is not None:
        out["content"] = [
            _text_part(p, f"{param}.content[{i}]", ("reasoning_text", "text", "output_text"))
            for i, p in enumerate(_list(content, f"{param}.content"))
        ]
    encrypted = _str(item.get("encrypted_content"), f"{param}.encrypted_content", optional=True)
    if encrypted is not None:
        out["encrypted_content"] = encrypted
    return out


def _compaction_item(item: dict[str, Any], param: str) -> dict[str, Any]:
    return {
        "type": "compaction",
        "id": _item_id(item, param, ids.compaction_id),
        "encrypted_content": _req_str(item.get("encrypted_content"), f"{param}.encrypted_content"),
    }


def parse_item(raw: Any, param: str, limits: RequestLimits = DEFAULT_LIMITS) -> dict[str, Any]:
    """One input item, checked and normalised (see the module docstring)."""
    item = _obj(raw, param)
    for key in ("content", "output", "summary"):
        parts = item.get(key)
        if isinstance(parts, list):
            limits.check_count(
                len(parts), limits.max_content_parts, f"{param}.{key}", "parts", "too_many_content_parts"
            )
    kind = item.get("type")
    if kind is None and "role" in item:
        kind = "message"  # EasyInputMessage: {"role": ..., "content": ...}
    if kind == "message":
        return _message_item(item, param)
    if kind == "function_call":
        return _function_call_item(item, param)
    if kind == "function_call_output":
        return _function_call_output_item(item, param)
    if kind == "reasoning":
        return _reasoning_item(item, param)
    if kind == "compaction":
        return _compaction_item(item, param)
    if kind == "item_reference" or (kind is None and "id" in item):
        return {
            "type": "item_reference",
            "id": _req_str(item.get("id"), f"{param}.id", max_len=ids.MAX_ID_LENGTH),
        }
    raise _fail(
        f"{param}.type",
        f"Invalid input item type {kind!r} at '{param}'. Supported types are: "
        "'message', 'function_call', 'function_call_output', 'reasoning', 'compaction', "
        "'item_reference'.",
    )


def parse_input(
    value: Any, param: str = "input", limits: RequestLimits = DEFAULT_LIMITS
) -> tuple[dict[str, Any], ...]:
    """``input``: a string (one user message) or a list of items (at most
    ``limits.max_input_items``, of which at most ``limits.max_item_references`` references)."""
    if value is None:
        return ()
    if isinstance(value, str):
        text = _req_str(value, param)
        return (
            {
                "type": "message",
                "id": ids.message_id(),
                "status": "completed",
                "role": "user",
                "content": [{"type": "input_text", "text": text}],
            },
        )
    raw = _list(value, param)
    limits.check_count(len(raw), limits.max_input_items, param, "items", "too_many_input_items")
    items = tuple(parse_item(item, f"{param}[{i}]", limits) for i, item in enumerate(raw))
    references = sum(1 for item in items if item["type"] == "item_reference")
    limits.check_count(
        references, limits.max_item_references, param, "item references", "too_many_item_references"
    )
    return items


# --- the rest of the body -------------------------------------------------------------


def _tools(value: Any, limits: RequestLimits) -> tuple[FunctionTool, ...]:
    if value is None:
        return ()
    tools: list[FunctionTool] = []
    seen: set[str] = set()
    entries = _list(value, "tools")
    limits.check_count(len(entries), limits.max_tools, "tools", "tools", "too_many_tools")
    for i, raw in enumerate(entries):
        param = f"tools[{i}]"
        tool = _obj(raw, param)
        kind = tool.get("type", "function")
        if kind != "function":
            raise _fail(
                f"{param}.type",
                f"Unsupported tool type {kind!r} at '{param}': this server offers function tools only.",
                "unsupported_tool_type",
            )
        name = _req_str(tool.get("name"), f"{param}.name", max_len=64)
        if not _NAME.fullmatch(name):
            raise _fail(f"{param}.name", f"Invalid '{param}.name': {name!r} must match ^[a-zA-Z0-9_-]+$.")
        if name in seen:
            raise _fail(f"{param}.name", f"Duplicate tool name {name!r} at '{param}'.")
        seen.add(name)
        parameters = tool.get("parameters")
        if parameters is not None:
            parameters = _obj(parameters, f"{param}.parameters")
        tools.append(
            FunctionTool(
                name=name,
                description=_str(tool.get("description"), f"{param}.description", optional=True),
                parameters=parameters,
                strict=_bool(tool.get("strict"), f"{param}.strict", True),
            )
        )
    return tuple(tools)


def _tool_choice(value: Any, tools: tuple[FunctionTool, ...]) -> str | dict[str, Any]:
    if value is None:
        return "auto"
    names = {t.name for t in tools}
    if isinstance(value, str):
        choice = _enum(value, "tool_choice", _CHOICES, optional=False)
        assert choice is not None
        if choice == "required" and not tools:
            raise _fail("tool_choice", "tool_choice 'required' needs at least one tool in 'tools'.")
        return choice
    obj = _obj(value, "tool_choice")
    kind = obj.get("type")
    if kind == "function":
        name = _req_str(obj.get("name"), "tool_choice.name")
        if name not in names:
            raise _fail("tool_choice.name", f"Tool choice {name!r} is not in 'tools'.")
        return {"type": "function", "name": name}
    if kind == "allowed_tools":
        mode = _enum(obj.get("mode"), "tool_choice.mode", _CHOICES) or "auto"
        allowed: list[dict[str, Any]] = []
        entries = _list(obj.get("tools"), "tool_choice.tools")
        if len(entries) > len(tools):
            raise _fail("tool_choice.tools", "'tool_choice.tools' lists more tools than 'tools' holds.")
        for i, raw in enumerate(entries):
            entry = _obj(raw, f"tool_choice.tools[{i}]")
            name = _req_str(entry.get("name"), f"tool_choice.tools[{i}].name")
            if entry.get("type", "function") != "function" or name not in names:
                raise _fail(f"tool_choice.tools[{i}]", f"Allowed tool {name!r} is not a function in 'tools'.")
            allowed.append({"type": "function", "name": name})
        if not allowed:
            raise _fail("tool_choice.tools", "'tool_choice.tools' must list at least one tool.")
        return {"type": "allowed_tools", "tools": allowed, "mode": mode}
    raise _fail(
        "tool_choice.type", f"Invalid tool_choice type {kind!r}: expected 'function' or 'allowed_tools'."
    )


def _text(value: Any) -> tuple[TextFormat, str | None]:
    if value is None:
        return TextFormat(), None
    text = _obj(value, "text")
    verbosity = _enum(text.get("verbosity"), "text.verbosity", ("low", "medium", "high"))
    raw = text.get("format")
    if raw is None:
        return TextFormat(), verbosity
    fmt = _obj(raw, "text.format")
    kind = _enum(fmt.get("type"), "text.format.type", ("text", "json_object", "json_schema"), optional=False)
    if kind != "json_schema":
        return TextFormat(type=str(kind)), verbosity
    name = _req_str(fmt.get("name"), "text.format.name", max_len=64)
    if not _NAME.fullmatch(name):
        raise _fail("text.format.name", f"Invalid 'text.format.name': {name!r} must match ^[a-zA-Z0-9_-]+$.")
    return TextFormat(
        type="json_schema",
        name=name,
        schema=_obj(fmt.get("schema"), "text.format.schema"),
        description=_str(fmt.get("description"), "text.format.description", optional=True),
        strict=_bool(fmt.get("strict"), "text.format.strict", False),
    ), verbosity


def _metadata(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    meta = _obj(value, "metadata")
    if len(meta) > 16:
        raise _fail("metadata", "'metadata' may hold at most 16 keys.")
    out: dict[str, str] = {}
    for key, item in meta.items():
        if len(key) > 64:
            raise _fail("metadata", f"metadata key {key[:20]!r}… is longer than 64 characters.")
        out[key] = _req_str(item, f"metadata.{key}", max_len=512)
    return out


REQUEST_KEYS: Final = frozenset(
    {
        "model",
        "input",
        "previous_response_id",
        "include",
        "tools",
        "tool_choice",
        "metadata",
        "text",
        "temperature",
        "top_p",
        "presence_penalty",
        "frequency_penalty",
        "parallel_tool_calls",
        "stream",
        "background",
        "max_output_tokens",
        "max_tool_calls",
        "reasoning",
        "truncation",
        "instructions",
        "store",
        "top_logprobs",
        "seed",
        *_ACCEPTED_UNUSED,
    }
)


def parse_request(body: Any, limits: RequestLimits = DEFAULT_LIMITS) -> ResponseRequest:
    """Check a create-response body within ``limits``; raises :class:`RequestError` naming
    the bad ``param``."""
    data = _obj(body, "body")
    limits.check_depth(data)
    for key in data:
        if key not in REQUEST_KEYS:
            raise _fail(key, f"Unknown parameter: '{key}'.", "unknown_parameter")
    tools = _tools(data.get("tools"), limits)
    text_format, verbosity = _text(data.get("text"))
    reasoning = data.get("reasoning")
    effort = summary = None
    if reasoning is not None:
        reasoning = _obj(reasoning, "reasoning")
        effort = _enum(reasoning.get("effort"), "reasoning.effort", _EFFORTS)
        if effort == "minimal":  # OpenAI's name; Open Responses' lowest non-zero effort is low
            effort = "low"
        summary = _enum(reasoning.get("summary"), "reasoning.summary", _SUMMARIES)
    includes = _list(data.get("include") or [], "include")
    limits.check_count(len(includes), _MAX_INCLUDES, "include", "entries", "too_many_includes")
    include = tuple(
        dict.fromkeys(
            str(_enum(v, f"include[{i}]", _INCLUDES, optional=False)) for i, v in enumerate(includes)
        )
    )
    stream = _bool(data.get("stream"), "stream", False)
    background = _bool(data.get("background"), "background", False)
    store = _bool(data.get("store"), "store", True)
    if background and not store:
        raise _fail("background", "Background responses need 'store': true.")
    seed = _int(data.get("seed"), "seed", 0)
    return ResponseRequest(
        model=_str(data.get("model"), "model", optional=True, max_len=256),
        input=parse_input(data.get("input"), limits=limits),
        instructions=_str(data.get("instructions"), "instructions", optional=True),
        previous_response_id=_str(
            data.get("previous_response_id"), "previous_response_id", optional=True, max_len=ids.MAX_ID_LENGTH
        ),
        tools=tools,
        tool_choice=_tool_choice(data.get("tool_choice"), tools),
        parallel_tool_calls=_bool(data.get("parallel_tool_calls"), "parallel_tool_calls", True),
        text_format=text_format,
        verbosity=verbosity,
        reasoning_effort=effort,
        reasoning_summary=summary,
        temperature=_number(data.get("temperature"), "temperature", 0.0, 2.0),
        top_p=_number(data.get("top_p"), "top_p", 0.0, 1.0),
        presence_penalty=_number(data.get("presence_penalty"), "presence_penalty", -2.0, 2.0),
        frequency_penalty=_number(data.get("frequency_penalty"), "frequency_penalty", -2.0, 2.0),
        max_output_tokens=_int(data.get("max_output_tokens"), "max_output_tokens", 1),
        max_tool_calls=_int(data.get("max_tool_calls"), "max_tool_calls", 1),
        top_logprobs=_int(data.get("top_logprobs"), "top_logprobs", 0, 20),
        stream=stream,
        background=background,
        store=store,
        include=include,
        metadata=_metadata(data.get("metadata")),
        truncation=_enum(data.get("truncation"), "truncation", ("auto", "disabled")) or "disabled",
        service_tier=_enum(data.get("service_tier"), "service_tier", ("auto", "default", "flex", "priority")),
        safety_identifier=_str(data.get("safety_identifier"), "safety_identifier", optional=True, max_len=64),
        prompt_cache_key=_str(data.get("prompt_cache_key"), "prompt_cache_key", optional=True, max_len=64),
        seed=seed,
    )
