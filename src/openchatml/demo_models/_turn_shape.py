"""The shape of a tiny chat model's assistant turn: hand-set transitions read from the
template's renderings, and the embedding and unembedding rows that give the model that shape
(see :mod:`openchatml.demo_models.tiny_chat`)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from .chat_tokenizer import TAG_MARKER
from .template_renders import ANSWER, TemplateRenders

_ROLE_LOGIT: Final = 25.0
"""The logit a hand-set transition gives its one next token."""
_TEXT_SPREAD: Final = 3.0
"""The standard deviation of word logits."""
_GREEDY_END: Final = 0.15
"""The share of word contexts whose greedy next token ends the block."""
_GREEDY_RUN: Final = 12
"""About how many words greedy decoding writes in a block."""
_CALL_BELOW_END: Final = 1.4
"""How much lower than the end marker an answer word puts a tool call (never greedy)."""
_BRANCH_BELOW_GREEDY: Final = 0.6
"""How far below the greedy pick a branch out of a context of words stays (the layers'
noise must not lift it above)."""
_CALL_AT_START: Final = 0.2
"""The chance sought for a bare call (no marker opens it) where the answer starts; capped
so that greedy decoding still answers."""


@dataclass(slots=True)
class TurnShape:
    """The hand-set transitions, read from the renderings.

    ``words[c]`` are the plain tokens of class ``c`` (0: reasoning, 1: answer), each of
    which goes on with words of its class; ``context_class[t]`` the class whose words
    follow ``t``, a token that is not a word (any other token goes on with answer words
    unless ``after`` fixes its next token); ``after[t]`` the one next token of ``t``, with
    its logit; ``branch[t]`` a token that ``t`` (which goes on with words) may go to
    instead, now and then but never greedily; ``class_next[c]`` the tokens that end a
    block of class ``c`` from any of its contexts, with their logits' offsets from the
    calibrated end level.
    """

    tokenizer: Any
    words: tuple[list[int], list[int]] = field(default_factory=lambda: ([], []))
    context_class: dict[int, int] = field(default_factory=dict)
    after: dict[int, tuple[int, float]] = field(default_factory=dict)
    branch: dict[int, int] = field(default_factory=dict)
    class_next: tuple[dict[int, float], dict[int, float]] = field(default_factory=lambda: ({}, {}))
    description: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(
        cls, tokenizer: Any, renders: TemplateRenders, markers: Sequence[str], end_marker: str
    ) -> TurnShape:
        """The shape of ``renders``' assistant turns in ``tokenizer``'s ids, ending with ``end_marker``."""
        ids = {m: int(tokenizer.convert_tokens_to_ids(m)) for m in markers}
        names = tokenizer.convert_ids_to_tokens
        encode = _encoder(tokenizer)
        end = ids[end_marker]
        start = encode(renders.prompt)[-1]
        shape = cls(tokenizer)
        desc = shape.description
        desc.update(start=names(start), end=end_marker)
        taken = {*ids.values(), start}  # tokens that are no words

        answer_entry = start
        think = _pair(markers, ("think", "reason"))
        if think is not None and (renders.answer is None or think[1] not in renders.answer):
            think = None
        if think is not None:
            open_id, close_id = ids[think[0]], ids[think[1]]
            desc["reasoning"] = list(think)
            shape.context_class[open_id] = 0
            shape.class_next[0][close_id] = 0.0
            after_close = close_id
            bridge = _bridge(renders, encode, think)
            if bridge is not None and bridge not in taken:
                shape.after[close_id] = (bridge, _ROLE_LOGIT)
                taken.add(bridge)
                after_close = bridge
                desc["bridge"] = names(bridge)
            shape.context_class[after_close] = 1
            answer_entry = after_close
            opened = _last_marker(renders.prompt, markers)
            if opened == think[0]:  # the generation prompt opens the reasoning
                shape.context_class.setdefault(start, 0)
            elif opened == think[1]:  # the generation prompt skips it
                answer_entry = after_close if start == close_id else start
            elif start not in shape.context_class and start not in shape.after:
                shape.after[start] = (open_id, _ROLE_LOGIT)
        shape.context_class.setdefault(answer_entry, 1)
        shape.class_next[1][end] = 0.0

        script = _call_script(renders, encode, think and (ids[think[0]], ids[think[1]]), end, shape.after)
        roles = {start, end, answer_entry, *shape.after, *shape.context_class}
        if script is not None and not set(script) & roles and len(set(script)) == len(script) <= 16:
            if script[0] in ids.values():  # a marker opens the call: it may follow answer words
                shape.class_next[1][script[0]] = -_CALL_BELOW_END
            else:  # a bare call: the whole turn
                shape.branch[answer_entry] = script[0]
            for token, following in zip(script, [*script[1:], end], strict=True):
                shape.after[token] = (following, _ROLE_LOGIT)
            taken |= set(script)
            desc["call"] = tokenizer.decode(script)

        plain = [i for i in range(len(tokenizer)) if i not in taken and _plain(tokenizer, i)]
        if think is None:
            shape.words[1].extend(plain)
        else:
            shape.words[0].extend(plain[0::2])
            shape.words[1].extend(plain[1::2])
        desc["words"] = [len(shape.words[0]), len(shape.words[1])]
        return shape

    def apply(self, embed: Any, unembed: Any) -> dict[str, Any]:
        """Set the rows of ``embed`` and ``unembed`` (in place, under ``no_grad``); return a
        description of the shape.

        Through two layers of small random weights the last hidden state stays close to
        the embedding of the last token, so its logits are about ``unembed @
        rmsnorm(embed[token])``. The first hidden dimensions are switches, one per token
        in ``after`` or ``branch``, on in that token's embedding (alone for a token of
        ``after``); the next two are the class switches, on in the embedding of the
        class's words and of every other token going on with them; the rest is N(0, 1)
        noise that, read by the words' random unembedding rows, spreads their logits. A
        word's unembedding row is very negative on the other class's switch; any other
        token's on both, unless it ends a block of that class.
        """
        import torch

        roles = [*self.after, *(t for t in self.branch if t not in self.after)]
        switch = (len(roles), len(roles) + 1)
        noise = embed.shape[1] - len(roles) - 2
        word_class = {t: c for c in (0, 1) for t in self.words[c]}
        classes: dict[int, int] = {}
        embed.normal_(0.0, 1.0)
        embed[:, : len(roles) + 2] = 0.0
        for token in range(embed.shape[0]):
            if token in self.after:
                embed[token] = 0.0
                continue
            classes[token] = word_class.get(token, self.context_class.get(token, 1))
            embed[token, switch[classes[token]]] = 4.0
        for k, token in enumerate(roles):
            embed[token, k] = 4.0
        normed = embed / embed.pow(2).mean(-1, keepdim=True).sqrt()

        unembed.normal_(0.0, _TEXT_SPREAD / noise**0.5)
        unembed[:, : len(roles) + 2] = 0.0
        text_on = [float(normed[self.words[c], switch[c]].mean()) if self.words[c] else 1.0 for c in (0, 1)]
        for token in range(unembed.shape[0]):
            if token in word_class:
                other = 1 - word_class[token]
                unembed[token, switch[other]] = -_ROLE_LOGIT / text_on[other]
            else:
                unembed[token, len(roles) :] = 0.0
                for c in (0, 1):
                    unembed[token, switch[c]] = -_ROLE_LOGIT / text_on[c]
        rows = [torch.tensor(self.words[c], dtype=torch.long) for c in (0, 1)]
        names = self.tokenizer.convert_ids_to_tokens
        described: dict[str, Any] = dict(self.description)
        ends: dict[str, float] = {}
        for c in (0, 1):
            contexts = [t for t, k in classes.items() if k == c]
            if not self.class_next[c] or not contexts or not self.words[c]:
                continue
            top = (normed[contexts] @ unembed[rows[c]].T).max(-1).values
            level = float(torch.quantile(top.float(), _GREEDY_END))
            for target, offset in self.class_next[c].items():
                unembed[target, switch[c]] = (level + offset) / text_on[c]
                ends[names(target)] = round(level + offset, 2)
        described["block_end_logits"] = ends
        described["greedy_words"] = self._greedy_entries(embed, normed, unembed, classes, rows, switch)
        for k, token in enumerate(roles):
            if token in self.after:
                target, logit = self.after[token]
            else:  # a branch out of a context that goes on with words: likely, never the greedy pick
                target = self.branch[token]
                row = (normed[token] @ unembed[rows[classes[token]]].T).float()
                odds = math.log(_CALL_AT_START / (1 - _CALL_AT_START))
                logit = min(float(torch.logsumexp(row, 0)) + odds, float(row.max()) - _BRANCH_BELOW_GREEDY)
            already = float(unembed[target] @ normed[token])  # what the class switches give it
            unembed[target, k] = (logit - already) / float(normed[token, k])
        return described

    def _greedy_entries(
        self,
        embed: Any,
        normed: Any,
        unembed: Any,
        classes: dict[int, int],
        rows: list[Any],
        switch: tuple[int, int],
    ) -> list[int]:
        """Give each token that opens a block of words (``<think>``, the bridge, a start that
        answers) the noise of a word whose greedy run ends its block after about
        :data:`_GREEDY_RUN` words, so that greedy decoding writes whole turns; return the
        runs' lengths, by class."""
        import torch

        runs = [0, 0]
        for c in (0, 1):
            entries = [t for t in self.context_class if classes.get(t) == c and t not in self.words[c]]
            if not entries or not self.words[c] or not self.class_next[c]:
                continue
            candidates = rows[c].tolist() + list(self.class_next[c])
            table = torch.tensor(candidates, dtype=torch.long)
            best = (normed[rows[c]] @ unembed[table].T).argmax(-1).tolist()
            step = {w: candidates[b] for w, b in zip(self.words[c], best, strict=True)}
            length: dict[int, int] = {}
            for word in self.words[c]:
                seen: list[int] = []
                token = word
                while token in step and token not in seen and len(seen) < 4 * _GREEDY_RUN:
                    seen.append(token)
                    token = step[token]
                if token in self.class_next[c]:
                    length[word] = len(seen)
            if not length:
                continue
            word = min(length, key=lambda w: (abs(length[w] - _GREEDY_RUN), w))
            runs[c] = length[word]
            noise = slice(switch[1] + 1, None)
            for token in entries:
                embed[token, noise] = embed[word, noise]
                normed[token] = embed[token] / embed[token].pow(2).mean().sqrt()
        return runs


