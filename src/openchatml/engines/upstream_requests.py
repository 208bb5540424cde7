"""What the engine asks an upstream completions server for: the request bodies of both wire
dialects, the grammar a generation samples under, and the probe that tells whether the
server enforces grammars.

``vllm``
    ``POST /v1/completions`` with the prompt's ids, ``stream``, ``return_token_ids``
    (vLLM >= 0.10.2), special tokens kept in the text, the stop ids and the sampling
    settings; ``logprobs`` with ``return_tokens_as_token_ids`` for log probabilities. A
    grammar goes as ``structured_outputs: {"grammar": <Lark>}`` (vLLM 0.32): vLLM hands it
    to its structured-output backend, and llguidance (``guidance``) reads llguidance's Lark
    — token references ``<[id]>`` (a special token is matched by id, never by its text),
    inline ``%json`` schemas, lazy and bounded lexemes. The ``auto`` backend tries xgrammar
    first, which refuses ``%llguidance``, then guidance; ``--structured-outputs-config
    '{"backend": "guidance"}'`` skips that try (a server pinned to xgrammar refuses the
    grammar, and so fails the probe).
``llamacpp``
    llama-server's own ``POST /completion`` with ``return_tokens``, its samplers set to the
    raw distribution (``top_k`` 0, ``min_p`` 0, no repeat penalty: its defaults cut it),
    always a ``seed`` (one is drawn when none is given), ``n_probs`` for log
    probabilities. A grammar goes as ``grammar`` (the GBNF of ``ToolGrammar.gbnf``, special
    tokens as token references). A lazy one adds ``grammar_lazy`` and ``grammar_triggers``
    (llama-server's trigger objects: type 0 a token with its id, 1 a word, 2 a pattern whose
    first group starts the grammar) and ``preserved_tokens`` (the trigger words: llama-server
    wants a word that is one token listed there). llama.cpp samples an end-of-generation id
    only where its grammar may end, and then any of them: a grammar that is not lazy ends on
    the ids it names optional (``<[id]>?``, see :mod:`..templates.grammar.gbnf`), and the
    other stop ids get a logit bias of ``false`` (never sampled), so that a call ends on
    ``<|call|>``, not ``<|return|>``. llama.cpp matches a special token against text rules
    by its text, and the grammar's free text avoids the markers it knows; the special ids
    no grammar names (o200k_harmony's ``<|reserved_N|>``, for a model that speaks Harmony)
    get a logit bias of ``false`` too, as llguidance never samples a special token in text.
    A custom tool's grammar reaches llama-server as GBNF rules
    (:mod:`..templates.grammar.custom_grammar`); one GBNF cannot carry is refused before
    any generation, by the layers above.

The probe: two one-token requests, greedy, each under a grammar that allows one digit
(then, optionally, a token reference, so that a server that cannot read those refuses it);
a server that answers each with its digit enforces grammars. One that answers an error, or
other text (it ignored the grammar), does not.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from typing import Any, Final, Literal

from ..core.tokens import FIRST_SPECIAL_ID, LAST_SPECIAL_ID, NAMED_SPECIAL_TOKENS
from ..templates.grammar import ToolGrammar, Trigger
from .base import SamplingParams

Flavor = Literal["vllm", "llamacpp"]
FLAVORS: Final[frozenset[str]] = frozenset({"vllm", "llamacpp"})

SEEDS: Final = 0xFFFFFFFF
"""llama.cpp's seeds are below this (itself means "draw one")."""
HARMONY_RESERVED: Final = tuple(
    token for token in range(FIRST_SPECIAL_ID, LAST_SPECIAL_ID) if token not in NAMED_SPECIAL_TOKENS.values()
)
"""o200k_harmony's reserved special ids (``<|reserved_N|>``): never in a Harmony output."""
PROBE_DIGITS: Final = ("7", "8")
"""What the probe's grammars allow, one each: a server that enforces them answers both."""

_TRIGGER_TYPES: Final = {"token": 0, "word": 1, "pattern": 2}
"""llama-server's ``common_grammar_trigger_type`` values."""
_OPTIONAL_TOKEN: Final = re.compile(r"<\[(\d+)\]>\?")


def token_limit(prompt: Sequence[int], params: SamplingParams, context: int | None) -> int | None:
    """``params.max_tokens`` clamped to the room ``context`` leaves after ``prompt``
    (``None``: no limit)."""
    limit = params.max_tokens
    if context is not None:
        room = max(1, context - len(prompt))
        limit = room if limit is None else min(limit, room)
    return limit


