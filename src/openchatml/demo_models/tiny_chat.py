"""Tiny random-weight chat models that carry a real (non-Harmony) chat template, for tests.

:func:`ensure_tiny_chat_model` builds one offline, in about a second, into
``$OPENCHATML_HOME/models/tiny-chat-<family>-<name>-<hash>``: a normal Hugging Face folder
(``config.json``, ``model.safetensors``, ``generation_config.json``, ``tokenizer.json``,
``tokenizer_config.json`` with the chat template, ``chat_template.jinja``) that
``AutoTokenizer``, ``AutoModelForCausalLM`` (transformers 4 or 5), vLLM and
:class:`~openchatml.engines.transformers.TransformersEngine` load like a real checkpoint of
its family (:data:`FAMILIES`: Qwen3 or Llama; 2 layers, hidden size 64).

The tokenizer is a byte-level BPE (about 2,000 ids) trained on a few KB of built-in
English text and on the template's own renderings of a small conversation, so any text
round-trips exactly through encode/decode. Its pre-tokenizer splits text into runs of
non-space characters with the whitespace that follows them (``"Hello, "``, ``"world\\n"``),
a run of whitespace at the start of a segment standing alone. The control markers are
added tokens, one id each: the family's own, those passed in ``special_tokens``, and those
found in the template text (:func:`template_markers`). ``<|…|>``, ``<｜…｜>`` and
``[UPPER]`` markers are special tokens, ``<tag>`` ones ordinary added tokens (as Qwen's
``<think>`` and ``<tool_call>``).

The weights are random (the same for the same inputs) except for a few hand-set embedding
and unembedding rows that give the model the shape of the template's assistant turn, read
from its renderings and described in ``openchatml-tiny-chat.json``:

- after the generation prompt it opens the reasoning block when the template has one
  (``<think>``/``</think>``, ``<|START_THINKING|>``/``<|END_THINKING|>``, ``[THINK]``/
  ``[/THINK]`` …; not when the prompt has already opened or closed it), writes words,
  closes it, then writes the token the template puts between reasoning and answer
  (``\\n\\n``);
- then answer words, ending the turn with the first marker the template writes after an
  answer (``<|im_end|>``, ``<|eot_id|>``), which is among the generation config's eos ids;
- now and then (about one turn in five when sampling, never greedily) a tool call instead:
  exactly the tokens the template renders for a call of :data:`CALL_NAME` with
  :data:`CALL_ARGUMENTS` (``<tool_call>\\n{"name": "lookup", "arguments": {"query":
  "tiny"}}\\n</tool_call>`` for Qwen3), then the end marker. A call that opens with a marker
  may follow answer words; a bare one (Llama 3.1's JSON) makes the whole turn (up to one
  turn in five). Templates whose call renders with repeated tokens get no call.

Words are drawn from a peaked random distribution over plain tokens (no brackets, braces,
quotes or backquotes), half of them for reasoning and half for answers. Each step ends a
block with a probability of about one in ten, so a block runs a few to a few dozen tokens;
greedy decoding writes about a dozen words of reasoning, about a dozen of answer, then the
end marker. The shape needs only the last token: two layers of small random weights leave
the last hidden state close to the embedding of the last token, as in
:mod:`openchatml.demo_models.tiny_random`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ..engines.base import EngineError
from .folders import install_folder, models_home

TINY_CHAT_PREFIX: Final = "tiny-chat"
"""Folder names under ``$OPENCHATML_HOME/models`` start with this."""

CONTEXT_LENGTH: Final = 4096
"""The models' ``max_position_embeddings``."""
VOCAB_TARGET: Final = 3072
"""The BPE trainer's vocabulary budget (before the added markers)."""

CALL_NAME: Final = "lookup"
"""The function the tiny model calls when it writes a tool call."""
CALL_ARGUMENTS: Final[Mapping[str, Any]] = {"query": "tiny"}
"""The arguments of that call."""

_RECIPE: Final = 2
_STAMP: Final = "openchatml-tiny-chat.json"
_INSTALL_HINT: Final = (
    "the tiny chat model needs torch and transformers: pip install 'openchatml[transformers]'"
)

