"""The content markers and the ends of a turn.

The markers around an answer that a tool-call message does not share wrap the content;
what follows an answer up to the next message (``<|im_end|>``) ends its turn. A turn
without an end marker of its own ends where the next message's header begins."""

from __future__ import annotations

from ..format import ContentFormat, ContentMode
from .diff import MARKER, first_marker, lcp_marker_safe, lcs_marker_safe, markers
from .probes import ANSWER, USER, USER2, ProbeRenderer, assistant_message, user_message
from .reasoning import ReasoningMarkers


def find_content(
    renderer: ProbeRenderer, answer: str, header: str, reasoning: ReasoningMarkers, tool_rest: str
) -> tuple[ContentFormat, str]:
    """The content markers of the ``answer`` tail, and the text that ends an answer's turn
    (``tool_rest``: what follows the last tool call, ``""`` without calls)."""
    at = answer.find(ANSWER)
    pre, after = answer[:at], answer[at + len(ANSWER) :]
    before = pre[len(header) :] if pre.startswith(header) else ""
    after = bound_answer_end(renderer, after)
    fmt = reasoning.fmt
    if fmt.end and fmt.end in before:  # the empty reasoning block written before answers
        before = before[before.find(fmt.end) + len(fmt.end) :]
    elif fmt.start and before.strip() == fmt.start:
        before = ""
    start = before.strip()
    # the turn ends where a tool-call message ends too, else at a marker that also
    # ends the user's turn
    common = lcs_marker_safe([after.rstrip(), tool_rest.rstrip()]) if tool_rest else 0
    end_at = len(after.rstrip()) - common if common else first_turn_marker(renderer, after, header)
    end, ending = after[:end_at].strip(), after[end_at:]
    if start or end:
        start_text = before[before.find(start) :] if start else ""
        return ContentFormat(ContentMode.ALWAYS_WRAPPED, start_text, end), ending
    if reasoning.content_start:
        wrapped = ContentMode.WRAPPED_WITH_REASONING
        return ContentFormat(wrapped, reasoning.content_start, reasoning.content_end), ending
    return ContentFormat(), ending


def bound_answer_end(renderer: ProbeRenderer, after: str) -> str:
    """What follows an answer (``after``), cut where another message would follow instead
    (some templates append text after the last message; some end a turn only before the
    next one)."""
    following = renderer.tail(assistant_message(ANSWER), user_message(USER2))
    if following is None or ANSWER not in following:
        return after
    rest = following[following.find(ANSWER) + len(ANSWER) :]
    if after.strip():
        return after[: lcp_marker_safe([after, rest])]
    # written only before a next message: the markers up to the user's header
    rendered = renderer.render(renderer.base) or ""
    user_header = markers(rendered[: rendered.rfind(USER)][-120:])
    for m in MARKER.finditer(rest):
        if m.group() in user_header or USER2 in rest[: m.start()]:
            return rest[: m.start()] if USER2 not in rest[: m.start()] else ""
    return ""


def first_turn_marker(renderer: ProbeRenderer, after: str, header: str) -> int:
    """Where in ``after`` the first marker that also ends the user's turn begins (else the
    first marker; else the end)."""
    user_end = renderer.tail() or ""
    for m in MARKER.finditer(after):
        if m.group() in header or m.group() in user_end:
            return m.start()
    found = MARKER.search(after)
    return found.start() if found else len(after)


def next_header_marker(renderer: ProbeRenderer) -> str:
    """The first marker between an answer and the next user message (``""`` if none)."""
    following = renderer.tail(assistant_message(ANSWER), user_message(USER2))
    if following is None or ANSWER not in following or USER2 not in following:
        return ""
    return first_marker(following[following.find(ANSWER) + len(ANSWER) : following.rfind(USER2)])


def end_marker(text: str) -> str:
    """The marker ``text`` (what ends a turn) starts with, else its first word."""
    text = text.strip()
    m = MARKER.match(text)
    if m is not None:
        return m.group()
    return text.split()[0] if text else ""
