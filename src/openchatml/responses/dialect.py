"""How the served model spells a conversation and its answers: Harmony (gpt-oss, the
core codec) or its own chat template (any other model).

A :class:`Dialect` turns a request's conversation into prompt ids and sampling settings
(``prepare``), and gives each response the parser of the ids sampled for it
(``parser``) and the vocabulary its log probabilities are reported in. Prompts come with the
grammar the request's output is sampled under (:mod:`.grammar`): its tool choice, strict
arguments and answer schema, in the dialect's own output syntax. The rest of the
Open Responses layer does not know which dialect it serves: a template model's reasoning,
answers and tool calls arrive as the same OpenChatML messages as gpt-oss's.

The dialect is chosen from the engine's tokenizer (:meth:`TemplateDialect.of_engine`):
Harmony where the engine has none (its ids are o200k_harmony), where the tokenizer has no
chat template, or where its template is Harmony's (gpt-oss); the template otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from ..core.messages import Conversation
from ..engines.base import Engine, EngineError, SamplingParams
from ..templates.analysis import analyze
from ..templates.analysis.thinking import reasoning_closer
from ..templates.decoding import TemplateTokenParser
from ..templates.environment import ChatTemplate
from ..templates.errors import TemplateError
from ..templates.format import TemplateFormat
from ..templates.model_tokenizer import ModelTokenizer
from ..templates.parsing import ParseOptions
from ..templates.tokenize import prompt_ids
from .call_rules import later_steps
from .custom_tools import with_input_arguments
from .errors import RequestError
from .grammar import ModelFormat, response_grammar
from .hosted_functions import as_template_messages
from .request import ResponseRequest
from .runner import Prepared, RenderedPrompt, prepare
from .stream import TokenParser, Vocabulary
from .tool_index import ToolIndex
from .tool_prompt import template_tools


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
        """Harmony prompt ids and sampling settings (see :func:`~.runner.prepare`), under
        the request's grammar (:func:`~.grammar.response_grammar`)."""
        prepared = prepare(
            request, conversation, context_length=context_length, max_input_tokens=max_input_tokens
        )
        return constrained(prepared, request, ModelFormat())

    def parser(self, request: ResponseRequest, prepared: Prepared) -> TokenParser | None:
        """``None``: the response stream's own Harmony parser."""
        return None

    @property
    def vocabulary(self) -> Vocabulary | None:
        """``None``: o200k_harmony."""
        return None


