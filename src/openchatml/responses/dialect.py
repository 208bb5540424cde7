"""How the served model spells a conversation and its answers: Harmony (gpt-oss, the
core codec) or its own chat template (any other model).

A :class:`Dialect` turns a request's conversation into prompt ids and sampling settings
(``prepare``), and gives each response the parser of the ids sampled for it
(``parser``) and the vocabulary its log probabilities are reported in. The rest of the
Open Responses layer does not know which dialect it serves: a template model's reasoning,
answers and tool calls arrive as the same OpenChatML messages as gpt-oss's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Protocol

from ..core.messages import Conversation
from ..engines.base import EngineError
from ..templates.analysis import analyze
from ..templates.decoding import TemplateTokenParser
from ..templates.environment import ChatTemplate
from ..templates.errors import TemplateError
from ..templates.format import TemplateFormat
from ..templates.parser import ParseOptions
from ..templates.tokenize import Tokenizer, markers_of, prompt_ids
from .errors import RequestError
from .hf_tokens import HFVocabulary
from .request import FunctionTool, ResponseRequest
from .runner import Prepared, prepare
from .stream import TokenParser, Vocabulary


class Dialect(Protocol):
    """See the module docstring."""

    name: str

    def prepare(
        self,
        request: ResponseRequest,
        conversation: Conversation,
        *,
        context_length: int | None,
        max_input_tokens: int | None = None,
    ) -> Prepared: ...

    def parser(self, request: ResponseRequest, prepared: Prepared) -> TokenParser | None: ...

    @property
    def vocabulary(self) -> Vocabulary | None: ...


class HarmonyDialect:
    """gpt-oss: prompts rendered and answers parsed by the core codec."""

    name = "harmony"

    def prepare(
        self,
        request: ResponseRequest,
        conversation: Conversation,
        *,
        context_length: int | None,
        max_input_tokens: int | None = None,
    ) -> Prepared:
        """Harmony prompt ids and sampling settings (see :func:`~.runner.prepare`)."""
        return prepare(
            request, conversation, context_length=context_length, max_input_tokens=max_input_tokens
        )

    def parser(self, request: ResponseRequest, prepared: Prepared) -> TokenParser | None:
        """``None``: the response stream's own Harmony parser."""
        return None

    @property
    def vocabulary(self) -> Vocabulary | None:
        """``None``: o200k_harmony."""
        return None


class TemplateDialect:
    """A model with its own chat template: prompts rendered by the template and encoded
    by the model's tokenizer (no text of the request becomes a marker: messages, tool
    descriptions and schemas, calls and their outputs, instructions; see
    :mod:`~..templates.tokenize`), answers parsed by the parser derived from the template.

    The request's ``reasoning.effort`` sets the template's thinking switch (found by
    analysis: ``enable_thinking``, ``reasoning_effort``, ``thinking_budget`` …): ``none``
    switches thinking off, the other efforts on (a request's ``minimal`` is read as
    ``low``), at the nearest of the
    template's levels where it has levels; without ``reasoning`` the template's default
    holds (see :func:`~..templates.prompt.thinking_variables`)."""

    name = "template"

    def __init__(
        self,
        template: ChatTemplate,
        fmt: TemplateFormat,
        tokenizer: Tokenizer,
        *,
        stop_ids: Sequence[int] = (),
    ) -> None:
        self.template = template
        self.format = fmt
        self.tokenizer = tokenizer
        self.markers = markers_of(tokenizer)
        added = tokenizer.get_added_vocab()
        ends = [added[m] for m in fmt.end_markers if m in added]
        self.stop_ids = tuple(dict.fromkeys([*stop_ids, *ends]))
        self._vocabulary = HFVocabulary(tokenizer, self.markers)

    @classmethod
    def of_engine(cls, engine: Any) -> TemplateDialect | None:
        """The dialect of an engine whose tokenizer carries a non-Harmony chat template;
        ``None`` for Harmony models and engines without a template. Raises
        :class:`EngineError` when the template cannot be analysed."""
        source = getattr(engine, "chat_template", None)
        tokenizer = getattr(engine, "tokenizer", None)
        if not isinstance(source, str) or tokenizer is None:
            return None
        try:
            template = ChatTemplate(
                source,
                name=f"{engine.info.id} chat template",
                bos_token=str(getattr(tokenizer, "bos_token", None) or ""),
                eos_token=str(getattr(tokenizer, "eos_token", None) or ""),
            )
            fmt = analyze(template)
        except TemplateError as exc:
            raise EngineError(f"the model's chat template cannot be used: {exc}") from exc
        if fmt.harmony:
            return None
        return cls(template, fmt, tokenizer, stop_ids=getattr(engine, "stop_token_ids", ()))

    @property
    def vocabulary(self) -> Vocabulary | None:
        """The tokenizer's tokens."""
        return self._vocabulary

    def _ids(self, conversation: Conversation, request: ResponseRequest, texts: list[str]) -> list[int]:
        tools = [_tool_json(t) for t in request.tools] or None
        try:
            text, ids = prompt_ids(
                self.template,
                conversation,
                self.tokenizer,
                markers=self.markers,
                tools=tools,
                thinking=request.reasoning_effort,
                reasoning=self.format.reasoning,
            )
        except TemplateError as exc:
            raise RequestError(f"The model's chat template cannot render this input: {exc.message}") from exc
        texts.append(text)
        return ids

    def prepare(
        self,
        request: ResponseRequest,
        conversation: Conversation,
        *,
        context_length: int | None,
        max_input_tokens: int | None = None,
    ) -> Prepared:
        """Prompt ids from the template, sampling settings that stop at the model's end of
        turn (see :func:`~.runner.prepare`), and the prompt's start of the answer."""
        texts: list[str] = []
        prepared = prepare(
            request,
            conversation,
            context_length=context_length,
            max_input_tokens=max_input_tokens,
            prompt_of=lambda c: self._ids(c, request, texts),
            stop_ids=self.stop_ids,
        )
        header = self.format.generation_prompt.header
        text = texts[0] if texts else ""
        prefix = text[text.rindex(header) + len(header) :] if header and header in text else ""
        return replace(prepared, prefix=prefix)

    def parser(self, request: ResponseRequest, prepared: Prepared) -> TokenParser | None:
        """The parser of this response's ids: the template's parser, started from what
        the prompt already wrote of the answer."""
        options = ParseOptions(tools=tuple(_tool_json(t) for t in request.tools), prefix=prepared.prefix)
        return TemplateTokenParser(self.format, self._decode, stop_ids=self.stop_ids, options=options)

    def _decode(self, ids: Sequence[int]) -> str:
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=False))  # type: ignore[attr-defined]


def _tool_json(tool: FunctionTool) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description or "",
            "parameters": dict(tool.parameters or {"type": "object", "properties": {}}),
        },
    }
