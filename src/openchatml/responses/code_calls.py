"""The events of a ``code_interpreter_call``: gpt-oss's ``python`` call, run by the server.

Theory of operation. The response's event builder hands a message addressed ``to=python``
(on ``analysis`` or ``commentary``) to its :class:`CodeCalls`, which opens the call's item
in the output and gives it a :class:`CodeCallWriter`; the item moves through the events
as OpenAI's API streams them:

* the call's header: ``output_item.added`` (``in_progress``, no code yet) and
  ``code_interpreter_call.in_progress``;
* its body as sampled: ``code_interpreter_call_code.delta`` per piece;
* its end (``<|call|>``): ``code_interpreter_call_code.done``; the item waits for its run
  (a call cut short ends ``incomplete`` at once);
* the run: ``code_interpreter_call.interpreting`` (status ``interpreting``), then
  ``code_interpreter_call.completed`` and ``output_item.done`` with the status
  ``completed`` (``failed`` when the tool failed) and, when the request includes
  ``code_interpreter_call.outputs``, the ``logs`` and images the code gave;
* a call the loop does not run (a bound reached, cancellation): ``output_item.done``,
  ``incomplete``.
"""

from __future__ import annotations

from ..core.events import Header
from ..core.messages import Role
from ..tools.base import ImageOutput, LogOutput, ToolResult
from .custom_tools import FUNCTIONS, InputArgument
from .hosted_calls import CallQueue, HostedWriter, Numbering
from .hosted_functions import CODE
from .request_tools import PYTHON
from .wire.event_base import StreamEvent
from .wire.events import OutputItemAdded, OutputItemDone
from .wire.hosted_events import (
    CodeInterpreterCallCodeDelta,
    CodeInterpreterCallCodeDone,
    CodeInterpreterCallCompleted,
    CodeInterpreterCallInProgress,
    CodeInterpreterCallInterpreting,
)
from .wire.items import CodeImage, CodeInterpreterCall, CodeLogs, CodeOutput, OutputItem


def code_outputs(result: ToolResult) -> tuple[CodeOutput, ...]:
    """The ``outputs`` of a call that gave ``result``: its logs (the reply text when the
    tool gave none), images by URL, and for a failed call a last log naming the error
    (``E-TOOL-TIMEOUT: …``), as the model read it."""
    outputs: list[CodeOutput] = []
    for output in result.outputs:
        if isinstance(output, LogOutput):
            outputs.append(CodeLogs(logs=output.logs))
        elif isinstance(output, ImageOutput):
            outputs.append(CodeImage(url=output.url))
    if not any(isinstance(output, CodeLogs) for output in outputs) and result.content:
        outputs.insert(0, CodeLogs(logs=result.content))
    if result.error is not None:
        outputs.append(CodeLogs(logs=f"{result.error.code}: {result.error.message}"))
    return tuple(outputs)


class CodeCallWriter:
    """The events of the call ``item`` (``in_progress``, as it opened) at ``index`` of the
    output (see the module docstring); ``item`` always holds the call as it stands."""

    def __init__(self, item: CodeInterpreterCall, index: int, reader: InputArgument | None = None) -> None:
        self.item = item
        self.index = index
        self.reader = reader
        """Reads the code out of JSON arguments (a chat-template model's call), if given."""

    @property
    def item_id(self) -> str:
        """The call's item id."""
        return self.item.id

    def opened(self, number: Numbering) -> list[StreamEvent]:
        """``output_item.added`` and ``code_interpreter_call.in_progress``."""
        return [
            OutputItemAdded(number(), self.index, self.item),
            CodeInterpreterCallInProgress(number(), self.index, self.item.id),
        ]

    def delta(self, text: str, number: Numbering) -> list[StreamEvent]:
        """The event of more of the code (of the body, or read out of its arguments)."""
        code = self.reader.feed(text) if self.reader is not None else text
        return [CodeInterpreterCallCodeDelta(number(), self.index, self.item.id, code)] if code else []

    def code(self, body: str) -> str:
        """The whole code of the call whose body is ``body``."""
        return self.reader.close() if self.reader is not None else body

    def written(self, code: str, complete: bool, number: Numbering) -> list[StreamEvent]:
        """The end of the code (``complete``: at ``<|call|>``): ``code.done``; a call cut
        short also ends, ``incomplete``."""
        self.item = self.item.model_copy(update={"code": code})
        out: list[StreamEvent] = [CodeInterpreterCallCodeDone(number(), self.index, self.item.id, code)]
        return out if complete else out + self.abandoned(number)

    def interpreting(self, number: Numbering) -> list[StreamEvent]:
        """The code runs: status ``interpreting``."""
        self.item = self.item.model_copy(update={"status": "interpreting"})
        return [CodeInterpreterCallInterpreting(number(), self.index, self.item.id)]

    def finished(self, result: ToolResult, outputs: bool, number: Numbering) -> list[StreamEvent]:
        """The run gave ``result``: ``completed`` (or ``failed``), with its outputs where
        ``outputs`` (the request includes them)."""
        status = "completed" if result.ok else "failed"
        kept = code_outputs(result) if outputs else None
        self.item = self.item.model_copy(update={"status": status, "outputs": kept})
        return [
            CodeInterpreterCallCompleted(number(), self.index, self.item.id),
            OutputItemDone(number(), self.index, self.item),
        ]

    def abandoned(self, number: Numbering) -> list[StreamEvent]:
        """The call will not run: ``output_item.done``, ``incomplete``."""
        self.item = self.item.model_copy(update={"status": "incomplete"})
        return [OutputItemDone(number(), self.index, self.item)]


