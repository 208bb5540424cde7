"""The tools this server runs for the model, set up per response.

Theory of operation. A :class:`HostedTools` lives as long as the service: it holds what
outlasts a response (the python kernels, …). For each response, :meth:`HostedTools.check`
refuses (400) a hosted tool the server cannot run, and :meth:`HostedTools.session` gives a
:class:`HostedSession`: the tools of that response for the :class:`~..tools.router.ToolRouter`
and, for the event builder, one :class:`~..responses.hosted_calls.HostedCalls` per tool
(which turns its calls into output items). A response that offers no hosted tool gets an
empty session, and samples without the agent loop.

A hosted tool's state is its owner's: the python kernel of a conversation is keyed by the
API key and the conversation (:func:`kernel_name`), so a container id another key names in
its input reaches none of that kernel's state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..responses.code_calls import CodeCalls
from ..responses.dialect import Dialect, HarmonyDialect
from ..responses.errors import RequestError
from ..responses.hosted_calls import HostedCalls
from ..responses.request import ResponseRequest
from ..responses.resource import ResponseState
from ..responses.wire import InputItem
from ..responses.wire.items import CodeInterpreterCall
from ..tools.base import Tool
from ..tools.python import KernelPool, PythonTool
from ..tools.router import ToolRouter
from .settings import PythonSettings, ServiceSettings

DEADLINE_GRACE_MS = 5000
"""How long past a tool's own limit the router waits before it stops the call."""


@dataclass(slots=True)
class HostedSession:
    """The hosted tools of one response: ``tools`` for the router, ``calls`` for the event
    builder; ``deadline_ms``: the router's default deadline per call."""

    tools: list[Tool] = field(default_factory=list)
    calls: list[HostedCalls] = field(default_factory=list)
    deadline_ms: int = 120_000

    @property
    def empty(self) -> bool:
        """Whether the response offers no hosted tool (it samples without the loop)."""
        return not self.tools

    def router(self) -> ToolRouter:
        """A router of this session's tools."""
        return ToolRouter(self.tools, default_deadline_ms=self.deadline_ms)

    async def close(self) -> None:
        """The response has ended: what its tools keep across turns is kept."""


class HostedTools:
    """The server's hosted tools (see the module docstring): ``kernels`` runs python
    (``None``: python is off)."""

    def __init__(self, settings: ServiceSettings, dialect: Dialect, *, kernels: KernelPool | None) -> None:
        self.settings = settings
        self.dialect = dialect
        self.kernels = kernels

    def check(self, request: ResponseRequest) -> None:
        """Refuse (400 ``unsupported_tool_type``) a hosted tool this server cannot run for
        ``request``: the tool is off, or the model does not write Harmony."""
        if request.code_interpreter is not None:
            if self.kernels is None:
                self._refuse(
                    request,
                    request.code_interpreter,
                    "code_interpreter",
                    "the hosted python tool is off (see 'openchatml serve --python')",
                )
            if not isinstance(self.dialect, HarmonyDialect):
                self._refuse(
                    request,
                    request.code_interpreter,
                    "code_interpreter",
                    "the hosted python tool runs for gpt-oss (Harmony) models only",
                )

    def _refuse(self, request: ResponseRequest, tool: object, name: str, why: str) -> None:
        position = next(i for i, offered in enumerate(request.all_tools) if offered is tool)
        raise RequestError(
            f"The tool {name!r} cannot be used on this server: {why}.",
            param=f"tools[{position}].type",
            code="unsupported_tool_type",
        )

    async def session(self, state: ResponseState, owner: str, history: Sequence[InputItem]) -> HostedSession:
        """The hosted tools of the response ``state`` of ``owner`` (its request checked by
        :meth:`check`), whose earlier items are ``history``."""
        session = HostedSession()
        request = state.request
        if request.code_interpreter is not None and self.kernels is not None:
            python = self.settings.python or PythonSettings()
            container = kernel_key(request, history, state.id)
            outputs = request.wants_code_outputs
            session.calls.append(CodeCalls(state.output, container, offered=True, outputs=outputs))
            session.tools.append(
                PythonTool(self.kernels, kernel_name(owner, container), timeout=python.timeout)
            )
            session.deadline_ms = max(session.deadline_ms, int(python.timeout * 1000) + DEADLINE_GRACE_MS)
        return session


def kernel_key(request: ResponseRequest, history: Sequence[InputItem], response_id: str) -> str:
    """The key of the python kernel a response runs its code in (its ``container_id``):
    the conversation's id; else the container of the last code interpreter call of the
    ``previous_response_id`` chain (the kernel of the chain's first python call); else
    the response's own id. State thus survives across turns of a conversation or a chain;
    a new chain gets a fresh kernel, as does one whose kernel another server ran."""
    if request.conversation is not None:
        return request.conversation
    calls = [item for item in history if isinstance(item, CodeInterpreterCall) and item.container_id]
    return calls[-1].container_id if calls else response_id


def kernel_name(owner: str, container: str) -> str:
    """The kernel pool's key for ``owner``'s ``container``: a kernel is its owner's, so a
    container id another API key names in its input reaches none of that kernel's state."""
    return f"{owner}\n{container}"