_PRETOKEN: Final = r"\S+\s*"
_SPECIAL_MARKER: Final = re.compile(r"<[|｜][^|｜<>\s]{1,64}[|｜]>|\[/?[A-Z][A-Z_]{1,30}\]")
_TAG: Final = re.compile(r"<(/?)([A-Za-z_][\w:.\-]{0,40})>")


@dataclass(frozen=True, slots=True)
class ChatFamily:
    """What a model family fixes: its architecture and the special tokens of its tokenizers."""

    config_class: str
    """The ``transformers`` config class (``Qwen3Config``)."""
    model_class: str
    """The ``transformers`` causal-LM class (``Qwen3ForCausalLM``)."""
    tokens: tuple[str, ...]
    """Special tokens every tokenizer of the family carries, whether or not the template names them."""
    eos_token: str
    """The token that ends an assistant turn: the tokenizer's ``eos_token``."""
    pad_token: str
    """The tokenizer's ``pad_token``."""
    stop_tokens: tuple[str, ...]
    """The generation config's ``eos_token_id`` list, in order."""
    bos_token: str | None = None
    """The tokenizer's ``bos_token``, prepended by its post-processor; ``None``: no BOS."""
    rope_theta: float = 10000.0
    """The RoPE base of the family's released configs."""


FAMILIES: Final[Mapping[str, ChatFamily]] = {
    "qwen3": ChatFamily(
        config_class="Qwen3Config",
        model_class="Qwen3ForCausalLM",
        tokens=("<|endoftext|>", "<|im_start|>", "<|im_end|>"),
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        stop_tokens=("<|im_end|>", "<|endoftext|>"),
        rope_theta=1000000.0,
    ),
    "llama": ChatFamily(
        config_class="LlamaConfig",
        model_class="LlamaForCausalLM",
        tokens=(
            "<|begin_of_text|>",
            "<|end_of_text|>",
            "<|start_header_id|>",
            "<|end_header_id|>",
            "<|eom_id|>",
            "<|eot_id|>",
            "<|python_tag|>",
            "<|finetune_right_pad_id|>",
        ),
        eos_token="<|eot_id|>",
        pad_token="<|finetune_right_pad_id|>",
        stop_tokens=("<|end_of_text|>", "<|eom_id|>", "<|eot_id|>"),
        bos_token="<|begin_of_text|>",
        rope_theta=500000.0,
    ),
}
"""The families a tiny chat model can take, by name."""

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

_USER: Final = "What is the weather like in Paris today?"
_REASONING: Final = "Let me think about the weather in Paris."
_ANSWER: Final = "It is sunny in Paris today."
_TOOLS: Final = [
    {
        "type": "function",
        "function": {
            "name": CALL_NAME,
            "description": "Look something up.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string", "description": "What to look up."}},
                "required": ["query"],
            },
        },
    }
]

_HEAD_DIM: Final = 32
"""Attention head width (vLLM's CPU attention has kernels for 32, not 16)."""
_ATTENTION_SCALE: Final = (16 / _HEAD_DIM) ** 0.5
"""Attention output weights scaled so that its noise stays that of 16-wide heads."""
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


def template_markers(template: str) -> list[str]:
    """The control markers in ``template``'s text, in order of first appearance: every
    ``<|…|>`` / ``<｜…｜>`` marker, every ``[UPPER]`` / ``[/UPPER]`` marker, and every
    ``<tag>`` / ``</tag>`` literal whose name has no hyphen (``<function-name>`` is a
    placeholder in instructions, ``<tool_call>`` or ``<seed:bos>`` a marker)."""
    found: dict[str, int] = {}
    for match in _SPECIAL_MARKER.finditer(template):
        found.setdefault(match.group(), match.start())
    for match in _TAG.finditer(template):
        if "-" not in match.group(2):
            found.setdefault(match.group(), match.start())
    return sorted(found, key=lambda text: found[text])


def tiny_chat_model_dir(
    home: Path | None,
    template: str | os.PathLike[str],
    *,
    special_tokens: Sequence[str] = (),
    family: str = "qwen3",
    seed: int = 0,
    name: str | None = None,
) -> Path:
    """Where :func:`ensure_tiny_chat_model` keeps the model for these arguments (see
    there); nothing is built. Raises ``OSError`` when a template file cannot be read."""
    source, label = _source(template, name)
    key = _key(source, special_tokens, family, seed)
    return models_home(home) / "models" / f"{TINY_CHAT_PREFIX}-{family}-{label}-{key}"


