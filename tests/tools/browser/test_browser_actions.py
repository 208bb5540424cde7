"""Browser: search, open, find on the page stack; windows, cursors, errors, state JSON."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from openchatml.core.encoding import load_encoding
from openchatml.tools.browser import (
    BackendError,
    Browser,
    BrowserErrorKind,
    BrowserResult,
    BrowserState,
    CorpusBackend,
    Document,
    PageKind,
    SearchResult,
)
from openchatml.tools.browser.display import wrap_lines

CATS = "corpus://local/animals/cats.html"
DOGS = "corpus://local/animals/dogs.md"
VOLCANO = "corpus://local/notes/volcano.txt"


def run(browser: Browser, state: BrowserState, action: str, **args: Any) -> BrowserResult:
    return asyncio.run(browser.call(action, args, state))


def body_lines(result: BrowserResult) -> list[str]:
    return result.text.split("\n\n", 1)[1].split("\n")


def test_search_shows_a_results_page(browser: Browser) -> None:
    state = BrowserState()
    result = run(browser, state, "search", query="feline whiskers")
    assert result.ok and result.cursor == 0
    lines = result.text.split("\n")
    assert lines[0] == "[0] feline whiskers"
    assert re.fullmatch(r"\*\*viewing lines \[0 - \d+\] of \d+\*\*", lines[1])
    assert lines[2:7] == ["", "L0: ", "L1: URL: ", "L2: # Search Results", "L3: "]
    assert lines[7].startswith("L4:   * 【0†All About Cats†local】 ")
    page = state.page(0)
    assert page.kind is PageKind.SEARCH and page.links[0] == CATS


def test_open_a_result_by_id_then_follow_a_link(browser: Browser) -> None:
    state = BrowserState()
    run(browser, state, "search", query="feline whiskers")
    opened = run(browser, state, "open", id=0)
    assert opened.cursor == 1 and opened.url == CATS and opened.title == "All About Cats"
    assert opened.text.split("\n")[:4] == [
        f"[1] All About Cats ({CATS})",
        "**viewing lines [0 - 10] of 10**",
        "",
        "L0: ",
    ]
    assert body_lines(opened)[1:3] == [f"L1: URL: {CATS}", "L2: # Cats"]
    assert "L5: about 【0†our dogs】 or the 【1†encyclopedia article†en.wikipedia.org】." in opened.text
    followed = run(browser, state, "open", id=0)
    assert followed.url == DOGS and followed.cursor == 2
    back = run(browser, state, "open", cursor=1, id=0)  # link 0 of the cats page, again
    assert back.url == DOGS and back.cursor == 3


def test_open_by_url_and_scroll_with_loc_and_num_lines(browser: Browser) -> None:
    state = BrowserState()
    opened = run(browser, state, "open", id=VOLCANO, loc=10, num_lines=3)
    assert opened.cursor == 0
    assert opened.text.split("\n")[1] == "**viewing lines [10 - 12] of 303**"
    assert body_lines(opened) == [
        "L10: Line 7: magma rises and the volcano erupts with lava and ash.",
        "L11: Line 8: magma rises and the volcano erupts with lava and ash.",
        "L12: Line 9: magma rises and the volcano erupts with lava and ash.",
    ]
    scrolled = run(browser, state, "open", loc=300)
    assert scrolled.cursor == 1 and scrolled.url == VOLCANO
    assert scrolled.text.split("\n")[1] == "**viewing lines [300 - 303] of 303**"
    assert state.page(0) is state.page(1)


def test_a_window_without_num_lines_fits_in_view_tokens(corpus: CorpusBackend) -> None:
    encoding = load_encoding()
    for view_tokens in (40, 100, 256):
        browser = Browser(corpus, view_tokens=view_tokens)
        result = run(browser, BrowserState(), "open", id=VOLCANO)
        lines = body_lines(result)
        shown = "\n".join(lines)
        # every line but the last starts within the budget; one more line would not
        assert len(encoding.encode_ordinary("\n".join(lines[:-1]))) < view_tokens
        assert len(encoding.encode_ordinary(shown)) >= view_tokens - 1
        assert f"**viewing lines [0 - {len(lines) - 1}] of 303**" in result.text


def test_a_short_page_is_shown_whole(browser: Browser) -> None:
    result = run(browser, BrowserState(), "open", id=DOGS)
    assert "**viewing lines [0 - 6] of 6**" in result.text
    assert body_lines(result)[-1] == "L6: See also 【0†the cats page】 and 【1†volcanoes】."


def test_long_lines_are_wrapped_at_80_columns() -> None:
    lines = wrap_lines("word " * 40 + "\n\nshort")
    assert all(len(line) <= 80 for line in lines)
    assert lines[-2:] == ("", "short")


def test_find_lists_matches_and_opens_them(browser: Browser) -> None:
    state = BrowserState()
    run(browser, state, "open", id=VOLCANO)
    found = run(browser, state, "find", pattern="CALDERA collapsed")
    assert found.cursor == 1
    assert found.text.split("\n")[0] == (
        "[1] Find results for text: `caldera collapsed` in `volcano` "
        f"({VOLCANO}/find?pattern=caldera collapsed)"
    )
    assert body_lines(found)[:2] == [
        "L0: # 【0†match at L153】",
        "L1: Line 150: the Caldera collapsed after the eruption [a special (regex) char ",
    ]
    opened = run(browser, state, "open", id=0)
    assert opened.cursor == 2 and opened.url == VOLCANO
    assert body_lines(opened)[0].startswith("L149: ")


def test_find_treats_the_pattern_as_text_not_a_regex(browser: Browser) -> None:
    state = BrowserState()
    run(browser, state, "open", id=VOLCANO)
    found = run(browser, state, "find", pattern="[a special (regex")
    assert found.ok and "match at L153" in found.text
    nothing = run(browser, state, "find", pattern="(unbalanced[", cursor=0)
    assert nothing.ok
    assert body_lines(nothing) == ["L0: No `find` results for pattern: `(unbalanced[`"]
    assert state.page(2).url == f"{VOLCANO}/find?pattern=%28unbalanced%5B"


def test_find_reads_link_marks_as_their_text(browser: Browser) -> None:
    state = BrowserState()
    run(browser, state, "open", id=CATS)
    found = run(browser, state, "find", pattern="our dogs or")
    assert "match at L5" in found.text and "about our dogs or the encyclopedia article." in found.text


@pytest.mark.parametrize(
    ("action", "args", "kind"),
    [
        ("open", {"cursor": 5}, BrowserErrorKind.UNKNOWN_CURSOR),
        ("open", {"cursor": -2}, BrowserErrorKind.UNKNOWN_CURSOR),
        ("find", {"pattern": "x", "cursor": 9}, BrowserErrorKind.UNKNOWN_CURSOR),
        ("open", {"id": 7}, BrowserErrorKind.UNKNOWN_LINK),
        ("open", {"loc": 500}, BrowserErrorKind.BAD_LOCATION),
        ("find", {"pattern": "cat"}, BrowserErrorKind.NOT_SEARCHABLE),
        ("find", {"pattern": ""}, BrowserErrorKind.BAD_ARGUMENTS),
        ("find", {}, BrowserErrorKind.BAD_ARGUMENTS),
        ("search", {}, BrowserErrorKind.BAD_ARGUMENTS),
        ("search", {"query": 3}, BrowserErrorKind.BAD_ARGUMENTS),
        ("search", {"query": "cats", "topn": "ten"}, BrowserErrorKind.BAD_ARGUMENTS),
        ("open", {"cursor": True}, BrowserErrorKind.BAD_ARGUMENTS),
        ("open", {"loc": 1.5}, BrowserErrorKind.BAD_ARGUMENTS),
        ("open", {"id": ""}, BrowserErrorKind.BAD_ARGUMENTS),
        ("open", {"view_source": "yes"}, BrowserErrorKind.BAD_ARGUMENTS),
        ("open", {"id": "corpus://local/nope.md"}, BrowserErrorKind.BACKEND),
        ("search", {"query": "zebra"}, BrowserErrorKind.NO_RESULTS),
        ("search", {"query": "!!"}, BrowserErrorKind.BACKEND),
        ("navigate", {}, BrowserErrorKind.UNKNOWN_ACTION),
    ],
)
def test_bad_calls_are_typed_errors_that_push_nothing(
    browser: Browser, action: str, args: dict[str, Any], kind: BrowserErrorKind
) -> None:
    state = BrowserState()
    run(browser, state, "search", query="cats")
    result = asyncio.run(browser.call(action, args, state))
    assert result.error is kind and not result.ok
    assert result.text and result.cursor == -1
    assert state.current_cursor == 0


def test_error_messages_are_the_ones_the_model_was_trained_on(browser: Browser) -> None:
    state = BrowserState()
    assert run(browser, state, "open").text == "No pages to access!"
    run(browser, state, "search", query="cats")
    assert run(browser, state, "open", cursor=3).text == (
        "Cursor `3` is out of range. Available cursor indices: [0 - 0]."
    )
    assert run(browser, state, "open", id=9).text == "Invalid link id `9`."
    assert run(browser, state, "open", loc=99).text.startswith("Invalid location parameter: `99`.")


def test_arguments_that_are_no_object_are_a_typed_error(browser: Browser) -> None:
    result = asyncio.run(browser.call("search", ["cats"], BrowserState()))  # type: ignore[arg-type]
    assert result.error is BrowserErrorKind.BAD_ARGUMENTS


def test_a_float_integer_argument_is_accepted(browser: Browser) -> None:
    state = BrowserState()
    run(browser, state, "search", query="cats", topn=1.0)
    assert len(state.page(0).links) == 1


class CountingBackend:
    """A backend that serves two documents and counts its fetches; it can also fail."""

    source = "test"

    def __init__(self) -> None:
        self.fetches: list[str] = []

    async def search(self, query: str, topn: int) -> list[SearchResult]:
        if query == "boom":
            raise RuntimeError("engine on fire")
        return [
            SearchResult("https://a.example/1", "One", "first"),
            SearchResult("https://b.example/2", "Two", ""),
        ]

    async def fetch(self, url: str) -> Document:
        self.fetches.append(url)
        if "b.example" in url:
            raise BackendError("status 404")
        return Document(url=url, title="One", text="hello\nworld", links=("https://b.example/2",))


def test_open_pages_are_not_fetched_again_unless_opened_by_url() -> None:
    backend = CountingBackend()
    browser = Browser(backend)
    state = BrowserState()
    run(browser, state, "search", query="q")
    run(browser, state, "open", id=0)
    run(browser, state, "open", cursor=0, id=0)
    assert backend.fetches == ["https://a.example/1"]
    run(browser, state, "open", id="https://a.example/1")
    assert backend.fetches == ["https://a.example/1"] * 2
    source = run(browser, state, "open", cursor=1, view_source=True)
    assert source.ok and backend.fetches[-1] == "view-source:https://a.example/1"


def test_backend_failures_become_backend_errors() -> None:
    browser = Browser(CountingBackend())
    state = BrowserState()
    failed = run(browser, state, "search", query="boom")
    assert failed.error is BrowserErrorKind.BACKEND
    assert failed.text == "Error during search for `boom`: engine on fire"
    run(browser, state, "search", query="q")
    missing = run(browser, state, "open", id=1)
    assert missing.error is BrowserErrorKind.BACKEND
    assert missing.text == "Error fetching URL `https://b.example/2`: status 404"
    assert state.current_cursor == 0


def test_search_pages_show_web_domains() -> None:
    result = run(Browser(CountingBackend()), BrowserState(), "search", query="q", topn=10)
    assert body_lines(result)[4:] == ["L4:   * 【0†One†a.example】 first", "L5:   * 【1†Two†b.example】"]


def test_state_round_trips_through_json(browser: Browser) -> None:
    state = BrowserState()
    run(browser, state, "search", query="feline")
    run(browser, state, "open", id=0)
    run(browser, state, "open", loc=5)
    run(browser, state, "find", pattern="claws")
    text = state.to_json()
    restored = BrowserState.from_json(text)
    assert restored.pages == state.pages
    assert restored.page(1) is restored.page(2)  # one page shown at two cursors, stored once
    assert text.count('"url": "corpus://local/animals/cats.html"') == 1
    assert restored.to_json() == text
    again = run(browser, restored, "open", cursor=1, id=0)
    assert again.cursor == 4 and again.url == DOGS


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        "{}",
        '{"pages": [], "stack": [0]}',
        '{"pages": [], "stack": [-1]}',
        '{"pages": [{}], "stack": []}',
    ],
)
def test_a_malformed_state_is_a_typed_error(text: str) -> None:
    from openchatml.tools.browser import BrowserError

    with pytest.raises(BrowserError) as caught:
        BrowserState.from_json(text)
    assert caught.value.kind is BrowserErrorKind.BAD_STATE


def test_namespace_names_the_backend_source(browser: Browser) -> None:
    namespace = browser.namespace
    assert namespace.name == "browser"
    assert [tool.name for tool in namespace.tools] == ["search", "open", "find"]
    assert namespace.description is not None
    assert namespace.description.endswith("\nsources=corpus:local (default: corpus:local)")
    assert "`【{cursor}†L{line_start}(-L{line_end})?】`" in namespace.description
