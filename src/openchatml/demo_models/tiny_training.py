"""Train the tiny gpt-oss on synthetic Harmony dialogues, on a CPU, in minutes.

The model is a gpt-oss (``GptOssForCausalLM``: attention sinks, alternating sliding and
full attention, yarn RoPE, a mixture of experts) small enough to learn in a few thousand
steps. Its vocabulary is o200k_harmony's 201,088 ids, but training over all of them would
spend most of the time on the output layer, so the model trains over a **compact
vocabulary**: the ids the corpus uses, plus one extra row that stands for every other id.
On output that row's logit counts ``N`` times (``+ log N``, ``N`` the number of unused ids),
which is exactly the softmax of a full model whose unused output rows all equal it; on
input it is the embedding an unseen id reads. :func:`expand_state` turns the compact
weights into the full model's, unused rows copied from the extra one — the same
distribution over all 201,088 ids, where every unused id is as unlikely as training made
it. The output layer is the embedding (tied), and a piece with a spaced twin trains as its
twin's row plus one shared vector (:class:`SpacedPairs`), so that a name is the same name
after a space and inside a JSON string.

:func:`train` runs the recipe (seeded, on ``threads`` threads: the same recipe gives the
same weights on the same machine) and returns a :class:`TrainedTiny`: compact weights,
config, and the numbers it measured — final training loss, held-out loss and next-token
accuracy over dialogues of another seed, and greedy tool calls for the held-out cities.
"""

from __future__ import annotations

import json
import math
import random
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..core.encoding import Encoding
from ..core.tokens import CALL_ID, FIRST_SPECIAL_ID, RETURN_ID, START_ID
from ..training.masks import MaskedSample, harmony_sample, trained_turn_start
from .dialogues import DialogueMaker, dialogues
from .places import held_out_cities

FULL_VOCAB: Final = 201088
"""o200k_harmony's ids: the full model's vocabulary."""


@dataclass(frozen=True, slots=True)
class TinyRecipe:
    """How the tiny model is trained (the defaults are the shipped model's)."""

    seed: int = 0
    dialogues: int = 40000
    steps: int = 3200
    batch: int = 16
    learning_rate: float = 2e-3
    warmup: int = 100
    hidden: int = 128
    layers: int = 3
    heads: int = 4
    kv_heads: int = 4
    experts: int = 4
    tied: bool = True
    """One matrix for the embedding and the output layer: copying a token (a city name
    into the call's arguments) is then reading back what attention moved."""
    threads: int = 2

    def config(self, vocab_size: int) -> dict[str, Any]:
        """The ``GptOssConfig`` keywords of the model over ``vocab_size`` ids."""
        return {
            "vocab_size": vocab_size,
            "hidden_size": self.hidden,
            "intermediate_size": 2 * self.hidden,
            "head_dim": self.hidden // self.heads,
            "num_hidden_layers": self.layers,
            "num_attention_heads": self.heads,
            "num_key_value_heads": self.kv_heads,
            "num_local_experts": self.experts,
            "num_experts_per_tok": 1,
            "sliding_window": 128,
            "tie_word_embeddings": self.tied,
        }


@dataclass(slots=True)
class TrainedTiny:
    """A trained compact model: its weights (the embedding and output rows of ``token_ids``,
    then the extra row), the recipe, and what training measured."""

    state: dict[str, Any]
    token_ids: list[int]
    recipe: TinyRecipe
    measures: dict[str, float] = field(default_factory=dict)


def corpus(encoding: Encoding, count: int, seed: int) -> list[MaskedSample]:
    """``count`` dialogues of ``seed`` as masked samples."""
    return [harmony_sample(d.conversation, encoding=encoding) for d in dialogues(encoding, count, seed)]


def compact_ids(samples: Sequence[MaskedSample], encoding: Encoding) -> list[int]:
    """The ids the samples use, sorted, with every id of a held-out city's two spellings
    checked to be among them (raises ``ValueError`` naming a city whose pieces are unseen)."""
    used = sorted({i for sample in samples for i in sample.ids})
    known = set(used)
    for city in held_out_cities(encoding):
        for text in (" " + city, city):
            if not set(encoding.encode_ordinary(text)) <= known:
                raise ValueError(f"the corpus never shows a piece of the held-out city {city!r}")
    return used