def ensure_tiny_chat_model(
    home: Path | None,
    template: str | os.PathLike[str],
    *,
    special_tokens: Sequence[str] = (),
    family: str = "qwen3",
    seed: int = 0,
    name: str | None = None,
) -> Path:
    """Build the tiny chat model for ``template`` unless it is already there; return its folder.

    ``template`` is a path to a Jinja chat template (a path-like, or a string without
    ``{{``/``{%``) or the template text itself. ``home`` defaults to ``$OPENCHATML_HOME``
    or ``~/.cache/openchatml``; the folder is ``<home>/models/tiny-chat-<family>-<name>-<hash>``,
    ``name`` defaulting to the template file's stem (``template`` for a text), the hash
    covering the template text, ``special_tokens``, ``family``, ``seed`` and the recipe.
    The folder is built aside and renamed into place, so a reader never sees half a model.
    Raises :class:`EngineError` for an unknown family, a template the tokenizer cannot
    render, or a missing torch/transformers; ``OSError`` when a file cannot be read or written.
    """
    _family(family)
    source, _ = _source(template, name)
    target = tiny_chat_model_dir(
        home, template, special_tokens=special_tokens, family=family, seed=seed, name=name
    )
    key = target.name.rsplit("-", 1)[-1]
    if _is_current(target, key):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent))
    try:
        build_tiny_chat_model(work, source, special_tokens=special_tokens, family=family, seed=seed)
        stamp = json.loads((work / _STAMP).read_text())
        stamp["key"] = key
        (work / _STAMP).write_text(json.dumps(stamp, indent=2, sort_keys=True) + "\n")
        install_folder(work, target, lambda folder: _is_current(folder, key))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def build_tiny_chat_model(
    folder: Path,
    chat_template: str,
    *,
    special_tokens: Sequence[str] = (),
    family: str = "qwen3",
    seed: int = 0,
) -> None:
    """Write the tiny chat model for the template text ``chat_template`` into the existing
    empty ``folder``: tokenizer (markers from the family, ``special_tokens`` and
    :func:`template_markers`), random weights for ``seed`` with the template's shape, and
    ``openchatml-tiny-chat.json`` describing that shape.

    Prefer :func:`ensure_tiny_chat_model`, which caches it. Raises :class:`EngineError` for
    an unknown family, a template that cannot render a user turn with a generation prompt,
    or a missing torch/transformers.
    """
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise EngineError(_INSTALL_HINT) from exc
    hf: Any = transformers
    spec = _family(family)
    markers = list(dict.fromkeys([*spec.tokens, *special_tokens, *template_markers(chat_template)]))
    renderer = _wrap(_bare_tokenizer(markers), chat_template, spec)
    renders = _Renders.of(renderer)
    tokenizer = _wrap(_train_tokenizer(markers, renders.corpus()), chat_template, spec)
    end_marker = _turn_end(renders, markers) or spec.eos_token
    shape = _Shape.of(tokenizer, renders, markers, end_marker)
    vocab = len(tokenizer)

    config = getattr(hf, spec.config_class)(
        vocab_size=vocab,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=_HEAD_DIM,
        max_position_embeddings=CONTEXT_LENGTH,
        bos_token_id=_id(tokenizer, spec.bos_token),
        eos_token_id=_id(tokenizer, spec.eos_token),
        pad_token_id=_id(tokenizer, spec.pad_token),
        tie_word_embeddings=False,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = getattr(hf, spec.model_class)(config)
        with torch.no_grad():
            for layer in model.model.layers:  # attention as loud as with 16-wide heads
                layer.self_attn.o_proj.weight.mul_(_ATTENTION_SCALE)
            described = shape.apply(model.get_input_embeddings().weight, model.get_output_embeddings().weight)
    model = model.to(torch.bfloat16)
    stops = [_id(tokenizer, t) for t in dict.fromkeys([*spec.stop_tokens, end_marker])]
    model.generation_config = hf.GenerationConfig(
        bos_token_id=_id(tokenizer, spec.bos_token),
        eos_token_id=stops,
        pad_token_id=_id(tokenizer, spec.pad_token),
    )
    bars = hf.utils.logging.is_progress_bar_enabled()
    hf.utils.logging.disable_progress_bar()
    try:
        model.save_pretrained(folder)
    finally:
        if bars:
            hf.utils.logging.enable_progress_bar()
    _write_legacy_rope(folder / "config.json", spec.rope_theta)
    _save_tokenizer(tokenizer, folder, chat_template, spec)
    stamp = {"recipe": _RECIPE, "family": family, "seed": seed, "markers": markers, "shape": described}
    (folder / _STAMP).write_text(json.dumps(stamp, indent=2, sort_keys=True) + "\n")
    folder.chmod(0o755)


def _family(family: str) -> ChatFamily:
    try:
        return FAMILIES[family]
    except KeyError:
        known = ", ".join(sorted(FAMILIES))
        raise EngineError(f"unknown model family {family!r}: use one of {known}") from None


def _source(template: str | os.PathLike[str], name: str | None) -> tuple[str, str]:
    """The template text and the folder label for ``template`` (a path or the text)."""
    if isinstance(template, str) and ("{{" in template or "{%" in template):
        source, stem = template, "template"
    else:
        path = Path(template)
        source, stem = path.read_text(encoding="utf-8"), path.stem
    label = re.sub(r"[^A-Za-z0-9._]+", "-", name or stem).strip("-.") or "template"
    return source, label[:60]


def _key(source: str, special_tokens: Sequence[str], family: str, seed: int) -> str:
    data = json.dumps([_RECIPE, source, list(special_tokens), family, seed], ensure_ascii=False)
    return hashlib.sha256(data.encode()).hexdigest()[:12]


def _id(tokenizer: Any, token: str | None) -> int | None:
    return None if token is None else int(tokenizer.convert_tokens_to_ids(token))


def _is_special(marker: str) -> bool:
    return _TAG.fullmatch(marker) is None


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


def _bare_tokenizer(markers: Sequence[str]) -> Any:
    """An untrained byte-level tokenizer with the markers: enough to render the template."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    alphabet = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    tokenizer = Tokenizer(models.BPE(vocab=alphabet, merges=[]))
    _pieces(tokenizer)
    _add_markers(tokenizer, markers)
    return tokenizer


def _train_tokenizer(markers: Sequence[str], texts: Sequence[str]) -> Any:
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


def _wrap(tokenizer: Any, chat_template: str, spec: ChatFamily) -> Any:
    """``tokenizer`` as a ``PreTrainedTokenizerFast`` with the family's named tokens and the template."""
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
        model_max_length=CONTEXT_LENGTH,
        clean_up_tokenization_spaces=False,
    )
    wrapped.chat_template = chat_template
    return wrapped


