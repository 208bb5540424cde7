"""Packing: no token lost or duplicated, positions restart at each sample, labels learn
exactly where the mask does (never a sample's first token, never padding), rows of
exactly ``max_length`` tokens, first fit decreasing; unpacked rows one per sample."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from openchatml.training.masks import MaskedSample
from openchatml.training.packing import IGNORE_INDEX, Overflow, Row, pack, unpacked

PAD = 0


@st.composite
def samples(draw: st.DrawFn) -> MaskedSample:
    size = draw(st.integers(1, 40))
    ids = draw(st.lists(st.integers(1, 999), min_size=size, max_size=size))
    mask = draw(st.lists(st.integers(0, 1), min_size=size, max_size=size))
    return MaskedSample(tuple(ids), tuple([0, *mask[1:]]))


def split(row: Row) -> list[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
    """The (ids, labels, positions) of each sample of ``row``."""
    out = []
    at = 0
    for length in row.seq_lengths:
        out.append(
            (
                row.input_ids[at : at + length],
                row.labels[at : at + length],
                row.position_ids[at : at + length],
            )
        )
        at += length
    return out


def expected_labels(sample: MaskedSample) -> tuple[int, ...]:
    labels = [i if m else IGNORE_INDEX for i, m in zip(sample.ids, sample.mask, strict=True)]
    return tuple([IGNORE_INDEX, *labels[1:]])


def cut(sample: MaskedSample, max_length: int) -> MaskedSample:
    return MaskedSample(sample.ids[:max_length], sample.mask[:max_length])


@settings(max_examples=150, deadline=None)
@given(st.lists(samples(), max_size=25), st.integers(1, 64), st.sampled_from(list(Overflow)))
def test_packing_keeps_every_token_once(
    given_samples: list[MaskedSample], max_length: int, overflow: Overflow
) -> None:
    rows, stats = pack(given_samples, max_length, PAD, overflow)
    kept = [
        cut(s, max_length) for s in given_samples if len(s) <= max_length or overflow is Overflow.TRUNCATE
    ]
    found = []
    for row in rows:
        assert (
            len(row.input_ids)
            == len(row.labels)
            == len(row.position_ids)
            == len(row.attention_mask)
            == max_length
        )
        real = sum(row.seq_lengths)
        assert 0 < real <= max_length
        assert row.attention_mask == (1,) * real + (0,) * (max_length - real)
        assert row.input_ids[real:] == (PAD,) * (max_length - real)
        assert row.labels[real:] == (IGNORE_INDEX,) * (max_length - real)
        assert row.position_ids[real:] == tuple(range(max_length - real))
        for ids, labels, positions in split(row):
            assert positions == tuple(range(len(ids)))
            found.append((ids, labels))
    assert sorted(found) == sorted((s.ids, expected_labels(s)) for s in kept)
    assert stats.samples == len(given_samples) and stats.rows == len(rows)
    too_long = sum(1 for s in given_samples if len(s) > max_length)
    assert (stats.truncated, stats.dropped) == (
        (too_long, 0) if overflow is Overflow.TRUNCATE else (0, too_long)
    )
    assert stats.tokens == sum(len(s) for s in kept)
    assert stats.padding == len(rows) * max_length - stats.tokens
    assert stats.learned == sum(1 for s in kept for label in expected_labels(s) if label != IGNORE_INDEX)


@settings(max_examples=100, deadline=None)
@given(st.lists(samples(), max_size=25), st.integers(1, 64))
def test_first_fit_decreasing_leaves_no_two_rows_that_would_share(
    given_samples: list[MaskedSample], max_length: int
) -> None:
    rows, _ = pack(given_samples, max_length, PAD)
    used = [sum(row.seq_lengths) for row in rows]
    for later in range(len(rows)):
        smallest = min(rows[later].seq_lengths)
        for earlier in range(later):
            assert used[earlier] + smallest > max_length  # first fit would have put it there


def test_first_fit_decreasing_packs_longest_first() -> None:
    sizes = [5, 3, 7, 2, 4, 1]
    given_samples = [MaskedSample(tuple(range(1, n + 1)), (0,) * n) for n in sizes]
    rows, stats = pack(given_samples, 8, PAD)
    assert [row.seq_lengths for row in rows] == [(7, 1), (5, 3), (4, 2)]
    assert stats.rows == 3 and stats.padding == 2


@settings(max_examples=80, deadline=None)
@given(
    st.lists(samples(), max_size=15),
    st.one_of(st.none(), st.integers(1, 50)),
    st.sampled_from(list(Overflow)),
)
def test_unpacked_rows_are_the_samples_in_order(
    given_samples: list[MaskedSample], max_length: int | None, overflow: Overflow
) -> None:
    rows, stats = unpacked(given_samples, max_length, overflow)
    kept = [
        s if max_length is None else cut(s, max_length)
        for s in given_samples
        if max_length is None or len(s) <= max_length or overflow is Overflow.TRUNCATE
    ]
    assert [row.input_ids for row in rows] == [s.ids for s in kept]
    assert [row.labels for row in rows] == [expected_labels(s) for s in kept]
    assert all(row.position_ids == tuple(range(len(row))) and set(row.attention_mask) <= {1} for row in rows)
    assert stats.padding == 0 and stats.rows == len(kept)