def _batches(rows: list[tuple[list[int], list[int]]], batch: int, rng: random.Random) -> Iterator[list[int]]:
    """Indices of ``rows`` in batches of similar length, in random order, forever."""
    while True:
        order = list(range(len(rows)))
        rng.shuffle(order)
        pool = batch * 50
        for start in range(0, len(order), pool):
            chunk = sorted(order[start : start + pool], key=lambda i: len(rows[i][0]))
            groups = [chunk[i : i + batch] for i in range(0, len(chunk), batch)]
            rng.shuffle(groups)
            yield from (group for group in groups if len(group) == batch)


def train(
    encoding: Encoding, recipe: TinyRecipe = TinyRecipe(), report: Callable[[str], None] = print
) -> TrainedTiny:
    """Train the tiny model by ``recipe``; ``report`` gets a line now and then. Needs torch
    and transformers."""
    import torch
    import transformers

    torch.set_num_threads(recipe.threads)
    torch.manual_seed(recipe.seed)
    deterministic = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)  # the experts' index_add sums in a fixed order
    try:
        return _train(encoding, recipe, report, torch, transformers)
    finally:
        torch.use_deterministic_algorithms(deterministic)


def _train(
    encoding: Encoding, recipe: TinyRecipe, report: Callable[[str], None], torch: Any, transformers: Any
) -> TrainedTiny:
    """:func:`train`'s body, with torch set up."""
    started = time.monotonic()
    samples = corpus(encoding, recipe.dialogues, recipe.seed)
    token_ids = compact_ids(samples, encoding)
    other = len(token_ids)
    index = {token: n for n, token in enumerate(token_ids)}
    rows = [([index[i] for i in s.ids], list(s.mask)) for s in samples]
    report(f"{len(samples)} dialogues, {sum(map(len, samples))} tokens, {other} ids used")

    config = transformers.GptOssConfig(**recipe.config(other + 1))
    model: Any = transformers.GptOssForCausalLM(config)
    for layer in model.model.layers:
        layer.mlp.experts.forward = SortedExperts(layer.mlp.experts, torch)
    pairs = SpacedPairs(token_ids, encoding, recipe.hidden, torch)
    parameters = [*model.parameters(), pairs.space]
    optimizer = torch.optim.AdamW(parameters, lr=recipe.learning_rate, weight_decay=0.0)
    offset = math.log(FULL_VOCAB - other)
    rng = random.Random(recipe.seed)
    batches = _batches(rows, recipe.batch, rng)
    losses: list[float] = []
    model.train()
    for step in range(recipe.steps):
        rate = _rate(step, recipe)
        for group in optimizer.param_groups:
            group["lr"] = rate
        ids, attention, targets = _tensors([rows[i] for i in next(batches)], other, torch)
        loss = _loss(model, pairs, ids, attention, targets, offset, torch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(parameters, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
        if step % 100 == 99 or step == recipe.steps - 1:
            line = f"step {step + 1}/{recipe.steps}  loss {sum(losses[-100:]) / len(losses[-100:]):.4f}"
            if step % 600 == 599:
                pairs.settle(model)
                model.eval()
                probe = held_out_cities(encoding)[:10]
                line += (
                    f"  held-out calls {sum(_calls_city(model, encoding, token_ids, c) for c in probe)}/10"
                )
                model.train()
            report(line)
    pairs.settle(model)
    model.eval()
    trained = TrainedTiny({k: v.detach().clone() for k, v in model.state_dict().items()}, token_ids, recipe)
    trained.measures["train_seconds"] = time.monotonic() - started
    trained.measures["final_loss"] = sum(losses[-100:]) / len(losses[-100:])
    trained.measures.update(evaluate(model, encoding, token_ids, recipe))
    return trained


class SpacedPairs:
    """Pieces with a spaced twin (``" Ang"`` and ``"Ang"``) trained as one row: the
    spaced one's row is its twin's plus a single learned ``space`` vector. A name written
    after a space in the question and inside a JSON string in the call is then the same
    name to the model, which only has to learn where the space goes."""

    def __init__(self, token_ids: Sequence[int], encoding: Encoding, size: int, torch: Any) -> None:
        rows = {encoding.decode_bytes([t]): n for n, t in enumerate(token_ids) if t < FIRST_SPECIAL_ID}
        pairs = [(n, rows[text[1:]]) for text, n in rows.items() if text[:1] == b" " and text[1:] in rows]
        self.torch = torch
        self.spaced = torch.tensor([spaced for spaced, _ in pairs], dtype=torch.long)
        self.bare = torch.tensor([bare for _, bare in pairs], dtype=torch.long)
        self.space = torch.nn.Parameter(torch.randn(size) * 0.02)

    def table(self, weight: Any) -> Any:
        """The embedding table: ``weight`` with every spaced row its twin's plus ``space``."""
        if not len(self.spaced):
            return weight
        return weight.index_copy(0, self.spaced, weight[self.bare] + self.space)

    def settle(self, model: Any) -> None:
        """Write the table into ``model``'s embedding (and so its tied output layer)."""
        weight = model.get_input_embeddings().weight
        with self.torch.no_grad():
            weight.copy_(self.table(weight))


class SortedExperts:
    """A one-expert-per-token mixture's forward for training, the same function as
    ``GptOssExperts.forward``: tokens are sorted by their expert, each expert runs on its
    contiguous run, and the outputs go back in one ``index_copy`` — no per-token scatter
    to sum in the backward pass, which makes a training step about a quarter faster on a
    CPU."""

    def __init__(self, experts: Any, torch: Any) -> None:
        self.experts = experts
        self.torch = torch

    def __call__(self, hidden: Any, router_indices: Any, routing_weights: Any) -> Any:
        """``hidden`` (tokens × width) through each token's expert, times its weight."""
        torch, experts = self.torch, self.experts
        chosen = router_indices[:, 0]
        order = torch.argsort(chosen, stable=True)
        counts = torch.bincount(chosen, minlength=experts.num_experts).tolist()
        parts = torch.split(hidden.index_select(0, order), counts)
        outputs = [
            experts._apply_gate(part @ experts.gate_up_proj[e] + experts.gate_up_proj_bias[e])
            @ experts.down_proj[e]
            + experts.down_proj_bias[e]
            for e, part in enumerate(parts)
            if counts[e]
        ]
        weighted = torch.cat(outputs) * routing_weights[:, 0].index_select(0, order)[:, None]
        return torch.zeros_like(hidden).index_copy(0, order, weighted)


def _rate(step: int, recipe: TinyRecipe) -> float:
    if step < recipe.warmup:
        return recipe.learning_rate * (step + 1) / recipe.warmup
    progress = (step - recipe.warmup) / max(1, recipe.steps - recipe.warmup)
    return recipe.learning_rate * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * progress)))