@dataclass(frozen=True, slots=True)
class _Renders:
    """The template's renderings of a small conversation (``None`` where it refused)."""

    prompt: str
    """A user turn and the generation prompt."""
    answer: str | None
    """The same, then an assistant turn with :data:`_REASONING` and :data:`_ANSWER`."""
    call: str | None
    """The same, then an assistant turn calling :data:`CALL_NAME` with :data:`CALL_ARGUMENTS`."""
    extra: tuple[str, ...]
    """Longer conversations, with a system message, tools and a tool result."""

    @classmethod
    def of(cls, tokenizer: Any) -> _Renders:
        """Render the conversations, with :data:`_TOOLS` where the template accepts them.
        Raises :class:`EngineError` when it cannot render a user turn and a generation prompt."""
        user = {"role": "user", "content": _USER}
        answer = {"role": "assistant", "content": _ANSWER, "reasoning_content": _REASONING}
        call = {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": CALL_NAME, "arguments": dict(CALL_ARGUMENTS)},
                }
            ],
        }
        result = {"role": "tool", "tool_call_id": "call_1", "name": CALL_NAME, "content": "Sunny, 18."}
        problem: Exception | None = None
        for tools in (_TOOLS, None):
            try:
                prompt = _render(tokenizer, [user], tools=tools, add_generation_prompt=True)
            except Exception as exc:
                problem = problem or exc
                continue
            longer = [
                (
                    {"role": "system", "content": "You are a helpful assistant."},
                    user,
                    answer,
                    user,
                    call,
                    result,
                ),
                (user, call, result, answer),
            ]
            extra = (_try_render(tokenizer, list(messages), tools=tools) for messages in longer)
            return cls(
                prompt=prompt,
                answer=_try_render(tokenizer, [user, answer], tools=tools),
                call=_try_render(tokenizer, [user, call], tools=tools)
                or _try_render(tokenizer, [user, {**call, "content": None}], tools=tools),
                extra=tuple(text for text in extra if text is not None),
            )
        raise EngineError(
            "the chat template cannot render a user message with a generation prompt: "
            f"{type(problem).__name__}: {problem}"
        ) from problem

    def corpus(self) -> list[str]:
        """The renderings, each twice: the template's pieces become whole tokens."""
        texts = [self.prompt, self.answer, self.call, *self.extra]
        return [text for text in texts if text is not None] * 2