class CodeCalls:
    """The python calls of one response, each the item ``code_interpreter_call`` of the
    kernel ``container``, kept in ``output`` (the response's output items) as it stands;
    ``outputs``: whether the items carry the code's outputs (``include``)."""

    def __init__(self, output: list[OutputItem], container: str, *, offered: bool, outputs: bool) -> None:
        self.output = output
        self.container = container
        self.offered = offered
        self.outputs = outputs
        self.calls: CallQueue[CodeCallWriter] = CallQueue()
        """The calls written and not yet done."""

    def opening(self, number: Numbering) -> list[StreamEvent]:
        """Nothing: python adds no item before the model samples."""
        return []

    @property
    def ready(self) -> int:
        """No call runs before the model samples."""
        return 0

    def claims(self, header: Header) -> str | None:
        """``python`` when ``header`` opens a python call, the code interpreter being offered:
        gpt-oss's (``to=python``, the code as the body) or a chat-template model's
        (``to=functions.python``, the code in JSON arguments)."""
        calls = self.offered and header.author.role is Role.ASSISTANT
        return PYTHON if calls and header.recipient in (PYTHON, FUNCTIONS + PYTHON) else None

    def open(self, header: Header, number: Numbering) -> tuple[CodeCallWriter, list[StreamEvent]]:
        """A new call at the end of the output (``in_progress``): its writer and events."""
        call = CodeInterpreterCall(code="", container_id=self.container, status="in_progress")
        self.output.append(call)
        reader = InputArgument(CODE) if header.recipient == FUNCTIONS + PYTHON else None
        writer = CodeCallWriter(call, len(self.output) - 1, reader)
        return writer, writer.opened(number)

    def close(self, writer: HostedWriter, code: str, complete: bool, number: Numbering) -> list[StreamEvent]:
        """The call of ``writer`` is written (``complete``: ended by ``<|call|>``, it waits
        for its run; else it ends ``incomplete``)."""
        assert isinstance(writer, CodeCallWriter)
        events = writer.written(writer.code(code), complete, number)
        self.output[writer.index] = writer.item
        if complete:
            self.calls.written(writer)
        return events

    def running(self, number: Numbering) -> list[StreamEvent]:
        """The first waiting call starts running: ``interpreting`` (nothing when none waits)."""
        writer = self.calls.start()
        if writer is None:
            return []
        events = writer.interpreting(number)
        self.output[writer.index] = writer.item
        return events

    def finished(self, result: ToolResult, number: Numbering) -> list[StreamEvent]:
        """The first running call gave ``result``: its last events."""
        writer = self.calls.finish()
        if writer is None:
            return []
        events = writer.finished(result, self.outputs, number)
        self.output[writer.index] = writer.item
        return events

    def abandoned(self, number: Numbering) -> list[StreamEvent]:
        """The response ends with calls left unrun (or unfinished): they end ``incomplete``."""
        events: list[StreamEvent] = []
        for writer in self.calls.drain():
            events += writer.abandoned(number)
            self.output[writer.index] = writer.item
        return events
