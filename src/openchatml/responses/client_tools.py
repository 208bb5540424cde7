"""The tools the client runs itself — ``local_shell``, ``shell``, ``apply_patch`` — as
the model sees them, and their calls and outputs as items.

Each is offered as a function (:class:`ClientFunction`: in Harmony's ``functions``
namespace for gpt-oss, in the template's tool list for any other model) whose parameters
are the fields of the call's item that OpenAI's API documents:

* ``local_shell(command, working_directory?, timeout_ms?, user?)`` → a
  ``local_shell_call`` whose ``action`` is ``exec`` of them (its ``env`` empty);
* ``shell(commands, timeout_ms?, max_output_length?)`` → a ``shell_call`` whose
  ``action`` they are;
* ``apply_patch(type, path, diff?)`` → an ``apply_patch_call`` whose ``operation`` they
  are (``create_file`` / ``update_file`` with a diff, ``delete_file``).

:func:`client_call` reads a finished call's JSON arguments into its item;
:func:`call_message` writes an item back as the call the model made (input replayed),
:func:`output_text` an output item as the text the model reads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from pydantic import ValidationError

from ..core.messages import Message
from .custom_tools import FUNCTIONS
from .wire.items import (
    ApplyPatchCall,
    ApplyPatchCallOutput,
    ClientCall,
    ClientCallOutput,
    ItemStatus,
    LocalShellAction,
    LocalShellCall,
    LocalShellCallOutput,
    PatchOperation,
    ShellAction,
    ShellCall,
    ShellCallOutput,
)
from .wire.tools import APPLY_PATCH, LOCAL_SHELL, SHELL

ClientCallKind = Literal["local_shell_call", "shell_call", "apply_patch_call"]


@dataclass(frozen=True, slots=True)
class ClientFunction:
    """A tool the client runs, as the function the model is offered: its ``name``, the
    ``kind`` of item a call of it becomes, its ``description`` and JSON Schema
    ``parameters``."""

    name: str
    kind: ClientCallKind
    description: str
    parameters: Mapping[str, Any]


_TIMEOUT: Final = {"type": "integer", "description": "A time limit in milliseconds."}

LOCAL_SHELL_FUNCTION: Final = ClientFunction(
    "local_shell",
    "local_shell_call",
    "Runs a command on the user's computer and gives back what it printed. The client runs it.",
    {
        "type": "object",
        "properties": {
            "command": {
                "type": "array",
                "items": {"type": "string"},
                "description": 'The program and its arguments, one string each: ["ls", "-la"].',
            },
            "working_directory": {"type": "string", "description": "The directory to run it in."},
            "timeout_ms": _TIMEOUT,
            "user": {"type": "string", "description": "The user to run it as."},
        },
        "required": ["command"],
    },
)
SHELL_FUNCTION: Final = ClientFunction(
    "shell",
    "shell_call",
    "Runs shell commands on the user's computer, one after the other, and gives back what "
    "each printed and how it ended. The client runs them.",
    {
        "type": "object",
        "properties": {
            "commands": {
                "type": "array",
                "items": {"type": "string"},
                "description": 'Shell command lines, run in order: ["ls -la", "cat README.md"].',
            },
            "timeout_ms": _TIMEOUT,
            "max_output_length": {
                "type": "integer",
                "description": "The most characters of output to give back for each command.",
            },
        },
        "required": ["commands"],
    },
)
APPLY_PATCH_FUNCTION: Final = ClientFunction(
    "apply_patch",
    "apply_patch_call",
    "Creates, updates or deletes one file on the user's computer. The client applies the edit.",
    {
        "type": "object",
        "properties": {
            "type": {
                "type": "string",
                "enum": ["create_file", "update_file", "delete_file"],
                "description": "What to do with the file.",
            },
            "path": {"type": "string", "description": "The file's path, relative to the workspace root."},
            "diff": {
                "type": "string",
                "description": (
                    "For create_file, the new file's lines, each after a '+'. For update_file, "
                    "the changes: hunks opened by an '@@' line, holding context lines (after a "
                    "space), removed lines (after a '-') and added lines (after a '+')."
                ),
            },
        },
        "required": ["type", "path"],
    },
)
CLIENT_FUNCTIONS: Final[Mapping[str, ClientFunction]] = {
    LOCAL_SHELL: LOCAL_SHELL_FUNCTION,
    SHELL: SHELL_FUNCTION,
    APPLY_PATCH: APPLY_PATCH_FUNCTION,
}
"""The function each tool the client runs is offered as, by the tool's ``type``."""


