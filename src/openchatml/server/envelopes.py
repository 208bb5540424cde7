"""The raw envelope of each response: per sampling step, the prompt ids the engine was
given and the ids it sampled, kept in memory for the playground.

Theory of operation. :class:`RecordingEngine` stands between the response runner and
the engine. The task that runs a response names it (:func:`record_response`, a context
variable: only that task and what it awaits see it); every ``generate`` call made inside
that task — the first step, each agent-loop step after a hosted call, a reasoning
summary — opens a :class:`Step` of that response's :class:`Envelope` in the
:class:`EnvelopeLog`: the prompt copied into an ``array`` (loops extend their prompt list
in place), the sampled ids appended chunk by chunk as the engine yields them. Nothing is
decoded while the response runs: :meth:`Envelope.to_json` decodes when the envelope is
asked for, with the model's tokenizer (Harmony: o200k_harmony, whose special tokens
decode as their text).

Bounds: the log keeps the ``max_responses`` most recently started responses (the least
recently used is dropped first); one response keeps at most ``max_ids`` ids over all its
steps; beyond that a step's ids are counted (``omitted``) but not kept.
"""

from __future__ import annotations

import codecs
import contextvars
from array import array
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..core.encoding import load_encoding
from ..engines.base import Chunk, Engine, ModelInfo, SamplingParams
from ..templates.model_tokenizer import ModelTokenizer

DEFAULT_MAX_RESPONSES: Final = 64
"""How many responses' envelopes the log keeps by default."""
DEFAULT_MAX_IDS: Final = 262_144
"""How many ids one response's envelope keeps by default (prompts and completions together)."""


@dataclass(frozen=True, slots=True)
class Recording:
    """The response whose task is running: its id and the owner of its key."""

    response_id: str
    owner: str


RECORDING: Final[contextvars.ContextVar[Recording | None]] = contextvars.ContextVar(
    "openchatml_envelope_recording", default=None
)
"""The response the current task samples for (``None``: nothing is recorded)."""


def record_response(response_id: str, owner: str) -> None:
    """Record every engine call the current task makes from now on as a step of
    ``response_id`` (owned by ``owner``). Call it first thing in the response's task."""
    RECORDING.set(Recording(response_id, owner))


@dataclass(slots=True)
class TokenRun:
    """Ids the envelope holds: the first ``ids`` kept, ``omitted`` more counted only."""

    ids: array[int] = field(default_factory=lambda: array("I"))
    omitted: int = 0


@dataclass(slots=True)
class Step:
    """One engine call: its ``prompt`` and the ``completion`` sampled after it."""

    prompt: TokenRun
    completion: TokenRun = field(default_factory=TokenRun)


class Envelope:
    """The steps of one response, holding at most ``max_ids`` ids in all."""

    def __init__(self, response_id: str, owner: str, max_ids: int) -> None:
        self.response_id = response_id
        self.owner = owner
        self.max_ids = max_ids
        self.kept = 0
        self.steps: list[Step] = []

    def open_step(self, prompt: Sequence[int]) -> Step:
        """A new step whose prompt is ``prompt`` (as much of it as the bound leaves room for)."""
        step = Step(self._run(prompt))
        self.steps.append(step)
        return step

    def add(self, step: Step, ids: Sequence[int]) -> None:
        """``ids`` sampled in ``step`` (kept while the bound leaves room)."""
        run = step.completion
        room = self.max_ids - self.kept
        if room >= len(ids) and not run.omitted:
            run.ids.extend(ids)
            self.kept += len(ids)
            return
        taken = max(0, room) if not run.omitted else 0
        run.ids.extend(ids[:taken])
        self.kept += taken
        run.omitted += len(ids) - taken

    def _run(self, ids: Sequence[int]) -> TokenRun:
        room = max(0, self.max_ids - self.kept)
        kept = array("I", ids[:room] if len(ids) > room else ids)
        self.kept += len(kept)
        return TokenRun(kept, len(ids) - len(kept))

    def to_json(self, tokenizer: ModelTokenizer | None) -> dict[str, Any]:
        """The envelope as JSON: per step its prompt and completion, each as ``ids``, the
        text each id adds (``pieces``: their concatenation is the decoded text; an id that
        ends inside a character adds ``""``, the one that completes it the character) and
        the positions of control tokens (``special``). ``tokenizer``: the model's
        (``None``: o200k_harmony)."""
        vocabulary = Vocabulary(tokenizer)
        steps = [
            {
                "index": index,
                "prompt": vocabulary.describe(step.prompt),
                "completion": vocabulary.describe(step.completion),
            }
            for index, step in enumerate(self.steps)
        ]
        return {
            "object": "openchatml.envelope",
            "id": self.response_id,
            "format": "harmony" if tokenizer is None else "chat_template",
            "max_ids": self.max_ids,
            "truncated": any(step.prompt.omitted or step.completion.omitted for step in self.steps),
            "steps": steps,
        }


