"""A conversation's page stack is bounded: past its cursors or its text, an action fails
with ``stack_full`` (the model reads why) and the stack is left as it was."""

from __future__ import annotations

import pytest

from openchatml.tools.browser import BrowserError, BrowserErrorKind, BrowserState, Page
from openchatml.tools.browser.state import MAX_PAGES, MAX_STACK_CHARS


def test_the_stack_holds_at_most_max_pages_cursors() -> None:
    state = BrowserState()
    page = Page(url="corpus://local/a.txt", title="a", text="a few words")
    for _ in range(MAX_PAGES):
        state.push(page)  # the same page shown again: one page's text
    with pytest.raises(BrowserError) as full:
        state.push(page)
    assert full.value.kind is BrowserErrorKind.STACK_FULL
    assert len(state.pages) == MAX_PAGES


def test_the_stack_holds_at_most_max_stack_chars_of_text() -> None:
    state = BrowserState()
    half = "x" * (MAX_STACK_CHARS // 2)
    state.push(Page(url="u1", title="1", text=half))
    state.push(Page(url="u2", title="2", text=half))
    with pytest.raises(BrowserError) as full:
        state.push(Page(url="u3", title="3", text="one more"))
    assert full.value.kind is BrowserErrorKind.STACK_FULL
    state.push(state.pages[0])  # a page already held adds no text: scrolling still works
    assert len(state.pages) == 3