def function_of(item: ClientCall) -> ClientFunction:
    """The function whose call ``item`` is."""
    if isinstance(item, LocalShellCall):
        return LOCAL_SHELL_FUNCTION
    return SHELL_FUNCTION if isinstance(item, ShellCall) else APPLY_PATCH_FUNCTION


def opened_call(kind: str, call_id: str) -> ClientCall | None:
    """The item a call of ``kind`` opens as (``in_progress``, nothing read yet); ``None``
    for a kind that is not a call of a tool the client runs."""
    if kind == "local_shell_call":
        return LocalShellCall(call_id=call_id, action=LocalShellAction(command=()), status="in_progress")
    if kind == "shell_call":
        return ShellCall(call_id=call_id, action=ShellAction(commands=()), status="in_progress")
    if kind == "apply_patch_call":
        operation = PatchOperation(type="update_file", path="")
        return ApplyPatchCall(call_id=call_id, operation=operation, status="in_progress")
    return None


def client_call(opened: ClientCall, arguments: str, status: ItemStatus = "completed") -> ClientCall | None:
    """``opened`` (its id and ``call_id`` kept) with what the JSON ``arguments`` say, in
    ``status``; ``None`` where they are not the object of the tool's parameters."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    try:
        if isinstance(opened, LocalShellCall):
            action = LocalShellAction.model_validate({**value, "type": "exec"})
            return opened.model_copy(update={"action": action, "status": status})
        if isinstance(opened, ShellCall):
            shell = ShellAction.model_validate(value)
            return opened.model_copy(update={"action": shell, "status": status})
        operation = PatchOperation.model_validate(value)
    except ValidationError:
        return None
    if operation.type != "delete_file" and operation.diff is None:
        return None
    patch_status = "completed" if status == "completed" else "in_progress"
    return opened.model_copy(update={"operation": operation, "status": patch_status})


def call_arguments(item: ClientCall) -> str:
    """The JSON arguments of the call ``item`` is (what the model wrote, compact)."""
    if isinstance(item, LocalShellCall):
        fields: dict[str, Any] = item.action.model_dump(exclude={"type", "env"}, exclude_none=True)
        if item.action.env:
            fields["env"] = dict(item.action.env)
    elif isinstance(item, ShellCall):
        fields = item.action.model_dump(exclude_none=True)
    else:
        fields = item.operation.model_dump(exclude_none=True)
    return json.dumps(fields, ensure_ascii=False, separators=(",", ":"))


def recipient_of(item: ClientCall) -> str:
    """Whom the call is addressed to in Harmony: ``functions.NAME``."""
    return f"{FUNCTIONS}{function_of(item).name}"


def call_message(item: ClientCall) -> Message:
    """The Harmony message of the call ``item`` is: ``commentary`` to ``functions.NAME``,
    JSON arguments."""
    return Message.tool_call(recipient_of(item), call_arguments(item), call_id=item.call_id)


def output_call_id(item: ClientCallOutput) -> str:
    """The ``call_id`` of the call ``item`` answers."""
    return item.call if isinstance(item, LocalShellCallOutput) else item.call_id


def output_text(item: ClientCallOutput) -> str:
    """What the model reads of an output: a ``local_shell`` call's output as it is (a JSON
    string); a ``shell`` call's as the JSON array of each command's ``stdout``,
    ``stderr`` and ``outcome``; an ``apply_patch`` call's log, after ``Failed`` where the
    edit was not applied (``Done.`` for a completed edit without a log)."""
    if isinstance(item, LocalShellCallOutput):
        return item.output
    if isinstance(item, ShellCallOutput):
        chunks = [chunk.model_dump(exclude_none=True) for chunk in item.output]
        return json.dumps(chunks, ensure_ascii=False)
    return _patch_outcome(item)


def _patch_outcome(item: ApplyPatchCallOutput) -> str:
    log = item.output or ""
    if item.status == "failed":
        return f"Failed: {log}" if log else "Failed."
    return log or "Done."
