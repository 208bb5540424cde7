"""Differential analysis of a chat template: render it with controlled variations, diff
the renders, and read a :class:`~..format.TemplateFormat` off them.

Theory of operation. Every probe (:mod:`.probes`) is a short conversation (a user
message, then the assistant message under study) rendered through the template; only the
text after the user message (its *tail*) is looked at. Each part of the format is the
text the template writes around the probes' needles, and diffs between probes
(:mod:`.diff`) tell constant markers from the varying parts. A probe a template refuses
(``raise_exception``) is skipped.

0. *Thinking switch* (:mod:`.thinking`): the caller's variable whose values close the
   reasoning in the generation prompt (off) or do not (on). The generation prompts are
   rendered with it unset, on and off.
1. *Header* (:mod:`.header`): the common start of the tails (an answer, another answer,
   a tool call) is the end of the user's turn and the assistant's role header.
2. *Reasoning* (:mod:`.reasoning`): an answer with and without reasoning differ by the
   reasoning and its markers; a template that drops reasoning from history shows them in
   the generation prompt.
3. *Content* (:mod:`.content`): the markers around the answer that a tool-call message
   does not share.
4. *Tool calls* (:mod:`.tool_calls`): JSON calls (:mod:`.json_calls`) or a name then
   arguments (:mod:`.named_calls`, :mod:`.arguments`); what surrounds the calls splits
   into section markers, call markers and the separator (:mod:`.call_layout`).
5. *Ends* (:mod:`.content`, :mod:`.tool_calls`): what follows an answer up to the next
   message (``<|im_end|>``), and what follows the last tool call (``<|eom_id|>``).

Markers keep the template's exact text, whitespace included (``"<tool_call>\\n"``): a
grammar can write exactly that, and a parser should treat whitespace at a marker's edges
as optional. Whitespace between a marker and free text (reasoning, an answer) is left to
the text, except where the marker is plain words (functionary's ``">>>all\\n"``).
Template-specific facts no rendering shows are data in :mod:`.patches`, applied last.
"""

from __future__ import annotations

import functools
from dataclasses import replace

from ..environment import ChatTemplate
from ..errors import UnsupportedTemplateError
from ..format import ReasoningFormat, TemplateFormat, ToolCallFormat
from .content import end_marker, find_content, next_header_marker
from .diff import lcp_marker_safe
from .header import generation_prompts, role_header, trim_header
from .patches import apply_patches
from .preserved import HARMONY_TOKENS, preserved_tokens
from .probes import ANSWER, OTHER, ProbeRenderer, ToolCallProbes, assistant_message, render_tool_probes
from .reasoning import find_reasoning
from .thinking import find_switch
from .tool_calls import ToolCallAnalysis


class TemplateAnalysis:
    """One template's analysis (see the module's docstring)."""

    def __init__(self, template: ChatTemplate) -> None:
        self.template = template
        self.renderer = ProbeRenderer(template)

    def run(self) -> TemplateFormat:
        """The template's format, before patches; raises :class:`UnsupportedTemplateError`
        when not even a user + assistant conversation renders the answer."""
        name, renderer = self.template.name, self.renderer
        if not renderer.find_base():
            raise UnsupportedTemplateError(
                f"{name}: not even one user message renders: {renderer.last_error()}"
            )
        answer = renderer.tail(assistant_message(ANSWER))
        if answer is None or ANSWER not in answer:
            raise UnsupportedTemplateError(
                f"{name}: the assistant's content cannot be derived: a user + assistant conversation "
                f"does not render the answer ({renderer.last_error()})"
            )
        if "<|channel|>" in answer and "<|message|>" in answer and "<|start|>assistant" in answer:
            return TemplateFormat(
                name=name,
                harmony=True,
                generation_prompt=replace(generation_prompts(renderer, None), header="<|start|>assistant"),
                end_markers=("<|return|>", "<|call|>", "<|end|>"),
                preserved_tokens=HARMONY_TOKENS,
            )
        switch = find_switch(renderer)
        gens = generation_prompts(renderer, switch)
        calls = render_tool_probes(renderer)
        tails = [answer, renderer.tail(assistant_message(OTHER)) or "", *([calls.one] if calls else [])]
        raw_header = tails[0][: lcp_marker_safe([t for t in tails if t])]
        reasoning = find_reasoning(renderer, gens, calls, raw_header, switch)
        header = trim_header(raw_header, reasoning.fmt)
        tool_analysis, tools = self.tool_calls(calls, header, reasoning.fmt)
        content, end_text = find_content(
            renderer, answer, header, reasoning, tool_analysis.rest if tool_analysis else ""
        )
        tool_end = ""
        if tool_analysis is not None:
            section_end, tool_end = tool_analysis.split_rest(end_text)
            tools = replace(tools, section_end=section_end)
        ends = self.end_markers(end_text, tool_analysis, tools.section_end, tool_end)
        role = role_header(header, gens, ends)
        return TemplateFormat(
            name=name,
            reasoning=reasoning.fmt,
            content=content,
            tools=tools,
            generation_prompt=replace(gens, header=role),
            # what follows a message and is the next turn's header does not end a turn
            end_markers=tuple(e for e in ends if e not in role),
        )

    def tool_calls(
        self, calls: ToolCallProbes | None, header: str, reasoning: ReasoningFormat
    ) -> tuple[ToolCallAnalysis | None, ToolCallFormat]:
        """The analysis of the tool calls and their format; ``(None, ToolCallFormat())``
        when the template writes no call, or calls that cannot be read (none offered)."""
        if calls is None:
            return None, ToolCallFormat()
        tool_analysis = ToolCallAnalysis(self.template.name, calls, header, reasoning)
        try:
            return tool_analysis, tool_analysis.run()
        except UnsupportedTemplateError:
            return None, ToolCallFormat()

    def end_markers(
        self, answer_end: str, tool_analysis: ToolCallAnalysis | None, section_end: str, tool_end: str
    ) -> list[str]:
        """The markers that end a turn of an answer (from ``answer_end``, what follows an
        answer) and of tool calls (from ``tool_end``, what follows the calls' section); a
        turn without an end marker of its own ends where the next message's header begins
        (``<|user|>`` after an answer, ``<|observation|>`` after calls)."""
        ends: list[str] = []
        answer_marker = end_marker(answer_end) or next_header_marker(self.renderer)
        tools_marker = ""
        if tool_analysis is not None:
            tools_marker = end_marker(tool_end) or tool_analysis.next_header_marker(section_end)
        for marker in (answer_marker, tools_marker):
            if marker and marker not in ends:
                ends.append(marker)
        return ends


def analyze(template: ChatTemplate) -> TemplateFormat:
    """The :class:`TemplateFormat` of ``template``, derived by rendering variations and
    diffing them, with the data patches of :mod:`.patches` applied.

    A template without tools gets ``ToolSyntax.NONE``, without reasoning
    ``ReasoningMode.NONE``. Raises :class:`UnsupportedTemplateError` only when not even
    the assistant's content can be derived (no user + assistant conversation renders).
    """
    fmt = apply_patches(TemplateAnalysis(template).run(), template.source)
    if fmt.harmony or fmt.preserved_tokens:
        return fmt
    return replace(fmt, preserved_tokens=preserved_tokens(fmt))


@functools.lru_cache(maxsize=64)
def _compiled(source: str, name: str) -> ChatTemplate:
    return ChatTemplate(source, name=name or "<template>")


def analyze_source(source: str, *, name: str = "") -> TemplateFormat:
    """:func:`analyze` for template text (compiled templates are cached by text)."""
    return analyze(_compiled(source, name))
