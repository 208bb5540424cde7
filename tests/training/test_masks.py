"""Harmony / OCM training samples: the ids are the renderer's training render, and the
mask learns exactly what the model writes after ``<|start|>assistant`` — checked token by
token against the roles read back from the ids."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openchatml.core.encoding import load_encoding
from openchatml.core.errors import RenderError
from openchatml.core.messages import Conversation, Message, Role
from openchatml.core.render import CoTPolicy, Profile, RenderConfig, render_conversation_for_training
from openchatml.core.tokens import CALL_ID, CHANNEL_ID, CONSTRAIN_ID, END_ID, MESSAGE_ID, RETURN_ID, START_ID
from openchatml.training.masks import MaskedSample, harmony_sample, sample_messages
from strategies import conversations

ENCODING = load_encoding()
HEAD = [START_ID, *ENCODING.encode_ordinary("assistant")]
TERMINATORS = {END_ID, CALL_ID, RETURN_ID}
HEADER_ENDS = {CHANNEL_ID, MESSAGE_ID, CONSTRAIN_ID}

WEATHER = Conversation.from_messages(
    [
        Message.system(),
        Message.developer("Be brief."),
        Message.user("hi"),
        Message.assistant("The user greets.", channel="analysis"),
        Message.assistant("Hello!"),
        Message.user("Weather in Paris?"),
        Message.assistant("Call the tool.", channel="analysis"),
        Message.tool_call("functions.get_weather", '{"location": "Paris"}', call_id="c1"),
        Message.tool_result("functions.get_weather", '{"temp": 20}', call_id="c1"),
        Message.assistant("It is 20 degrees.", channel="commentary", intent="preamble"),
        Message.assistant("It is 20 degrees in Paris."),
    ]
)


def expected_mask(ids: list[int]) -> list[int]:
    """The mask read back from the ids alone: split at ``<|start|>``, read each message's
    author and channel, and learn an assistant message after ``<|start|>assistant`` — and
    the ``<|start|>assistant`` too where it follows an assistant message that ended in
    ``<|end|>`` (the model goes on writing there; a prompt writes it after anyone else)."""
    starts = [i for i, token in enumerate(ids) if token == START_ID]
    assert starts and starts[0] == 0
    mask: list[int] = []
    previous = ""
    for number, start in enumerate(starts):
        end = starts[number + 1] if number + 1 < len(starts) else len(ids)
        segment = ids[start:end]
        assert segment[-1] in TERMINATORS
        header_end = next(i for i, token in enumerate(segment) if token in HEADER_ENDS)
        author = ENCODING.decode(segment[1:header_end]).split(" ")[0].split(":")[0]
        if author != "assistant":
            mask += [0] * len(segment)
            previous = author
            continue
        assert segment[: len(HEAD)] == HEAD
        goes_on = previous == "assistant" and ids[start - 1] == END_ID and mask[-1] == 1
        learned = [int(goes_on)] * len(HEAD) + [1] * (len(segment) - len(HEAD))
        previous = author
        channel = ""
        if CHANNEL_ID in segment:
            at = segment.index(CHANNEL_ID) + 1
            stop = next(i for i in range(at, len(segment)) if segment[i] in HEADER_ENDS)
            channel = ENCODING.decode(segment[at:stop]).strip()
        if channel == "final" and segment[-1] == END_ID:
            learned[-1] = 0  # an earlier answer, ended as history ends it
        mask += learned
    return mask


def check(sample: MaskedSample, conversation: Conversation, profile: Profile) -> None:
    config = RenderConfig(profile=profile, cot=CoTPolicy.KEEP)
    assert list(sample.ids) == render_conversation_for_training(sample_messages(conversation), config)
    assert list(sample.mask) == expected_mask(list(sample.ids))


@pytest.mark.parametrize("profile", list(Profile))
def test_weather_turns_learn_only_the_assistant(profile: Profile) -> None:
    sample = harmony_sample(WEATHER, profile)
    check(sample, WEATHER, profile)
    learned = ENCODING.decode(sample.learned_ids)
    assert "hi" not in learned and "Weather in Paris" not in learned and '{"temp": 20}' not in learned
    assert "The user greets." not in ENCODING.decode(list(sample.ids))  # earlier reasoning dropped
    assert "<|channel|>analysis<|message|>Call the tool.<|end|>" in learned  # the trained turn's kept
    assert learned.endswith("<|channel|>final<|message|>It is 20 degrees in Paris.<|return|>")
    assert '{"location": "Paris"}<|call|>' in learned
    assert sample.ids.count(RETURN_ID) == 1 and sample.mask[-1] == 1


def test_placements_differ_only_in_the_header() -> None:
    harmony = ENCODING.decode(harmony_sample(WEATHER, Profile.HARMONY).learned_ids)
    ocm = ENCODING.decode(harmony_sample(WEATHER, Profile.OCM).learned_ids)
    assert " to=functions.get_weather<|channel|>commentary <|constrain|>json" in harmony
    assert " to=functions.get_weather call_id=c1<|channel|>commentary<|constrain|>json" in ocm
    assert " intent=preamble<|channel|>commentary" in ocm


def test_start_assistant_learns_only_after_the_models_own_end() -> None:
    sample = harmony_sample(WEATHER)
    ids, mask = list(sample.ids), list(sample.mask)
    opened = [at for at, token in enumerate(ids) if token == START_ID and ids[at : at + len(HEAD)] == HEAD]
    by_model = [at for at in opened if ids[at - 1] == END_ID and mask[at - 1] == 1]
    assert by_model  # the analysis before the call: the model opens the call itself
    for at in opened:
        assert mask[at : at + len(HEAD)] == [int(at in by_model)] * len(HEAD)
    for at in (i for i, token in enumerate(ids) if token == START_ID and i not in opened):
        assert mask[at] == 0


def test_the_earlier_answers_terminator_does_not_learn() -> None:
    sample = harmony_sample(WEATHER)
    ids, mask = list(sample.ids), list(sample.mask)
    hello_end = ENCODING.encode_ordinary("Hello!")
    at = next(i for i in range(len(ids)) if ids[i : i + len(hello_end)] == hello_end) + len(hello_end)
    assert ids[at] == END_ID and mask[at] == 0 and mask[at - 1] == 1


def test_history_cot_keep_keeps_earlier_reasoning() -> None:
    sample = harmony_sample(WEATHER, history_cot=CoTPolicy.KEEP)
    assert "The user greets." in ENCODING.decode(sample.learned_ids)
    assert list(sample.mask) == expected_mask(list(sample.ids))


def test_a_call_at_the_end_ends_in_call_and_learns() -> None:
    conversation = Conversation.from_messages(list(WEATHER)[:8])
    sample = harmony_sample(conversation)
    assert sample.ids[-1] == CALL_ID and sample.mask[-1] == 1
    assert RETURN_ID not in sample.ids
    check(sample, conversation, Profile.HARMONY)


def test_mask_length_must_match() -> None:
    with pytest.raises(ValueError):
        MaskedSample((1, 2), (1,))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(structured=True), st.sampled_from(list(Profile)))
def test_random_conversations_learn_exactly_the_assistant_spans(
    conversation: Conversation, profile: Profile
) -> None:
    try:
        sample = harmony_sample(conversation, profile)
    except RenderError:
        return
    check(sample, conversation, profile)
    assistants = sum(1 for m in sample_messages(conversation) if m.author.role is Role.ASSISTANT)
    assert (sample.learned > 0) == (assistants > 0)
