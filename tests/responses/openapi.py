"""Validate JSON against the Open Responses OpenAPI document (``shared/specs``).

``validate(instance, "ResponseResource")`` raises ``jsonschema.ValidationError`` when
``instance`` does not match ``#/components/schemas/ResponseResource``. The document is
read from this folder (a copy of ``shared/specs``), or ``$OPENRESPONSES_SPEC``.

Extensions (a ``type`` with a provider prefix, ``openai:custom_tool_call``) have no schema
in the document: :func:`known` leaves them out of an object, so that the rest is checked
where the document has it; :func:`validate_event` checks an extension event for what the
specification asks of every one (``type``, ``sequence_number``).
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

_SPEC_NAME = "openresponses-openapi.json"


def spec_path() -> Path:
    """Where the OpenAPI document is."""
    env = os.environ.get("OPENRESPONSES_SPEC")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    root = here.parents[1]
    for candidate in (here, root / "shared" / "specs", root.parent / "shared" / "specs"):
        if (candidate / _SPEC_NAME).exists():
            return candidate / _SPEC_NAME
    raise FileNotFoundError(f"{_SPEC_NAME} not found beside the repository (set OPENRESPONSES_SPEC)")


@functools.cache
def document() -> dict[str, Any]:
    """The OpenAPI document."""
    data: dict[str, Any] = json.loads(spec_path().read_text())
    return data


@functools.cache
def _registry() -> Registry:
    resource = Resource.from_contents(document(), default_specification=DRAFT202012)
    return Registry().with_resource("openresponses", resource)


def schema_names() -> list[str]:
    """Every name under ``#/components/schemas``."""
    return sorted(document()["components"]["schemas"])


def validate(instance: Any, name: str) -> None:
    """Raise ``jsonschema.ValidationError`` unless ``instance`` matches schema ``name``."""
    schema = {"$ref": f"openresponses#/components/schemas/{name}"}
    validator = jsonschema.Draft202012Validator(schema, registry=_registry())
    error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
    if error is not None:
        raise error


STREAMING_EVENT_SCHEMAS: dict[str, str] = {}
"""Event ``type`` → schema name, for every streaming event the document defines."""


def _event_schemas() -> dict[str, str]:
    out: dict[str, str] = {}
    for name, schema in document()["components"]["schemas"].items():
        if not name.endswith("StreamingEvent"):
            continue
        type_prop = schema.get("properties", {}).get("type", {})
        value = type_prop.get("const") or (type_prop.get("enum") or [None])[0] or type_prop.get("default")
        if isinstance(value, str):
            out[value] = name
    return out


def is_extension(kind: Any) -> bool:
    """Whether ``kind`` (a ``type``) is an extension's: a provider prefix, ``openai:…``."""
    return isinstance(kind, str) and ":" in kind


def known(value: Any) -> Any:
    """``value`` without the extensions it holds: left out of arrays (``output``,
    ``tools``); ``null`` as a field (an event's ``item``), but a ``tool_choice`` naming
    an extension tool, which is ``required`` (what naming a tool asks)."""
    if isinstance(value, list):
        return [known(v) for v in value if not (isinstance(v, dict) and is_extension(v.get("type")))]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, entry in value.items():
        if isinstance(entry, dict) and is_extension(entry.get("type")):
            out[key] = "required" if key == "tool_choice" else None
        else:
            out[key] = known(entry)
    return out


def validate_event(event: dict[str, Any]) -> None:
    """Validate a streaming event against the schema its ``type`` names (what it holds of
    extensions left out, see :func:`known`); an extension event needs an integer
    ``sequence_number``."""
    if not STREAMING_EVENT_SCHEMAS:
        STREAMING_EVENT_SCHEMAS.update(_event_schemas())
    kind = event.get("type", "")
    if is_extension(kind):
        if isinstance(event.get("sequence_number"), bool) or not isinstance(
            event.get("sequence_number"), int
        ):
            raise jsonschema.ValidationError(f"extension event {kind!r} without an integer sequence_number")
        return
    name = STREAMING_EVENT_SCHEMAS.get(kind)
    if name is None:
        raise jsonschema.ValidationError(f"unknown streaming event type {kind!r}")
    validate(known(event), name)
