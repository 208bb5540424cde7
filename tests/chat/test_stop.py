"""StopCutter: an answer cut at the first stop sequence, the same however it is split."""

from __future__ import annotations

import itertools

from hypothesis import example, given
from hypothesis import strategies as st

from openchatml.chat.stop import StopCutter


def cut(pieces: list[str], stops: list[str]) -> tuple[str, bool, list[tuple[str, tuple[int, ...]]]]:
    """The text given out, whether it stopped, and the pieces (each piece's extra: its number)."""
    cutter: StopCutter[int] = StopCutter(stops)
    out: list[tuple[str, tuple[int, ...]]] = []
    for number, piece in enumerate(pieces):
        out += cutter.feed(piece, (number,))
    out += cutter.flush()
    return "".join(text for text, _ in out), cutter.stopped, out


def reference(text: str, stops: list[str]) -> tuple[str, bool]:
    """The text cut at the first place any stop sequence begins."""
    places = [at for at in (text.find(stop) for stop in stops) if at >= 0]
    return (text[: min(places)], True) if places else (text, False)


def splits(text: str) -> list[list[str]]:
    """``text`` whole, one character at a time, and cut at every pair of places."""
    out = [[text], list(text)]
    for a, b in itertools.combinations(range(1, len(text)), 2):
        out.append([text[:a], text[a:b], text[b:]])
    return out


def test_text_is_cut_before_the_first_stop_however_it_arrives() -> None:
    text = "The answer is 42.\n\nObservation: none END tail"
    stops = ["Observation:", "END"]
    for pieces in splits(text):
        given_text, stopped, _ = cut(pieces, stops)
        assert (given_text, stopped) == ("The answer is 42.\n\n", True), pieces


def test_a_possible_start_is_held_back_until_it_cannot_be_one() -> None:
    cutter: StopCutter[int] = StopCutter(["END"])
    assert cutter.feed("Hello E", (0,)) == [("Hello ", (0,))]
    assert cutter.feed("N", (1,)) == []
    assert cutter.feed("X", (2,)) == [("E", ()), ("N", (1,)), ("X", (2,))]
    assert cutter.feed("EN", (3,)) == []
    assert cutter.flush() == [("EN", (3,))]
    assert not cutter.stopped


def test_extras_go_with_the_first_text_of_their_piece_and_the_stop_pieces_are_dropped() -> None:
    _, stopped, out = cut(["ab", "cEN", "D", "more"], ["END"])
    assert stopped
    assert out == [("ab", (0,)), ("c", (1,))]
    assert cut(["abcEND"], ["END"])[2] == [("abc", (0,))]


def test_nothing_after_the_stop() -> None:
    cutter: StopCutter[int] = StopCutter(["x"])
    assert cutter.feed("ax", ()) == [("a", ())]
    assert cutter.stopped
    assert cutter.feed("more", ()) == []
    assert cutter.flush() == []


def test_without_stops_every_piece_passes_as_it_came() -> None:
    cutter: StopCutter[int] = StopCutter([])
    assert cutter.feed("END", (1,)) == [("END", (1,))]
    assert cutter.flush() == []


@given(
    st.text(alphabet="abE\nND", max_size=30),
    st.lists(st.text(alphabet="abEND\n", min_size=1, max_size=4), min_size=1, max_size=4),
    st.lists(st.integers(1, 29), max_size=5),
)
@example("DaD", ["a", "DaD"], [2])  # a longer stop began before a shorter one was seen whole
def test_any_split_gives_the_reference_cut(text: str, stops: list[str], places: list[int]) -> None:
    bounds = sorted({p for p in places if p < len(text)})
    pieces = [text[a:b] for a, b in itertools.pairwise([0, *bounds, len(text)])]
    given_text, stopped, out = cut([p for p in pieces if p], stops)
    assert (given_text, stopped) == reference(text, stops)
    assert all(text for text, _ in out)