class Vocabulary:
    """What an id's bytes are and whether it is a control token, for o200k_harmony
    (``tokenizer`` ``None``) or a model's own tokenizer."""

    def __init__(self, tokenizer: ModelTokenizer | None) -> None:
        self.tokenizer = tokenizer
        self.encoding = load_encoding() if tokenizer is None else None

    def token_bytes(self, token: int) -> bytes:
        """The bytes ``token`` stands for (a control token: its text); ``b""`` outside the vocabulary."""
        try:
            if self.encoding is not None:
                return self.encoding.token_bytes[token]
            assert self.tokenizer is not None
            return self.tokenizer.token_bytes(token)
        except (IndexError, KeyError, ValueError):
            return b""

    def is_special(self, token: int) -> bool:
        """Whether ``token`` is a control token."""
        if self.encoding is not None:
            return self.encoding.is_special_token(token)
        assert self.tokenizer is not None
        return self.tokenizer.is_marker(token)

    def describe(self, run: TokenRun) -> dict[str, Any]:
        """``run`` as ``{ids, pieces, special, omitted}`` (see :meth:`Envelope.to_json`)."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        ids = run.ids.tolist()
        pieces = [decoder.decode(self.token_bytes(token)) for token in ids]
        if pieces:
            pieces[-1] += decoder.decode(b"", final=True)
        special = [position for position, token in enumerate(ids) if self.is_special(token)]
        return {"ids": ids, "pieces": pieces, "special": special, "omitted": run.omitted}


class EnvelopeLog:
    """The envelopes of the ``max_responses`` most recent responses, each holding at
    most ``max_ids`` ids (see the module docstring)."""

    def __init__(self, max_responses: int = DEFAULT_MAX_RESPONSES, max_ids: int = DEFAULT_MAX_IDS) -> None:
        if max_responses < 1 or max_ids < 0:
            raise ValueError("an envelope log keeps at least one response and a non-negative number of ids")
        self.max_responses = max_responses
        self.max_ids = max_ids
        self._envelopes: OrderedDict[str, Envelope] = OrderedDict()

    def __len__(self) -> int:
        return len(self._envelopes)

    def envelope_for(self, recording: Recording) -> Envelope:
        """The envelope of the response ``recording`` names, made when new (the least
        recently used dropped beyond ``max_responses``)."""
        envelope = self._envelopes.get(recording.response_id)
        if envelope is None:
            envelope = Envelope(recording.response_id, recording.owner, self.max_ids)
            self._envelopes[recording.response_id] = envelope
            while len(self._envelopes) > self.max_responses:
                self._envelopes.popitem(last=False)
        else:
            self._envelopes.move_to_end(recording.response_id)
        return envelope

    def get(self, response_id: str, owner: str) -> Envelope | None:
        """The envelope of ``response_id`` if the log holds it and it is ``owner``'s."""
        envelope = self._envelopes.get(response_id)
        if envelope is None or envelope.owner != owner:
            return None
        self._envelopes.move_to_end(response_id)
        return envelope


class RecordingEngine:
    """``engine``, whose calls from a response's task (:func:`record_response`) are
    recorded in ``log``; any other call goes straight to ``engine``."""

    def __init__(self, engine: Engine, log: EnvelopeLog) -> None:
        self.engine = engine
        self.log = log

    @property
    def info(self) -> ModelInfo:
        """The wrapped engine's model."""
        return self.engine.info

    @property
    def tokenizer(self) -> ModelTokenizer | None:
        """The wrapped engine's tokenizer."""
        return self.engine.tokenizer

    @property
    def enforces_grammar(self) -> bool:
        """Whether the wrapped engine samples under the request's grammar."""
        return self.engine.enforces_grammar

    def generate(self, prompt: Sequence[int], params: SamplingParams) -> AsyncIterator[Chunk]:
        """The wrapped engine's chunks; in a recorded task, each one's ids also kept in a new step."""
        recording = RECORDING.get()
        chunks = self.engine.generate(prompt, params)
        if recording is None:
            return chunks
        envelope = self.log.envelope_for(recording)
        return _recorded(chunks, envelope, envelope.open_step(prompt))

    async def aclose(self) -> None:
        """Release the wrapped engine."""
        await self.engine.aclose()


async def _recorded(chunks: AsyncIterator[Chunk], envelope: Envelope, step: Step) -> AsyncIterator[Chunk]:
    """``chunks``, each one's ids added to ``step`` of ``envelope``; closing this closes ``chunks``."""
    try:
        async for chunk in chunks:
            envelope.add(step, chunk.ids)
            yield chunk
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()