def _render(tokenizer: Any, messages: list[dict[str, Any]], **options: Any) -> str:
    text = tokenizer.apply_chat_template(messages, tokenize=False, **options)
    if not isinstance(text, str):
        raise TypeError(f"the chat template rendered {type(text).__name__}, not text")
    return text


def _try_render(tokenizer: Any, messages: list[dict[str, Any]], **options: Any) -> str | None:
    try:
        return _render(tokenizer, messages, **options)
    except Exception:
        return None


@dataclass(slots=True)
class _Shape:
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
    def of(cls, tokenizer: Any, renders: _Renders, markers: Sequence[str], end_marker: str) -> _Shape:
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
    tag = _TAG.fullmatch(marker)
    if tag is not None and not tag.group(1):
        found.append(f"</{tag.group(2)}>")
    if marker.startswith("[") and not marker.startswith("[/"):
        found.append("[/" + marker[1:])
    for opening, closing in (("START", "END"), ("start", "end"), ("BEGIN", "END"), ("begin", "end")):
        if opening in marker:
            found.append(marker.replace(opening, closing))
    return found


def _bridge(renders: _Renders, encode: Any, think: tuple[str, str] | None) -> int | None:
    """The one token the template writes between reasoning and answer (``\\n\\n``), if any."""
    if think is None or renders.answer is None or not renders.answer.startswith(renders.prompt):
        return None
    turn = renders.answer[len(renders.prompt) :]
    close = turn.find(think[1])
    reply = turn.find(_ANSWER, close)
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
    renders: _Renders,
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


def _turn_end(renders: _Renders, markers: Sequence[str]) -> str | None:
    """The first marker the template writes after an assistant's answer: the end of its turn."""
    if renders.answer is None:
        return None
    at = renders.answer.find(_ANSWER, len(renders.prompt))
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


def _save_tokenizer(tokenizer: Any, folder: Path, chat_template: str, spec: ChatFamily) -> None:
    """Write ``tokenizer.json`` and a ``tokenizer_config.json`` that every ``transformers``
    (4.x and 5.x) and vLLM read, with the chat template inline and in ``chat_template.jinja``."""
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
        "model_max_length": CONTEXT_LENGTH,
        "clean_up_tokenization_spaces": False,
        "model_input_names": ["input_ids", "attention_mask"],
        "added_tokens_decoder": added,
        "chat_template": chat_template,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    (folder / "special_tokens_map.json").write_text(json.dumps(named, indent=2, ensure_ascii=False) + "\n")
    (folder / "chat_template.jinja").write_text(chat_template)


def _write_legacy_rope(path: Path, theta: float) -> None:
    """Spell RoPE as released Qwen3 and Llama configs do (``rope_theta``), which every reader understands."""
    config = json.loads(path.read_text())
    config.pop("rope_parameters", None)
    config["rope_theta"] = theta
    config["rope_scaling"] = None
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def _is_current(folder: Path, key: str) -> bool:
    try:
        stamp = json.loads((folder / _STAMP).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(stamp, dict) and stamp.get("recipe") == _RECIPE and stamp.get("key") == key