def _encoder(tokenizer: Any) -> Any:
    def encode(text: str) -> list[int]:
        return list(tokenizer.encode(text, add_special_tokens=False))

    return encode


def _pair(markers: Sequence[str], names: Sequence[str]) -> tuple[str, str] | None:
    """The first marker whose text contains one of ``names`` and whose closing partner
    (``</x>``, ``[/X]``, ``…END…`` for ``…START…`` or ``…BEGIN…``) is among ``markers``."""
    for marker in markers:
        if any(name in marker.lower() for name in names):
            for closing in _closings(marker):
                if closing in markers:
                    return marker, closing
    return None


def _closings(marker: str) -> list[str]:
    found = []
    tag = TAG_MARKER.fullmatch(marker)
    if tag is not None and not tag.group(1):
        found.append(f"</{tag.group(2)}>")
    if marker.startswith("[") and not marker.startswith("[/"):
        found.append("[/" + marker[1:])
    for opening, closing in (("START", "END"), ("start", "end"), ("BEGIN", "END"), ("begin", "end")):
        if opening in marker:
            found.append(marker.replace(opening, closing))
    return found


def _bridge(renders: TemplateRenders, encode: Any, think: tuple[str, str] | None) -> int | None:
    """The one token the template writes between reasoning and answer (``\\n\\n``), if any."""
    if think is None or renders.answer is None or not renders.answer.startswith(renders.prompt):
        return None
    turn = renders.answer[len(renders.prompt) :]
    close = turn.find(think[1])
    reply = turn.find(ANSWER, close)
    if close < 0 or reply < 0:
        return None
    between = encode(turn[close + len(think[1]) : reply])
    return between[0] if len(between) == 1 else None