def _tensors(batch: Sequence[tuple[list[int], list[int]]], pad: int, torch: Any) -> tuple[Any, Any, Any]:
    """Right-padded ids, attention mask, and next-token targets (-100 where nothing learns)."""
    width = max(len(ids) for ids, _ in batch)
    ids = torch.full((len(batch), width), pad, dtype=torch.long)
    attention = torch.zeros((len(batch), width), dtype=torch.long)
    targets = torch.full((len(batch), width), -100, dtype=torch.long)
    for row, (tokens, mask) in enumerate(batch):
        size = len(tokens)
        ids[row, :size] = torch.tensor(tokens)
        attention[row, :size] = 1
        learned = torch.tensor(mask[1:], dtype=torch.bool)
        nexts = torch.tensor(tokens[1:])
        targets[row, : size - 1] = torch.where(learned, nexts, torch.full_like(nexts, -100))
    return ids, attention, targets


def _loss(
    model: Any, pairs: SpacedPairs, ids: Any, attention: Any, targets: Any, offset: float, torch: Any
) -> Any:
    """Cross-entropy of the learned positions, the extra (last) row counting for every
    unused id."""
    table = pairs.table(model.get_input_embeddings().weight)
    hidden = model.model(inputs_embeds=table[ids], attention_mask=attention).last_hidden_state
    where = targets != -100
    output = table if model.config.tie_word_embeddings else model.lm_head.weight
    logits = hidden[where] @ output.T
    logits[:, -1] += offset
    return torch.nn.functional.cross_entropy(logits, targets[where])


