"""gpt-oss's built-in ``python`` tool: a stateful kernel per conversation, confined.

:class:`PythonTool` (one conversation's tool) runs cells in a :class:`KernelPool`
(kernels by key, idle timeout, least-recently-used eviction); each kernel is a child
Python under a :class:`Sandbox` (``bwrap`` plus rlimits, :class:`KernelLimits`) and
answers with a :class:`PythonResult`.
"""

from .kernel import Kernel, KernelStartError
from .pool import KernelPool
from .result import PythonResult
from .sandbox import MOUNT_POINT, KernelLimits, Sandbox, SandboxUnavailableError
from .tool import DEFAULT_TIMEOUT, PythonTool, python_namespace, tool_result

__all__ = [
    "DEFAULT_TIMEOUT",
    "MOUNT_POINT",
    "Kernel",
    "KernelLimits",
    "KernelPool",
    "KernelStartError",
    "PythonResult",
    "PythonTool",
    "Sandbox",
    "SandboxUnavailableError",
    "python_namespace",
    "tool_result",
]
