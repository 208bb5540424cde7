"""The tokenizer of a tiny chat model: a byte-level BPE trained on built-in English text and
on the template's renderings, with the template's control markers as added tokens.

Its pre-tokenizer splits text into runs of non-space characters with the whitespace that
follows them (``"Hello, "``, ``"world\\n"``), a run of whitespace at the start of a segment
standing alone, so any text round-trips exactly through encode/decode. ``<|…|>``,
``<｜…｜>`` and ``[UPPER]`` markers are special tokens, ``<tag>`` ones ordinary added tokens
(as Qwen's ``<think>`` and ``<tool_call>``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from .families import ChatFamily

VOCAB_TARGET: Final = 3072
"""The BPE trainer's vocabulary budget (before the added markers)."""

_PRETOKEN: Final = r"\S+\s*"
_SPECIAL_MARKER: Final = re.compile(r"<[|｜][^|｜<>\s]{1,64}[|｜]>|\[/?[A-Z][A-Z_]{1,30}\]")
TAG_MARKER: Final = re.compile(r"<(/?)([A-Za-z_][\w:.\-]{0,40})>")
"""A ``<tag>`` or ``</tag>`` marker: the slash, and the name."""

_CORPUS: Final = """\
The morning was cold and clear, and the river ran fast under the old stone bridge.
A small boat waited by the shore while two friends argued about the best way to cook fish.
One of them said that a good meal needs only salt, fire and patience; the other laughed.
They walked into town, bought bread, cheese, apples and a bottle of cider, and sat down to eat.
People came and went through the square: a baker with flour on his hands, a teacher with a
pile of books, children running after a dog that had stolen somebody's glove.

How do you know what the weather will be tomorrow? You look at the sky, the wind and the
clouds, and you make a guess. Sometimes the guess is right. Sometimes it rains anyway.
In Paris it is often mild in spring, with rain in the afternoon and sun in the evening.
In the mountains the air is thin, the nights are cold and the stars are very bright.
The forecast for Monday says 18 degrees, light wind from the west, and a chance of showers.

Let me think about this step by step. First, we need to understand the question.
Then we can list what we know, what we do not know, and what we could find out.
If the answer depends on a number, we should compute it carefully: 12 times 7 is 84,
and 84 plus 16 is 100. If it depends on a fact, we should check a reliable source.
Finally, we write a short answer that is clear, correct and kind to the reader.

Good software is written for people first and for machines second. A function should do
one thing, have a name that says what it does, and fail with a clear message when its
input is wrong. Tests show that the code works today and keep it working tomorrow.
When a program reads a file, it should close it; when it opens a connection, it should
handle the case where the other side goes away. Small steps, each one checked, go far.

She opened the window and listened. Birds were singing in the garden, a car passed slowly,
and somewhere a radio played an old song about the sea. It was going to be a long day,
but a good one. There were letters to answer, a cake to bake for the evening, and a
friend to call who lived far away, on the other side of the world, in a city by the ocean.

Questions and answers. Can you help me plan a trip? Of course: where would you like to go,
and for how long? What is the capital of France? The capital of France is Paris.
Which is larger, the sun or the moon? The sun is much larger, though it looks the same size.
Why is the sky blue? Because air scatters blue light more than red light.
What time is it in Tokyo? That depends on where you are now; Tokyo is nine hours ahead of UTC.

A few words from other languages: café, naïve, résumé, über, señor, déjà vu, smörgåsbord,
日本語, 中文, 한국어, Ελληνικά, русский язык. Numbers: 0 1 2 3 4 5 6 7 8 9 10 42 100 2024 3.14.
Punctuation: commas, periods. Colons: semicolons; dashes - and quotes "like this" or 'this'.

The library opened at nine. Students carried laptops, notebooks and cups of coffee up the
wide staircase, and the librarian, an elderly man with round glasses, greeted each of them
by name. On the third floor there was a quiet room with tall windows facing the harbour,
where ships unloaded containers of grain, timber, machines and fruit from distant countries.
Every afternoon at four the bell of the cathedral rang, and pigeons rose over the rooftops.

To make bread, mix flour, water, salt and yeast; knead the dough for ten minutes until it
is smooth and elastic; cover it and let it rise for an hour in a warm place. Shape the loaf,
let it rise again, then bake it in a hot oven for about forty minutes. A loaf is done when
it sounds hollow as you tap the bottom. Let it cool before cutting, however tempting it is.

Weather report: temperatures between 14 and 22 degrees Celsius, humidity 65 percent,
pressure 1013 hectopascals, visibility good. Tomorrow, thunderstorms are likely in the
north and east, with strong gusts near the coast. The weekend should be dry and warmer.
Farmers welcome the rain after a long summer drought; tourists, perhaps, a little less.

Mathematics is the art of giving the same name to different things. A prime number has
exactly two divisors. The square root of 144 is 12, and the sum of the first hundred
positive integers is 5050. Probability measures uncertainty; statistics estimates it from
data. An algorithm is a finite sequence of instructions; its complexity tells how the time
it takes grows with the size of its input. Sorting a list of n items takes n log n steps.

Dear Anna, thank you for your kind letter and for the photographs of the lake. We miss you
already. The garden is full of tomatoes, beans and sunflowers, and grandfather has repaired
the fence at last. Next month we are travelling to Lisbon, Madrid and Barcelona by train;
I will send you postcards from every station. Write soon, and give our love to everybody.

History teaches patience. Empires rise slowly and fall quickly; inventions spread from one
valley to the next; ideas travel along rivers, roads and, later, telephone wires. Printing
changed how knowledge moved, electricity changed how cities lived at night, and networks
of computers changed how strangers talk to each other across oceans and time zones.

Instructions: answer briefly. If you are unsure, say so. If the user asks for a list,
give a numbered list. If the user asks a question that needs a search, call the search
function with a short query, wait for its result, and summarise what it returns. Never
invent a source. Keep names, dates and quantities exactly as they appear in the results.

Animals of the forest: deer, foxes, owls, hedgehogs, squirrels, woodpeckers, badgers and
wild boars. In winter some of them sleep, others wander far looking for food. Wolves hunt
in packs; bears prefer to be alone. Butterflies migrate thousands of kilometres, guided by
the sun, and salmon swim upstream to the very river where they hatched years before.
"""
"""Built-in English text the tokenizer is trained on, with the template's renderings."""


