"""Harmony / OpenChatML 2.2 conversation → token ids + a loss mask (1 = learned).

The ids are the renderer's training render of the sample
(:meth:`~openchatml.core.render.Renderer.training_tokens`, every message kept, the
trained final ending in ``<|return|>``). The mask is computed per message from the
renderer's own per-message tokens: of an assistant message, everything the model writes
after the prompt ``<|start|>assistant`` learns — the rest of the header (name, ``to=``,
channel, ``<|constrain|>``), the body and the terminator (``<|return|>`` for the trained
final answer, ``<|call|>`` for a tool call, ``<|end|>`` for other messages). System,
developer, user and tool messages never learn. ``<|start|>assistant`` learns only where
the model writes it: after its own message ended in ``<|end|>`` (sampling stops at
``<|return|>`` and ``<|call|>`` only, so the model opens its next message itself); after
anyone else's message the prompt writes it.

An earlier ``final`` answer is rendered as history ends it, in ``<|end|>``, a token the
model never writes after a final answer; that one token does not learn.

Chain of thought: the sample keeps the reasoning of the trained turn (the messages after
the last system, developer or user message) and drops earlier turns' reasoning by
``history_cot`` (:class:`~openchatml.core.render.CoTPolicy`, ``DROP_FINISHED`` by default),
as the model will see its history when it samples.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..core.encoding import Encoding
from ..core.messages import Conversation, Message, Role
from ..core.render import CoTPolicy, Profile, RenderConfig, Renderer, select_messages
from ..core.tokens import END_ID, RETURN_ID, START_ID


@dataclass(frozen=True, slots=True)
class MaskedSample:
    """One training sample: ``ids`` and ``mask`` of the same length (1 = the loss learns
    the token)."""

    ids: tuple[int, ...]
    mask: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.ids) != len(self.mask):
            raise ValueError(f"{len(self.ids)} ids but {len(self.mask)} mask values")

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def learned(self) -> int:
        """How many tokens learn."""
        return sum(self.mask)

    @property
    def learned_ids(self) -> list[int]:
        """The ids that learn, in order."""
        return [i for i, m in zip(self.ids, self.mask, strict=True) if m]


def trained_turn_start(messages: Sequence[Message]) -> int:
    """Index of the first message of the last turn: the one after the last system,
    developer or user message (0 when there is none)."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].author.role in (Role.SYSTEM, Role.DEVELOPER, Role.USER):
            return index + 1
    return 0


def sample_messages(
    conversation: Conversation | Iterable[Message], history_cot: CoTPolicy = CoTPolicy.DROP_FINISHED
) -> list[Message]:
    """The messages a sample renders: the history less the reasoning ``history_cot``
    drops, then the trained turn whole."""
    messages = list(conversation)
    cut = trained_turn_start(messages)
    return [*select_messages(messages[:cut], history_cot), *messages[cut:]]


def harmony_sample(
    conversation: Conversation | Iterable[Message],
    profile: Profile = Profile.HARMONY,
    *,
    history_cot: CoTPolicy = CoTPolicy.DROP_FINISHED,
    encoding: Encoding | None = None,
) -> MaskedSample:
    """``conversation`` as a training sample under ``profile`` (see the module docstring).

    Raises :class:`~openchatml.core.errors.RenderError` where the renderer refuses a message.
    """
    messages = sample_messages(conversation, history_cot)
    renderer = Renderer(RenderConfig(profile=profile, cot=CoTPolicy.KEEP), encoding)
    has_tools = Conversation(tuple(messages)).has_function_tools
    prompt_head = [START_ID, *renderer.encoding.encode_ordinary(Role.ASSISTANT.value)]
    ids: list[int] = []
    mask: list[int] = []
    last = len(messages) - 1
    goes_on = False  # the previous message was the model's, ended by <|end|> it wrote
    for index, message in enumerate(messages):
        tokens = renderer.message_tokens(message, has_function_tools=has_tools)
        if message.author.role is not Role.ASSISTANT:
            ids += tokens
            mask += [0] * len(tokens)
            goes_on = False
            continue
        if tokens[: len(prompt_head)] != prompt_head:
            raise ValueError("an assistant header does not start with the prompt's <|start|>assistant")
        learned = [int(goes_on)] * len(prompt_head) + [1] * (len(tokens) - len(prompt_head))
        if message.channel == "final" and index == last:
            tokens[-1] = RETURN_ID
        elif message.channel == "final" and tokens[-1] == END_ID:
            learned[-1] = 0
        ids += tokens
        mask += learned
        goes_on = tokens[-1] == END_ID and learned[-1] == 1
    return MaskedSample(tuple(ids), tuple(mask))
