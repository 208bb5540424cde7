"""Citations 【cursor†Lx-Ly】 → Markdown links and url_citation annotations, whole or streamed."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from openchatml.tools.browser import BrowserState, CitationStream, CitedText, Page, SearchResult, cite
from openchatml.tools.browser.citations import MAX_CITATION_CHARS, citation_link
from openchatml.tools.browser.display import find_page, search_page


def make_state() -> BrowserState:
    """0: search results, 1: a web page, 2: find results in it, 3: a corpus page."""
    results = [
        SearchResult("https://example.com/a", "Example A", "alpha"),
        SearchResult("https://other.org/b", "Other B", "beta"),
    ]
    web = Page(
        url="https://example.com/a", title="Example A", text="\nURL: https://example.com/a\nalpha",
        cite_url="https://example.com/a", cite_title="Example A",
    )  # fmt: skip
    notes = Page(
        url="corpus://local/notes (v2).md", title="Notes [draft]", text="notes",
        cite_url="corpus://local/notes (v2).md", cite_title="Notes [draft]",
    )  # fmt: skip
    return BrowserState([search_page("q", results), web, find_page("alpha", web), notes])


def test_citations_become_links_with_exact_offsets() -> None:
    state = make_state()
    result = cite("Cats purr【1†L4-L5】. Find【2†L0】; list【0†L5】 notes【3†L1】 bad【9†L1】", state)
    a = "([example.com](https://example.com/a))"
    b = "([other.org](https://other.org/b))"
    c = "([Notes \\[draft\\]](corpus://local/notes%20%28v2%29.md))"
    assert result.text == f"Cats purr {a}. Find {a}; list {b} notes {c} bad【9†L1】"
    spans = [(x.url, x.title, result.text[x.start_index : x.end_index]) for x in result.annotations]
    assert spans == [
        ("https://example.com/a", "Example A", a),
        ("https://example.com/a", "Example A", a),
        ("https://other.org/b", "Other B", b),
        ("corpus://local/notes (v2).md", "Notes [draft]", c),
    ]
    assert result.annotations[0].start_index == len("Cats purr ")
    assert result.annotations[0].to_json() == {
        "type": "url_citation",
        "url": "https://example.com/a",
        "title": "Example A",
        "start_index": 10,
        "end_index": 10 + len(a),
    }


def test_no_space_is_added_after_whitespace_or_at_the_start() -> None:
    state = make_state()
    link = citation_link("https://example.com/a", "Example A")
    assert cite("【1†L2】 and 【1†L3】", state).text == f"{link} and {link}"
    assert cite("a\n【1†L2】", state).text == f"a\n{link}"


def test_search_page_citations_need_a_link_on_the_cited_lines() -> None:
    state = make_state()
    assert cite("x【0†L0-L3】", state).annotations == ()
    assert cite("x【0†L0-L4】", state).annotations[0].url == "https://example.com/a"
    assert cite("x【0†fact】", state).text == "x【0†fact】"


def test_text_without_citations_passes_through() -> None:
    state = make_state()
    for text in ("", "plain", "half 【1†L", "【】", "【x†L1】", "【1†】", "【1†L1"):
        assert cite(text, state) == CitedText(text, ())
        assert stream_in_pieces(text, [1] * len(text), state) == CitedText(text, ())


def test_a_stream_holds_back_only_what_may_be_a_citation() -> None:
    stream = CitationStream(make_state())
    assert stream.feed("Cats【1").text == "Cats"
    first = stream.feed("†L4-L")
    assert first == CitedText("", ())
    done = stream.feed("5】 purr【")
    assert done.text == " ([example.com](https://example.com/a)) purr"
    assert done.annotations[0].start_index == len("Cats ")
    assert stream.feed("x").text == "【x"
    long = stream.feed("【1†" + "y" * (MAX_CITATION_CHARS + 5))
    assert long.text.startswith("【1†y")
    assert stream.finish() == CitedText("", ())


def test_finish_releases_an_unfinished_citation() -> None:
    stream = CitationStream(make_state())
    assert stream.feed("end【1†L2").text == "end"
    assert stream.finish() == CitedText("【1†L2", ())


def stream_in_pieces(text: str, sizes: list[int], state: BrowserState) -> CitedText:
    stream = CitationStream(state)
    parts: list[CitedText] = []
    position = 0
    for size in sizes:
        parts.append(stream.feed(text[position : position + size]))
        position += size
    parts.append(stream.feed(text[position:]))
    parts.append(stream.finish())
    return CitedText(
        "".join(part.text for part in parts), tuple(note for part in parts for note in part.annotations)
    )


citations = st.builds(
    lambda cursor, first, last, extra: f"【{cursor}†L{first}" + (f"-L{last}" if last is not None else "")
    + (f"†{extra}" if extra else "") + "】",
    st.integers(0, 5),
    st.integers(0, 8),
    st.one_of(st.none(), st.integers(0, 8)),
    st.sampled_from(["", "example.com"]),
)  # fmt: skip
noise = st.text(alphabet="ab 1L-\n【】†", max_size=12)
texts = st.lists(st.one_of(noise, citations), max_size=12).map("".join)


@given(texts, st.lists(st.integers(0, 9), max_size=40))
def test_streaming_in_any_pieces_equals_the_whole(text: str, sizes: list[int]) -> None:
    state = make_state()
    whole = cite(text, state)
    assert stream_in_pieces(text, sizes, state) == whole
    for note in whole.annotations:
        assert whole.text[note.start_index : note.end_index] == citation_link(note.url, note.title)
    offsets = [note.start_index for note in whole.annotations]
    assert offsets == sorted(offsets)


@given(st.text(max_size=60), st.lists(st.integers(0, 5), max_size=30))
def test_any_text_streams_as_it_reads_whole(text: str, sizes: list[int]) -> None:
    state = make_state()
    assert stream_in_pieces(text, sizes, state) == cite(text, state)