def template_markers(template: str) -> list[str]:
    """The control markers in ``template``'s text, in order of first appearance: every
    ``<|…|>`` / ``<｜…｜>`` marker, every ``[UPPER]`` / ``[/UPPER]`` marker, and every
    ``<tag>`` / ``</tag>`` literal whose name has no hyphen (``<function-name>`` is a
    placeholder in instructions, ``<tool_call>`` or ``<seed:bos>`` a marker)."""
    found: dict[str, int] = {}
    for match in _SPECIAL_MARKER.finditer(template):
        found.setdefault(match.group(), match.start())
    for match in TAG_MARKER.finditer(template):
        if "-" not in match.group(2):
            found.setdefault(match.group(), match.start())
    return sorted(found, key=lambda text: found[text])


def _is_special(marker: str) -> bool:
    return TAG_MARKER.fullmatch(marker) is None


def _pieces(tokenizer: Any) -> None:
    """Give ``tokenizer`` its pre-tokenizer (runs of non-space with their trailing spaces) and decoder."""
    from tokenizers import Regex, decoders, pre_tokenizers

    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_PRETOKEN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()


def _add_markers(tokenizer: Any, markers: Sequence[str]) -> None:
    from tokenizers import AddedToken

    for marker in markers:
        token = AddedToken(marker, special=_is_special(marker), normalized=False)
        if token.special:
            tokenizer.add_special_tokens([token])
        else:
            tokenizer.add_tokens([token])


def bare_tokenizer(markers: Sequence[str]) -> Any:
    """An untrained byte-level tokenizer with the markers: enough to render the template."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    alphabet = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    tokenizer = Tokenizer(models.BPE(vocab=alphabet, merges=[]))
    _pieces(tokenizer)
    _add_markers(tokenizer, markers)
    return tokenizer


def train_tokenizer(markers: Sequence[str], texts: Sequence[str]) -> Any:
    """The byte-level BPE trained on :data:`_CORPUS` and ``texts``, with the markers added."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    _pieces(tokenizer)
    split = re.compile("|".join(re.escape(m) for m in sorted(markers, key=len, reverse=True)))
    segments = [part for text in [_CORPUS, *texts] for part in split.split(text) if part]
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_TARGET,
        min_frequency=1,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(segments, trainer)
    _add_markers(tokenizer, markers)
    return tokenizer


def wrap_tokenizer(tokenizer: Any, chat_template: str, spec: ChatFamily, context_length: int) -> Any:
    """``tokenizer`` as a ``PreTrainedTokenizerFast`` with the family's named tokens, the template
    and ``context_length`` as its ``model_max_length``."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    if spec.bos_token is not None:
        bos = (spec.bos_token, tokenizer.token_to_id(spec.bos_token))
        tokenizer.post_processor = processors.TemplateProcessing(
            single=f"{bos[0]} $A", pair=f"{bos[0]} $A {bos[0]} $B", special_tokens=[bos]
        )
    wrapped = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tokenizer,
        bos_token=spec.bos_token,
        eos_token=spec.eos_token,
        pad_token=spec.pad_token,
        model_max_length=context_length,
        clean_up_tokenization_spaces=False,
    )
    wrapped.chat_template = chat_template
    return wrapped


def save_tokenizer(
    tokenizer: Any, folder: Path, chat_template: str, spec: ChatFamily, context_length: int
) -> None:
    """Write ``tokenizer.json`` and a ``tokenizer_config.json`` that every ``transformers``
    (4.x and 5.x) and vLLM read, with the chat template inline and in ``chat_template.jinja``
    and ``context_length`` as its ``model_max_length``."""
    tokenizer.backend_tokenizer.save(str(folder / "tokenizer.json"))
    named = {
        name: value
        for name, value in (
            ("bos_token", spec.bos_token),
            ("eos_token", spec.eos_token),
            ("pad_token", spec.pad_token),
        )
        if value is not None
    }
    added = {
        str(i): {
            "content": token.content,
            "lstrip": token.lstrip,
            "normalized": token.normalized,
            "rstrip": token.rstrip,
            "single_word": token.single_word,
            "special": token.special,
        }
        for i, token in sorted(tokenizer.added_tokens_decoder.items())
    }
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": spec.bos_token,
        "eos_token": spec.eos_token,
        "pad_token": spec.pad_token,
        "add_bos_token": spec.bos_token is not None,
        "model_max_length": context_length,
        "clean_up_tokenization_spaces": False,
        "model_input_names": ["input_ids", "attention_mask"],
        "added_tokens_decoder": added,
        "chat_template": chat_template,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    (folder / "special_tokens_map.json").write_text(json.dumps(named, indent=2, ensure_ascii=False) + "\n")
    (folder / "chat_template.jinja").write_text(chat_template)
