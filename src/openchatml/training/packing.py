"""Training samples → rows a trainer reads: ``input_ids``, ``labels``, ``position_ids``,
``attention_mask`` and ``seq_lengths``.

``labels`` are the ids where the sample's mask learns and ``-100`` (the ignore index of
PyTorch's cross-entropy and of every Hugging Face model) elsewhere: on the prompt, on
padding, and on the first token of each sample. Models shift labels themselves (the
logits at position ``t`` predict ``labels[t + 1]``), so the first token of a sample would
otherwise be predicted from the last token of the sample before it.

Packing (:func:`pack`) puts several samples in one row of ``max_length`` tokens, first
fit decreasing: the samples, longest first, each go into the first row with room. A
sample's ``position_ids`` restart at 0; padding (the tokenizer's pad id, ``attention_mask``
0) fills the rest of the row, its positions restarting at 0 too. A model whose attention
reads sequence boundaries from ``position_ids`` (transformers' flash-attention and SDPA
paths with ``DataCollatorWithFlattening``, TRL's ``padding_free`` packing) then never
attends across samples; ``seq_lengths`` gives the same boundaries for trainers that take
``cu_seqlens``. A model that reads only ``attention_mask`` would attend across samples: use
unpacked rows (:func:`unpacked`) for it.

A sample longer than ``max_length`` is cut to its first ``max_length`` tokens
(:attr:`Overflow.TRUNCATE`) or left out (:attr:`Overflow.DROP`); :class:`PackingStats`
counts both.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from .masks import MaskedSample

IGNORE_INDEX: Final = -100
"""The label of a token the loss skips."""


class Overflow(StrEnum):
    """What happens to a sample longer than a row."""

    TRUNCATE = "truncate"
    DROP = "drop"


@dataclass(frozen=True, slots=True)
class Row:
    """One training row; every sequence has the same length."""

    input_ids: tuple[int, ...]
    labels: tuple[int, ...]
    position_ids: tuple[int, ...]
    attention_mask: tuple[int, ...]
    seq_lengths: tuple[int, ...]
    """The length of each sample in the row, in order (padding not included)."""

    def __len__(self) -> int:
        return len(self.input_ids)


@dataclass(frozen=True, slots=True)
class PackingStats:
    """What became of the samples: how many went in, rows out, real tokens (padding
    apart), learned tokens, padding, and samples truncated or dropped."""

    samples: int = 0
    rows: int = 0
    tokens: int = 0
    learned: int = 0
    padding: int = 0
    truncated: int = 0
    dropped: int = 0


def fitted(
    samples: Iterable[MaskedSample], max_length: int | None, overflow: Overflow
) -> tuple[list[MaskedSample], int, int, int]:
    """The samples that fit ``max_length`` (``None``: all), cut or not by ``overflow``;
    with how many were given, truncated and dropped."""
    kept: list[MaskedSample] = []
    given = truncated = dropped = 0
    for sample in samples:
        given += 1
        if max_length is None or len(sample) <= max_length:
            kept.append(sample)
        elif overflow is Overflow.DROP:
            dropped += 1
        else:
            truncated += 1
            kept.append(MaskedSample(sample.ids[:max_length], sample.mask[:max_length]))
    return kept, given, truncated, dropped


def _row(samples: Sequence[MaskedSample], length: int | None, pad_id: int) -> Row:
    """The row of ``samples`` in order, padded with ``pad_id`` to ``length`` (``None``: not padded)."""
    ids: list[int] = []
    labels: list[int] = []
    positions: list[int] = []
    for sample in samples:
        ids += sample.ids
        learned = [i if m else IGNORE_INDEX for i, m in zip(sample.ids, sample.mask, strict=True)]
        if learned:
            learned[0] = IGNORE_INDEX
        labels += learned
        positions += range(len(sample))
    real = len(ids)
    padding = 0 if length is None else length - real
    ids += [pad_id] * padding
    labels += [IGNORE_INDEX] * padding
    positions += range(padding)
    attention = [1] * real + [0] * padding
    return Row(tuple(ids), tuple(labels), tuple(positions), tuple(attention), tuple(len(s) for s in samples))


class _FirstFit:
    """Rows of ``capacity`` tokens, and the first one with room for a size, in log time
    (a tournament tree of the rows' free room)."""

    def __init__(self, rows: int, capacity: int) -> None:
        self.size = 1
        while self.size < max(rows, 1):
            self.size *= 2
        self.free = [capacity] * (2 * self.size)
        self.used = 0

    def place(self, size: int) -> int:
        """The first row with ``size`` free tokens (one exists), its room taken."""
        node = 1
        while node < self.size:
            node = 2 * node if self.free[2 * node] >= size else 2 * node + 1
        row = node - self.size
        self.free[node] -= size
        node //= 2
        while node:
            self.free[node] = max(self.free[2 * node], self.free[2 * node + 1])
            node //= 2
        self.used = max(self.used, row + 1)
        return row


def pack(
    samples: Iterable[MaskedSample],
    max_length: int,
    pad_id: int,
    overflow: Overflow = Overflow.TRUNCATE,
) -> tuple[list[Row], PackingStats]:
    """``samples`` packed into rows of exactly ``max_length`` tokens, first fit decreasing
    (see the module docstring), and what became of them. Raises ``ValueError`` for a
    ``max_length`` below 1."""
    if max_length < 1:
        raise ValueError(f"max_length must be at least 1, not {max_length}")
    kept, given, truncated, dropped = fitted(samples, max_length, overflow)
    order = sorted(range(len(kept)), key=lambda index: -len(kept[index]))
    bins = _FirstFit(len(kept), max_length)
    members: list[list[MaskedSample]] = [[] for _ in kept]
    for index in order:
        members[bins.place(len(kept[index]))].append(kept[index])
    rows = [_row(group, max_length, pad_id) for group in members[: bins.used]]
    return rows, _stats(rows, given, truncated, dropped)


def unpacked(
    samples: Iterable[MaskedSample],
    max_length: int | None = None,
    overflow: Overflow = Overflow.TRUNCATE,
) -> tuple[list[Row], PackingStats]:
    """One row per sample, in order, not padded (a collator pads each batch), cut or left
    out past ``max_length`` as ``overflow`` says; and what became of them."""
    kept, given, truncated, dropped = fitted(samples, max_length, overflow)
    rows = [_row([sample], None, 0) for sample in kept]
    return rows, _stats(rows, given, truncated, dropped)


def _stats(rows: Sequence[Row], given: int, truncated: int, dropped: int) -> PackingStats:
    tokens = sum(sum(row.seq_lengths) for row in rows)
    return PackingStats(
        samples=given,
        rows=len(rows),
        tokens=tokens,
        learned=sum(sum(1 for label in row.labels if label != IGNORE_INDEX) for row in rows),
        padding=sum(len(row) for row in rows) - tokens,
        truncated=truncated,
        dropped=dropped,
    )