def _last_marker(text: str, markers: Sequence[str]) -> str | None:
    best: tuple[int, str] | None = None
    for marker in markers:
        at = text.rfind(marker)
        if at >= 0 and (best is None or at + len(marker) > best[0]):
            best = (at + len(marker), marker)
    return None if best is None or text[best[0] :].strip() else best[1]


def _call_script(
    renders: TemplateRenders,
    encode: Any,
    think: tuple[int, int] | None,
    end: int,
    after: Mapping[int, tuple[int, float]],
) -> list[int] | None:
    """The tokens of the rendered call turn after any reasoning block (and the token
    that follows its end), up to the end of the turn; ``None`` when there are none."""
    if renders.call is None or not renders.call.startswith(renders.prompt):
        return None
    turn = encode(renders.call[len(renders.prompt) :])
    if end not in turn:
        return None
    turn = turn[: turn.index(end)]
    if think is not None and think[1] in turn:
        turn = turn[turn.index(think[1]) + 1 :]
        bridge = after.get(think[1])
        if turn and bridge is not None and turn[0] == bridge[0]:
            turn = turn[1:]
    return turn or None


def turn_end(renders: TemplateRenders, markers: Sequence[str]) -> str | None:
    """The first marker the template writes after an assistant's answer: the end of its turn."""
    if renders.answer is None:
        return None
    at = renders.answer.find(ANSWER, len(renders.prompt))
    if at < 0:
        return None
    found = [(renders.answer.find(m, at), m) for m in markers]
    return min(((i, -len(m), m) for i, m in found if i >= 0), default=(0, 0, None))[2]


_UNPLAIN: Final = re.compile(r"[<>\[\]{}|\\`\"\x00-\x08\x0b-\x1f\x7f]")


def _plain(tokenizer: Any, token: int) -> bool:
    """Whether ``token`` is a whole-UTF-8 piece of plain text, fit to be a word of noise."""
    piece = tokenizer.convert_ids_to_tokens(token)
    if piece in tokenizer.all_special_tokens or token >= tokenizer.vocab_size:
        return False
    text = tokenizer.convert_tokens_to_string([piece])
    return bool(text.strip()) and "\ufffd" not in text and _UNPLAIN.search(text) is None