def evaluate(model: Any, encoding: Encoding, token_ids: list[int], recipe: TinyRecipe) -> dict[str, float]:
    """Held-out numbers: loss and next-token accuracy of the learned tokens of 500
    dialogues of another seed, and the share of held-out cities whose greedy answer to a
    weather question is the call ``{"location": city}``."""
    import torch

    other = len(token_ids)
    index = {token: n for n, token in enumerate(token_ids)}
    offset = math.log(FULL_VOCAB - other)
    held = corpus(encoding, 500, recipe.seed + 1)
    total = right = 0
    loss = 0.0
    with torch.no_grad():
        for start in range(0, len(held), 20):
            batch = [([index.get(i, other) for i in s.ids], list(s.mask)) for s in held[start : start + 20]]
            ids, attention, targets = _tensors(batch, other, torch)
            hidden = model.model(input_ids=ids, attention_mask=attention).last_hidden_state
            where = targets != -100
            logits = model.lm_head(hidden[where])
            logits[:, other] += offset
            loss += float(torch.nn.functional.cross_entropy(logits, targets[where], reduction="sum"))
            right += int((logits.argmax(-1) == targets[where]).sum())
            total += int(where.sum())
    calls = sum(_calls_city(model, encoding, token_ids, city) for city in held_out_cities(encoding))
    return {
        "heldout_loss": loss / total,
        "heldout_token_accuracy": right / total,
        "heldout_city_calls": calls / len(held_out_cities(encoding)),
    }


def _calls_city(model: Any, encoding: Encoding, token_ids: list[int], city: str) -> bool:
    """Whether greedy decoding answers a weather question about ``city`` with the call."""
    maker = DialogueMaker(encoding, seed=zlib.crc32(city.encode()), cities=[city])
    dialogue = maker.make("weather_call")
    messages = list(dialogue.conversation)
    prompt = messages[: trained_turn_start(messages)]
    ids = [*harmony_sample(prompt, encoding=encoding).ids, START_ID, *encoding.encode_ordinary("assistant")]
    written = greedy(model, token_ids, ids, stops={CALL_ID, RETURN_ID}, limit=80)
    if not written or written[-1] != CALL_ID:
        return False
    text = encoding.decode(written)
    if "functions.get_weather" not in text:
        return False
    body = text.split("<|message|>")[-1].removesuffix("<|call|>")
    try:
        return bool(json.loads(body) == {"location": city})
    except ValueError:
        return False


def greedy(model: Any, token_ids: list[int], prompt: list[int], *, stops: set[int], limit: int) -> list[int]:
    """The compact model's greedy continuation of ``prompt`` (full ids in and out; an id
    outside the compact vocabulary reads as the extra row). Where the extra row wins, the
    full model would write an unused id: the continuation ends there with ``-1``."""
    import torch

    other = len(token_ids)
    index = {token: n for n, token in enumerate(token_ids)}
    ids = torch.tensor([[index.get(i, other) for i in prompt]])
    out: list[int] = []
    cache = None
    with torch.no_grad():
        for _ in range(limit):
            result = model(input_ids=ids, past_key_values=cache, use_cache=True)
            cache = result.past_key_values
            logits = result.logits[0, -1]
            chosen = int(logits.argmax())
            if chosen == other:
                return [*out, -1]
            out.append(token_ids[chosen])
            if token_ids[chosen] in stops:
                break
            ids = torch.tensor([[chosen]])
    return out


def expand_state(state: dict[str, Any], token_ids: Sequence[int], torch: Any) -> dict[str, Any]:
    """The full model's weights from the compact ones: every embedding and output row of
    an unused id is the extra row (a tied output layer may be absent)."""
    full = dict(state)
    for name in ("model.embed_tokens.weight", "lm_head.weight"):
        if name not in state:  # a tied output layer, stored once
            continue
        compact = state[name]
        rows = compact[-1].repeat(FULL_VOCAB, 1)
        rows[torch.tensor(list(token_ids))] = compact[:-1]
        full[name] = rows
    return full
