"""The base of the wire's pydantic models and the checked scalars they are made of.

:class:`WireModel` is frozen, ignores fields it does not know (clients send extensions)
and serialises by the wire's names. A model is validated either as a client's request
(``context=`` a :class:`Checks`), where every bound of the API holds (lengths, names,
ids), or as the project's own JSON read back (no context: a stored item whose function
name came from the model is read as it was written).

Errors raised here are :class:`~pydantic_core.PydanticCustomError` whose ``type`` is one
of the kinds :mod:`.validation` knows; it turns them into
:class:`~..errors.RequestError` with the request's ``param`` path.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainSerializer,
    SerializationInfo,
    ValidationInfo,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from .. import ids
from ..limits import DEFAULT_LIMITS, RequestLimits
from .dialects import DEFAULT_DIALECT, WireDialect, canonical_type, wire_type

MAX_TEXT: Final = 10 * 1024 * 1024
"""The longest string the schema admits in one text field (10 MiB)."""
MAX_NAME: Final = 64
"""The longest name of a tool, function or format, and of a call id."""

_NAME: Final = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""Names of tools, functions and formats: matched against the whole string (``fullmatch``)."""


@dataclass(frozen=True, slots=True)
class Checks:
    """The validation context of a client's request: the bounds it is held to."""

    limits: RequestLimits = DEFAULT_LIMITS


def checking(info: ValidationInfo) -> bool:
    """Whether the value is validated as part of a client's request (see the module docstring)."""
    return isinstance(info.context, Checks)