def vllm_body(
    model: str, prompt: Sequence[int], params: SamplingParams, limit: int | None, grammar: ToolGrammar | None
) -> dict[str, Any]:
    """The streamed ``/v1/completions`` body of ``params`` (``limit``: its ``max_tokens``;
    ``grammar``: the one to send, ``None`` for none)."""
    body: dict[str, Any] = {
        "model": model,
        "prompt": list(prompt),
        "stream": True,
        "return_token_ids": True,
        "skip_special_tokens": False,
        "include_stop_str_in_output": True,
        "stop_token_ids": list(params.stop_token_ids),
        "temperature": params.temperature,
        "top_p": params.top_p,
        "presence_penalty": params.presence_penalty,
        "frequency_penalty": params.frequency_penalty,
    }
    if limit is not None:
        body["max_tokens"] = limit
    if params.seed is not None:
        body["seed"] = params.seed
    if params.logprobs is not None:
        body["logprobs"] = params.logprobs
        body["return_tokens_as_token_ids"] = True
    if grammar is not None:
        # vLLM 0.32 pins an llguidance that ignores a bound on JSON whitespace
        body["structured_outputs"] = {"grammar": grammar.lark_fixed_spacing}
    body.update(params.extra)
    return body


def llamacpp_body(
    prompt: Sequence[int],
    params: SamplingParams,
    limit: int | None,
    grammar: ToolGrammar | None,
    unnamed: Sequence[int] = (),
) -> dict[str, Any]:
    """The streamed ``/completion`` body of ``params`` (``limit``: its ``n_predict``;
    ``grammar``: the one to send, ``None`` for none; ``unnamed``: the special ids no
    grammar names), always with a seed."""
    body: dict[str, Any] = {
        "prompt": list(prompt),
        "stream": True,
        "return_tokens": True,
        "n_predict": -1 if limit is None else limit,
        "temperature": params.temperature,
        "top_p": params.top_p,
        "top_k": 0,
        "min_p": 0.0,
        "repeat_penalty": 1.0,
        "presence_penalty": params.presence_penalty,
        "frequency_penalty": params.frequency_penalty,
        "cache_prompt": True,
    }
    # always a seed, so that a replay samples the same ids (see UpstreamEngine._llamacpp_source)
    seed = params.seed if params.seed is not None else secrets.randbelow(SEEDS)
    body["seed"] = seed % SEEDS
    if params.logprobs is not None:
        body["n_probs"] = max(params.logprobs, 1)
        body["post_sampling_probs"] = False
    if grammar is not None:
        body.update(llamacpp_grammar(grammar, params.stop_token_ids, unnamed))
    body.update(params.extra)
    return body


def llamacpp_grammar(
    grammar: ToolGrammar, stops: Sequence[int], unnamed: Sequence[int] = ()
) -> dict[str, Any]:
    """llama-server's fields for ``grammar`` (see the module docstring); ``stops``: the
    generation's stop ids; ``unnamed``: the special ids no grammar names."""
    fields: dict[str, Any] = {"grammar": grammar.gbnf}
    banned = list(unnamed)
    if grammar.lazy:
        fields["grammar_lazy"] = True
        fields["grammar_triggers"] = [llamacpp_trigger(trigger) for trigger in grammar.triggers]
        fields["preserved_tokens"] = [trigger.value for trigger in grammar.triggers if trigger.kind == "word"]
    else:
        ending = {int(token) for token in _OPTIONAL_TOKEN.findall(grammar.gbnf)}
        if ending:
            banned += [token for token in stops if token not in ending]
    if banned:
        fields["logit_bias"] = [[token, False] for token in banned]
    return fields


def llamacpp_trigger(trigger: Trigger) -> dict[str, Any]:
    """``trigger`` as llama-server's trigger object."""
    if trigger.kind == "pattern":
        return {"type": _TRIGGER_TYPES["pattern"], "value": trigger.value}
    if trigger.token_id is not None:
        return {"type": _TRIGGER_TYPES["token"], "value": trigger.value, "token": trigger.token_id}
    return {"type": _TRIGGER_TYPES["word"], "value": trigger.value}


def probe_body(flavor: Flavor, model: str, digit: str) -> tuple[str, dict[str, Any]]:
    """The path and body of one probe request: one greedy id after id 0, under a grammar that
    allows ``digit`` (then an optional token reference)."""
    if flavor == "vllm":
        lark = f'%llguidance {{}}\nstart: "{digit}" <[0]>?\n'
        body = {
            "model": model,
            "prompt": [0],
            "max_tokens": 1,
            "temperature": 0.0,
            "structured_outputs": {"grammar": lark},
        }
        return "/v1/completions", body
    grammar = f'root ::= "{digit}" <[0]>?\n'
    return "/completion", {"prompt": [0], "n_predict": 1, "temperature": 0.0, "grammar": grammar}


def probe_text(flavor: Flavor, answer: Any) -> str | None:
    """The text of a probe's answer (``None``: none found)."""
    if not isinstance(answer, dict):
        return None
    if flavor == "vllm":
        choices = answer.get("choices")
        text = (
            choices[0].get("text")
            if isinstance(choices, list) and choices and isinstance(choices[0], dict)
            else None
        )
    else:
        text = answer.get("content")
    return text if isinstance(text, str) else None