class TemplateDialect:
    """A model with its own chat template (``template``, analysed as ``fmt``) and its
    ``tokenizer``: prompts rendered by the template and encoded by the tokenizer (no text
    of the request becomes a marker: messages, tool descriptions and schemas, calls and
    their outputs, instructions; see :mod:`~..templates.tokenize`), answers parsed by the
    parser derived from the template.

    The request's ``reasoning.effort`` sets the template's thinking switch (found by
    analysis: ``enable_thinking``, ``reasoning_effort``, ``thinking_budget`` …): ``none``
    switches thinking off, the other efforts on (a request's ``minimal`` is read as
    ``low``), at the nearest of the template's levels where it has levels; without
    ``reasoning`` the template's default holds (see
    :func:`~..templates.prompt.thinking_variables`). Where the prompt still opens the
    reasoning with ``none`` (a template that always does, DeepSeek-R1's ``<think>\\n``),
    the prompt closes it as an empty block, and the grammar, where the request has one,
    lets no reasoning open (see :mod:`.grammar`): no reasoning tokens are spent.

    Sampling stops at the tokenizer's stop ids and at the ids of the format's end markers
    (``stop_ids``)."""

    name = "template"

    def __init__(self, template: ChatTemplate, fmt: TemplateFormat, tokenizer: ModelTokenizer) -> None:
        self.template = template
        self.format = fmt
        self.tokenizer = tokenizer
        ends = [tokenizer.markers[m] for m in fmt.end_markers if m in tokenizer.markers]
        self.stop_ids = tuple(dict.fromkeys([*tokenizer.stop_token_ids, *ends]))

    @classmethod
    def of_engine(cls, engine: Engine) -> TemplateDialect | None:
        """The dialect of an engine whose tokenizer carries a chat template that is not
        Harmony's; ``None`` where the engine speaks Harmony (see the module docstring).
        Raises :class:`EngineError` when the template cannot be analysed."""
        tokenizer = engine.tokenizer
        if tokenizer is None or tokenizer.chat_template is None:
            return None
        try:
            template = ChatTemplate(
                tokenizer.chat_template,
                name=f"{engine.info.id} chat template",
                bos_token=tokenizer.bos_token,
                eos_token=tokenizer.eos_token,
            )
            fmt = analyze(template)
        except TemplateError as exc:
            raise EngineError(f"the model's chat template cannot be used: {exc}") from exc
        if fmt.harmony:
            return None
        return cls(template, fmt, tokenizer)

    @property
    def vocabulary(self) -> Vocabulary | None:
        """The tokenizer's tokens."""
        return self.tokenizer

    def _render(self, conversation: Conversation, request: ResponseRequest) -> RenderedPrompt:
        tools = _tools_json(request) or None
        try:
            text, ids = prompt_ids(
                self.template,
                with_input_arguments(_hosted_as_functions(conversation, request)),
                self.tokenizer,
                tools=tools,
                thinking=request.reasoning_effort,
                reasoning=self.format.reasoning,
            )
        except TemplateError as exc:
            raise RequestError(f"The model's chat template cannot render this input: {exc.message}") from exc
        if request.reasoning_effort == "none":
            text, ids = self._without_reasoning(text, ids)
        return RenderedPrompt(ids, text)

    def _prefix(self, text: str) -> str:
        """What prompt ``text`` wrote of the answer: the text after its last role header."""
        header = self.format.generation_prompt.header
        return text[text.rindex(header) + len(header) :] if header and header in text else ""

    def _without_reasoning(self, text: str, ids: list[int]) -> tuple[str, list[int]]:
        """The prompt ``text`` (encoded as ``ids``) with the reasoning it left open closed
        as an empty block (:func:`~..templates.analysis.thinking.reasoning_closer`): thinking
        off where the template's switch cannot do it. The prefix is encoded again with the
        closer where the prompt's ids end with it, so that the tokenizer sees them whole."""
        prefix = self._prefix(text)
        closer = reasoning_closer(self.format.reasoning, prefix)
        if not closer:
            return text, ids
        tail = self.tokenizer.encode(prefix) if prefix else []
        if tail and ids[-len(tail) :] == tail:
            return text + closer, ids[: -len(tail)] + self.tokenizer.encode(prefix + closer)
        return text + closer, ids + self.tokenizer.encode(closer)

    def prepare(
        self,
        request: ResponseRequest,
        conversation: Conversation,
        *,
        context_length: int | None,
        max_input_tokens: int | None = None,
    ) -> Prepared:
        """Prompt ids and text from the template, sampling settings that stop at the model's
        end of turn (see :func:`~.runner.prepare`), and the prompt's start of the answer."""
        prepared = prepare(
            request,
            conversation,
            context_length=context_length,
            max_input_tokens=max_input_tokens,
            prompt_of=lambda c: self._render(c, request),
            stop_ids=self.stop_ids,
        )
        prepared = replace(prepared, prefix=self._prefix(prepared.text or ""))
        model = ModelFormat(self.format, tuple(self.tokenizer.markers.items()))
        return constrained(prepared, request, model)

    def parser(self, request: ResponseRequest, prepared: Prepared) -> TokenParser | None:
        """The parser of this response's ids: the template's parser, started from what
        the prompt already wrote of the answer."""
        options = ParseOptions(tools=tuple(_tools_json(request)), prefix=prepared.prefix)
        return TemplateTokenParser(self.format, self.tokenizer, stop_ids=self.stop_ids, options=options)


def _hosted_as_functions(conversation: Conversation, request: ResponseRequest) -> Conversation:
    """``conversation`` with the calls of the request's hosted tools and their replies
    written as function calls and outputs, as a chat template renders them."""
    index = ToolIndex.of(request)
    hosted = (*index.hosted, *sorted(index.served))
    if not hosted:
        return conversation
    return replace(conversation, messages=tuple(as_template_messages(conversation.messages, hosted)))


def constrained(prepared: Prepared, request: ResponseRequest, model: ModelFormat) -> Prepared:
    """``prepared`` sampled under the request's grammar, if it has one (see
    :func:`~.grammar.response_grammar`); raises :class:`RequestError` for one that cannot be
    enforced."""
    grammar = response_grammar(request, model, prefix=prepared.prefix, max_tokens=prepared.params.max_tokens)
    if grammar is None:
        return prepared
    return replace(prepared, params=replace(prepared.params, grammar=grammar))


def step_params(prepared: Prepared, request: ResponseRequest) -> Callable[[int], SamplingParams]:
    """The sampling settings of each step of gpt-oss's agent loop: the first step's under
    the request's grammar (``prepared.params``), the later ones' under the grammar of
    :func:`~.call_rules.later_steps` (a forced call is forced once), compiled once here."""
    later_request = later_steps(request)
    if later_request is request:
        return lambda step: prepared.params
    unconstrained = replace(prepared, params=replace(prepared.params, grammar=None))
    later = constrained(unconstrained, later_request, ModelFormat()).params
    return lambda step: prepared.params if step == 0 else later


def _tools_json(request: ResponseRequest) -> list[dict[str, Any]]:
    """The request's tools as the template reads them (see :func:`~.tool_prompt.template_tools`)."""
    return template_tools(ToolIndex.of(request))