class WireModel(BaseModel):
    """A frozen model of the wire; :meth:`to_json` gives its JSON in a dialect."""

    model_config = ConfigDict(
        frozen=True,
        extra="ignore",
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _absent_is_null(cls, data: Any) -> Any:
        """A required field left out reads as ``null`` (and so fails as a ``null`` does)."""
        if isinstance(data, dict):
            missing = [key for key in required_keys(cls) if key not in data]
            if missing:
                return {**data, **dict.fromkeys(missing)}
        return data

    def to_json(self, dialect: WireDialect = DEFAULT_DIALECT) -> dict[str, Any]:
        """The JSON object of this model in ``dialect``."""
        return self.model_dump(mode="json", context=dialect)


def is_none(value: object) -> bool:
    """Whether ``value`` is ``None`` (a field left out of the JSON when it is)."""
    return value is None


def tagger(tags: Mapping[str, str], classes: Mapping[type, str]) -> Callable[[Any], str | None]:
    """The discriminator of a union: a JSON object's tag by its ``type`` (``tags``), a
    model's by its class (``classes``); ``None`` for anything else."""

    def tag(value: Any) -> str | None:
        if isinstance(value, dict):
            kind = value.get("type")
            return tags.get(kind) if isinstance(kind, str) else None
        return classes.get(type(value))

    return tag


def _canonical(value: Any) -> Any:
    return canonical_type(value) if isinstance(value, str) else value


def _spelled(value: Any, info: SerializationInfo) -> Any:
    if not isinstance(value, str):
        return value
    context = info.context
    return wire_type(value, context if isinstance(context, WireDialect) else DEFAULT_DIALECT)


READ_EXTENSION: Final = BeforeValidator(_canonical)
"""A ``type`` read in either dialect's spelling (``custom_tool_call`` or
``openai:custom_tool_call``) holds the Open Responses one."""
WRITE_EXTENSION: Final = PlainSerializer(_spelled)
"""A ``type`` written in the dialect of the dump (its ``context``; Open Responses without one)."""


def extension_schema(name: str) -> WithJsonSchema:
    """The JSON Schema of the ``type`` of extension ``name`` (``openai:custom``): either spelling."""
    return WithJsonSchema({"type": "string", "enum": [name, wire_type(name, WireDialect.OPENAI)]})


def at_most(limit: int) -> AfterValidator:
    """A string of at most ``limit`` characters, in a request."""

    def check(value: str, info: ValidationInfo) -> str:
        if len(value) > limit and checking(info):
            raise PydanticCustomError("too_long", "too long", {"limit": limit})
        return value

    return AfterValidator(check)


def _name(value: str, info: ValidationInfo) -> str:
    if checking(info) and not _NAME.fullmatch(value):
        raise PydanticCustomError("bad_name", "bad name", {"value": value})
    return value


def fresh(make: Callable[[], str]) -> BeforeValidator:
    """An id that is ``make()`` where the value is ``null`` or empty."""

    def fill(value: Any) -> Any:
        return make() if value is None or value == "" else value

    return BeforeValidator(fill)


def between(low: float, high: float) -> BeforeValidator:
    """A JSON number between ``low`` and ``high`` (a boolean is not one), or ``null``."""

    def check(value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise PydanticCustomError("wrong_type", "wrong type", {"expected": "a number"})
        if not low <= value <= high:
            raise PydanticCustomError(
                "out_of_range", "out of range", {"bound": f"between {low:g} and {high:g}", "value": value}
            )
        return float(value)

    return BeforeValidator(check)


def counting(low: int, high: int | None = None) -> BeforeValidator:
    """A JSON integer of at least ``low`` (and at most ``high``), or ``null``."""

    def check(value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise PydanticCustomError("wrong_type", "wrong type", {"expected": "an integer"})
        if value < low or (high is not None and value > high):
            bound = f"at least {low}" if high is None else f"between {low} and {high}"
            raise PydanticCustomError("out_of_range", "out of range", {"bound": bound, "value": value})
        return value

    return BeforeValidator(check)


def _flag(value: Any) -> Any:
    if value is not None and not isinstance(value, bool):
        raise PydanticCustomError("wrong_type", "wrong type", {"expected": "a boolean"})
    return value


def _range_schema(kind: str, low: float, high: float | None = None) -> WithJsonSchema:
    bounds: dict[str, Any] = {"type": kind, "minimum": low}
    if high is not None:
        bounds["maximum"] = high
    return WithJsonSchema({"anyOf": [bounds, {"type": "null"}]})


Text = Annotated[str, at_most(MAX_TEXT)]
"""A text field: at most 10 MiB in a request."""
ShortText = Annotated[str, at_most(MAX_NAME)]
"""A short string: at most 64 characters in a request (call ids)."""
Name = Annotated[str, at_most(MAX_NAME), AfterValidator(_name)]
"""A tool, function or format name: ``^[a-zA-Z0-9_-]{1,64}$`` in a request."""
ItemId = Annotated[str, at_most(ids.MAX_ID_LENGTH)]
"""An id a client names: at most 256 characters in a request."""
Flag = Annotated[bool | None, BeforeValidator(_flag)]
"""A JSON boolean, or ``null`` (absent: the field's default)."""
Temperature = Annotated[float | None, between(0.0, 2.0), _range_schema("number", 0.0, 2.0)]
TopP = Annotated[float | None, between(0.0, 1.0), _range_schema("number", 0.0, 1.0)]
Penalty = Annotated[float | None, between(-2.0, 2.0), _range_schema("number", -2.0, 2.0)]
Positive = Annotated[int | None, counting(1), _range_schema("integer", 1)]
Seed = Annotated[int | None, counting(0), _range_schema("integer", 0)]
TopLogprobs = Annotated[int | None, counting(0, 20), _range_schema("integer", 0, 20)]


_REQUIRED: dict[type, tuple[str, ...]] = {}


def required_keys(model: type[BaseModel]) -> tuple[str, ...]:
    """The wire names of ``model``'s required fields."""
    keys = _REQUIRED.get(model)
    if keys is None:
        keys = tuple(f.alias or name for name, f in model.model_fields.items() if f.is_required())
        _REQUIRED[model] = keys
    return keys
