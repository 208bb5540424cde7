"""Sequences that decode together: one KV cache over left-padded rows.

The in-process engine batches continuously: a sequence is prefilled alone, joins the
:class:`PaddedBatch`, and from then on every decode step feeds each row its last sampled
id in one forward pass; a row leaves the moment it finishes or is cancelled. Rows are
left-padded to a common ``width``: a 2-d attention mask hides the padding, each row gets
its own position ids, and the cache's layers keep the shape a batch left-padded from the
start would have — full-attention layers hold ``width`` columns, sliding-window layers
the last ``min(width, window - 1)`` with ``cumulative_length == width`` — so the model's
own mask code sees an ordinary left-padded batch. When rows leave, columns that are
padding in every remaining row are dropped.

Only caches whose layers are all ``transformers``' ``DynamicLayer`` or
``DynamicSlidingWindowLayer`` can be joined this way (:func:`batchable`); the engine
decodes other models one sequence at a time. torch and transformers are imported by the
caller: this module takes the ``torch`` module as an argument.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

DEFAULT_BATCH_SIZE: Final = 16
"""Requests the in-process engine decodes together unless told otherwise."""


def batchable(cache: Any) -> bool:
    """Whether ``cache`` (a model's ``past_key_values`` after a prefill) is a
    ``DynamicCache`` of plain and sliding-window layers, which rows can join and leave."""
    from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

    layers = getattr(cache, "layers", None)
    if not layers:
        return False
    return all(type(layer) in (DynamicLayer, DynamicSlidingWindowLayer) for layer in layers)


class PaddedBatch:
    """The rows decoding together on ``device``: their shared cache, attention mask and
    positions.

    :meth:`join` adds a prefilled sequence, :meth:`inputs` gives the next forward pass's
    arguments for the ids each row feeds, :meth:`advance` records that pass, and
    :meth:`keep` drops rows. Row ``n`` is the ``n``-th joined of those still kept."""

    def __init__(self, torch: Any, device: Any) -> None:
        self.torch = torch
        self.device = device
        self.cache: Any = None
        self.mask: Any = None
        self.positions: list[int] = []
        self.width = 0

    def __len__(self) -> int:
        return len(self.positions)

    @property
    def padded_tokens(self) -> int:
        """Cache columns held, padding included: rows × width."""
        return len(self.positions) * self.width

    def join(self, cache: Any, length: int) -> None:
        """Add a row whose prefill over ``length`` ids left ``cache`` (a batch of one)."""
        torch = self.torch
        if self.cache is None:
            self.cache, self.width, self.positions = cache, length, [length]
            self.mask = torch.ones((1, length), dtype=torch.long, device=self.device)
            return
        width = max(self.width, length)
        for mine, theirs in zip(self.cache.layers, cache.layers, strict=True):
            keep = _kept_columns(mine, width)
            mine.keys = torch.cat([_fit(mine.keys, keep, torch), _fit(theirs.keys, keep, torch)])
            mine.values = torch.cat([_fit(mine.values, keep, torch), _fit(theirs.values, keep, torch)])
            if hasattr(mine, "cumulative_length"):
                mine.cumulative_length = width
        joined = torch.ones((1, length), dtype=torch.long, device=self.device)
        self.mask = torch.cat([_pad_left(self.mask, width, torch), _pad_left(joined, width, torch)])
        self.width = width
        self.positions.append(length)

    def inputs(self, ids: Sequence[int]) -> dict[str, Any]:
        """The keyword arguments of a forward pass that feeds ``ids`` (one per row). Rows
        without padding (all as long as the batch) need no attention mask: the model then
        takes its plain causal path."""
        torch = self.torch
        device = self.device
        rows = len(self.positions)
        inputs = {
            "input_ids": torch.tensor(list(ids), dtype=torch.long, device=device).view(rows, 1),
            "position_ids": torch.tensor(self.positions, dtype=torch.long, device=device).view(rows, 1),
            "past_key_values": self.cache,
        }
        if min(self.positions) < self.width:
            inputs["attention_mask"] = self._extended()
        return inputs

    def advance(self, inputs: dict[str, Any]) -> None:
        """Record the forward pass made with ``inputs``: every row is one id longer."""
        mask = inputs.get("attention_mask")
        self.mask = self._extended() if mask is None else mask
        self.width += 1
        self.positions = [position + 1 for position in self.positions]

    def keep(self, rows: Sequence[int]) -> None:
        """Keep only ``rows`` (in their order), then drop the columns that are padding in
        all of them; an empty ``rows`` empties the batch."""
        if not rows:
            self.cache, self.mask, self.positions, self.width = None, None, [], 0
            return
        torch = self.torch
        index = torch.tensor(list(rows), dtype=torch.long, device=self.device)
        for layer in self.cache.layers:
            layer.batch_select_indices(index)
        self.mask = self.mask[index]
        self.positions = [self.positions[row] for row in rows]
        self._trim(self.width - max(self.positions))

    def _extended(self) -> Any:
        """The attention mask with one more column, the ids being fed."""
        return self.torch.cat([self.mask, self.mask.new_ones((len(self.positions), 1))], dim=1)

    def _trim(self, columns: int) -> None:
        """Drop the first ``columns`` columns, padding in every row."""
        if columns <= 0:
            return
        width = self.width - columns
        for layer in self.cache.layers:
            keep = min(_kept_columns(layer, width), layer.keys.shape[-2])
            layer.keys = layer.keys[..., layer.keys.shape[-2] - keep :, :]
            layer.values = layer.values[..., layer.values.shape[-2] - keep :, :]
            if hasattr(layer, "cumulative_length"):
                layer.cumulative_length = width
        self.mask = self.mask[:, columns:]
        self.width = width


def _kept_columns(layer: Any, width: int) -> int:
    """How many columns ``layer`` holds for rows ``width`` long: all of them, or the last
    ``window - 1`` of a sliding-window layer."""
    window = getattr(layer, "sliding_window", None)
    return width if window is None else min(width, window - 1)


def _fit(states: Any, columns: int, torch: Any) -> Any:
    """``states`` (rows × heads × columns × dim) with exactly ``columns`` columns: the last
    ones, or zeros on the left."""
    have = states.shape[-2]
    if have >= columns:
        return states[..., have - columns :, :]
    pad = states.new_zeros((*states.shape[:-2], columns - have, states.shape[-1]))
    return torch.cat([pad, states], dim=-2)


def _pad_left(mask: Any, width: int, torch: Any) -> Any:
    """``mask`` (rows × columns) with zero columns on the left up to ``width``."""
    missing = width - mask.shape[1]
    if missing <= 0:
        return mask
    return torch.cat([mask.new_zeros((mask.shape[0], missing)), mask], dim=1)
