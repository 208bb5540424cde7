"""What a chat template renders of a small conversation: a user turn and the generation
prompt, an answer with reasoning, a call of :data:`CALL_NAME`, and longer conversations."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..engines.base import EngineError

CALL_NAME: Final = "lookup"
"""The function the tiny model calls when it writes a tool call."""
CALL_ARGUMENTS: Final[Mapping[str, Any]] = {"query": "tiny"}
"""The arguments of that call."""

_USER: Final = "What is the weather like in Paris today?"
_REASONING: Final = "Let me think about the weather in Paris."
ANSWER: Final = "It is sunny in Paris today."
"""The answer of the sample assistant turn, found again in its renderings."""
_TOOLS: Final = [
    {
        "type": "function",
        "function": {
            "name": CALL_NAME,
            "description": "Look something up.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string", "description": "What to look up."}},
                "required": ["query"],
            },
        },
    }
]


@dataclass(frozen=True, slots=True)
class TemplateRenders:
    """The template's renderings of a small conversation (``None`` where it refused)."""

    prompt: str
    """A user turn and the generation prompt."""
    answer: str | None
    """The same, then an assistant turn with :data:`_REASONING` and :data:`ANSWER`."""
    call: str | None
    """The same, then an assistant turn calling :data:`CALL_NAME` with :data:`CALL_ARGUMENTS`."""
    extra: tuple[str, ...]
    """Longer conversations, with a system message, tools and a tool result."""

    @classmethod
    def of(cls, tokenizer: Any) -> TemplateRenders:
        """Render the conversations, with :data:`_TOOLS` where the template accepts them.
        Raises :class:`EngineError` when it cannot render a user turn and a generation prompt."""
        user = {"role": "user", "content": _USER}
        answer = {"role": "assistant", "content": ANSWER, "reasoning_content": _REASONING}
        call = {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": CALL_NAME, "arguments": dict(CALL_ARGUMENTS)},
                }
            ],
        }
        result = {"role": "tool", "tool_call_id": "call_1", "name": CALL_NAME, "content": "Sunny, 18."}
        problem: Exception | None = None
        for tools in (_TOOLS, None):
            try:
                prompt = _render(tokenizer, [user], tools=tools, add_generation_prompt=True)
            except Exception as exc:
                problem = problem or exc
                continue
            longer = [
                (
                    {"role": "system", "content": "You are a helpful assistant."},
                    user,
                    answer,
                    user,
                    call,
                    result,
                ),
                (user, call, result, answer),
            ]
            extra = (_try_render(tokenizer, list(messages), tools=tools) for messages in longer)
            return cls(
                prompt=prompt,
                answer=_try_render(tokenizer, [user, answer], tools=tools),
                call=_try_render(tokenizer, [user, call], tools=tools)
                or _try_render(tokenizer, [user, {**call, "content": None}], tools=tools),
                extra=tuple(text for text in extra if text is not None),
            )
        raise EngineError(
            "the chat template cannot render a user message with a generation prompt: "
            f"{type(problem).__name__}: {problem}"
        ) from problem

    def corpus(self) -> list[str]:
        """The renderings, each twice: the template's pieces become whole tokens."""
        texts = [self.prompt, self.answer, self.call, *self.extra]
        return [text for text in texts if text is not None] * 2


def _render(tokenizer: Any, messages: list[dict[str, Any]], **options: Any) -> str:
    text = tokenizer.apply_chat_template(messages, tokenize=False, **options)
    if not isinstance(text, str):
        raise TypeError(f"the chat template rendered {type(text).__name__}, not text")
    return text


def _try_render(tokenizer: Any, messages: list[dict[str, Any]], **options: Any) -> str | None:
    try:
        return _render(tokenizer, messages, **options)
    except Exception:
        return None
