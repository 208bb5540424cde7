"""The trained tiny gpt-oss: its dialogues are the server's prompts, its held-out cities
are unseen, its compact weights expand to the same distribution, and its folder loads."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from openchatml import load_encoding
from openchatml.core.messages import Role
from openchatml.core.render import CoTPolicy, Profile, RenderConfig, Renderer
from openchatml.demo_models.dialogues import KINDS, WEATHER_TOOL, DialogueMaker, dialogues
from openchatml.demo_models.places import CITIES, copyable, held_out_cities, training_cities
from openchatml.demo_models.tiny_trained import (
    ensure_trained_model,
    expand_into,
    save_trained,
    shipped_measures,
    shipped_weights,
)
from openchatml.demo_models.tiny_training import FULL_VOCAB, TinyRecipe, compact_ids, corpus, expand_state
from openchatml.responses.input import PromptSettings, build_conversation
from openchatml.responses.request import parse_request
from openchatml.training.masks import trained_turn_start

ENCODING = load_encoding()
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


# --- the dialogues ------------------------------------------------------------------------


def _server_prompt(dialogue_messages: list, request: dict) -> list[int]:  # type: ignore[type-arg]
    """What ``openchatml serve`` renders for ``request`` (the prompt of its next answer)."""
    system = dialogue_messages[0].content[0]
    settings = PromptSettings(current_date=system.conversation_start_date)
    parsed = parse_request({"model": "tiny", **request})
    conversation = build_conversation(parsed, parsed.items, settings=settings)
    return Renderer(RenderConfig(profile=Profile.HARMONY, cot=CoTPolicy.DROP_FINISHED)).completion_tokens(
        conversation
    )


@pytest.mark.parametrize("kind", ["weather_call", "weather_answer", "greeting"])
def test_the_dialogues_prompts_are_what_the_server_renders(kind: str) -> None:
    maker = DialogueMaker(ENCODING, seed=3)
    compared = 0
    for _ in range(20):
        dialogue = maker.make(kind)
        messages = list(dialogue.conversation)
        if sum(m.role is Role.USER for m in messages) > 1:
            continue  # an earlier exchange: the server would hold it in stored items
        cut = trained_turn_start(messages)
        effort = messages[0].content[0].reasoning_effort.value.lower()
        developer = [m for m in messages if m.role is Role.DEVELOPER]
        described = developer[0].content[0] if developer else None
        tools = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters or {}),
            }
            for t in (described.tools["functions"].tools if described and described.tools else ())
        ]
        request = {
            "reasoning": {"effort": effort},
            "instructions": described.instructions if described else None,
            "tools": tools,
            "input": [{"role": "user", "content": messages[cut - 1].content[0].text}],
        }
        turn = messages[cut:]
        if kind == "weather_answer":  # the call and its output come back as items
            call = next(m for m in turn if m.recipient == "functions.get_weather")
            output = next(m for m in turn if m.role is Role.TOOL)
            before = turn[: turn.index(output)]
            request["input"] += [
                *(
                    {
                        "type": "reasoning",
                        "summary": [],
                        "content": [{"type": "reasoning_text", "text": m.content[0].text}],
                    }
                    for m in before
                    if m.channel == "analysis"
                ),
                {
                    "type": "function_call",
                    "call_id": "call_1",
                    "name": "get_weather",
                    "arguments": call.content[0].text,
                },
                {"type": "function_call_output", "call_id": "call_1", "output": output.content[0].text},
            ]
            prompt_messages = messages[: cut + turn.index(output) + 1]
            preambles = [m for m in before if m.channel == "commentary" and m.recipient is None]
            if preambles:
                continue  # a preamble item sits between; covered by the item conversion's own tests
        else:
            prompt_messages = messages[:cut]
        ours = Renderer(RenderConfig(profile=Profile.HARMONY, cot=CoTPolicy.DROP_FINISHED)).completion_tokens(
            prompt_messages
        )
        assert ours == _server_prompt(messages, request)
        compared += 1
    assert compared >= 5


def test_no_training_dialogue_names_a_held_out_city() -> None:
    held = held_out_cities(ENCODING)
    assert len(held) == 100 and not set(held) & set(training_cities(ENCODING))
    assert all(copyable(city, ENCODING) for city in held)
    texts = [
        message.content[0].text
        for dialogue in dialogues(ENCODING, 5000, seed=0)
        for message in dialogue.conversation
        if hasattr(message.content[0], "text")
    ]
    joined = "\n".join(texts)
    for city in held:  # as a name; inside another word it is only a reuse of pieces
        assert not re.search(rf"(?<![A-Za-z]){re.escape(city)}(?![A-Za-z])", joined), city


def test_every_piece_of_a_held_out_city_is_in_the_shipped_vocabulary() -> None:
    from safetensors import safe_open

    with safe_open(str(shipped_weights()), framework="pt") as handle:
        known = set(handle.get_tensor("token_ids").tolist())
    for city in held_out_cities(ENCODING):
        assert set(ENCODING.encode_ordinary(" " + city)) <= known, city
        assert set(ENCODING.encode_ordinary(json.dumps({"location": city}))) <= known, city


def test_the_dialogue_kinds_and_cities_vary_with_the_seed() -> None:
    made = [DialogueMaker(ENCODING, seed=seed).make() for seed in range(40)]
    assert {d.kind for d in made} == set(KINDS)
    assert made == [DialogueMaker(ENCODING, seed=seed).make() for seed in range(40)]
    assert WEATHER_TOOL.name == "get_weather" and "Paris" in CITIES


# --- compact weights ----------------------------------------------------------------------


def _small_trained(tmp_path: Path) -> Path:
    """A compact model with random weights saved as the shipped file is."""
    from openchatml.demo_models.tiny_training import TrainedTiny

    recipe = TinyRecipe(hidden=32, layers=2, heads=2, kv_heads=1, experts=2)
    token_ids = sorted({i for s in corpus(ENCODING, 30, seed=5) for i in s.ids})
    torch.manual_seed(0)
    model = transformers.GptOssForCausalLM(transformers.GptOssConfig(**recipe.config(len(token_ids) + 1)))
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_(0.0, 0.3)
    trained = TrainedTiny(model.state_dict(), token_ids, recipe, {"final_loss": 1.0})
    path = tmp_path / "compact.safetensors"
    save_trained(trained, path)
    return path


def test_the_expanded_model_gives_every_id_the_compact_models_probability(tmp_path: Path) -> None:
    from safetensors.torch import load_file

    path = _small_trained(tmp_path)
    compact = load_file(str(path))
    token_ids = compact.pop("token_ids").tolist()
    recipe = TinyRecipe(**shipped_measures(path)["recipe"])
    small = transformers.GptOssForCausalLM(transformers.GptOssConfig(**recipe.config(len(token_ids) + 1)))
    missing, unexpected = small.load_state_dict(compact, strict=False)
    assert set(missing) <= {"lm_head.weight"} and not unexpected  # a tied output layer is stored once
    small.tie_weights()
    folder = tmp_path / "full"
    folder.mkdir()
    expand_into(path, folder)
    full = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    assert full.config.vocab_size == FULL_VOCAB
    sample = corpus(ENCODING, 30, seed=5)[7]  # a dialogue whose ids the compact model knows
    index = {token: n for n, token in enumerate(token_ids)}
    with torch.no_grad():
        wide = torch.log_softmax(full(torch.tensor([list(sample.ids)])).logits[0], -1)
        narrow_logits = small(torch.tensor([[index[i] for i in sample.ids]])).logits[0]
        narrow_logits[:, -1] += math.log(FULL_VOCAB - len(token_ids))
        narrow = torch.log_softmax(narrow_logits, -1)
    used = torch.tensor(token_ids)
    torch.testing.assert_close(wide[:, used], narrow[:, :-1], atol=1e-4, rtol=1e-4)
    unused = torch.ones(FULL_VOCAB, dtype=torch.bool)
    unused[used] = False
    spread = wide[:, unused].logsumexp(-1)
    torch.testing.assert_close(spread, narrow[:, -1], atol=1e-3, rtol=0)  # a sum over 199k equal terms


def test_expand_state_copies_the_extra_row_to_every_unused_id() -> None:
    state = {
        "model.embed_tokens.weight": torch.arange(12.0).reshape(3, 4),
        "lm_head.weight": -torch.arange(12.0).reshape(3, 4),
    }
    full = expand_state(state, [5, 7], torch)
    embed = full["model.embed_tokens.weight"]
    assert embed.shape == (FULL_VOCAB, 4)
    assert embed[5].tolist() == [0, 1, 2, 3] and embed[7].tolist() == [4, 5, 6, 7]
    assert embed[0].tolist() == embed[FULL_VOCAB - 1].tolist() == [8, 9, 10, 11]


def test_the_shipped_model_records_its_training_and_expands_once(tmp_path: Path) -> None:
    recorded = shipped_measures()
    measures = recorded["measures"]
    assert set(measures) >= {"final_loss", "heldout_loss", "heldout_token_accuracy", "heldout_city_calls"}
    assert measures["train_seconds"] < 600 and recorded["recipe"]["threads"] == 2  # ≤ 10 minutes on 2 cores
    assert measures["heldout_token_accuracy"] > 0.9
    size = shipped_weights().stat().st_size
    assert size < 10_000_000  # compact: the used rows only
    folder = ensure_trained_model(tmp_path)
    again = ensure_trained_model(tmp_path)
    assert folder == again and (folder / "tokenizer.json").is_file()
    config = json.loads((folder / "config.json").read_text())
    assert config["vocab_size"] == FULL_VOCAB and config["model_type"] == "gpt_oss"


def test_the_compact_vocabulary_refuses_a_corpus_that_misses_a_held_out_piece() -> None:
    with pytest.raises(ValueError, match="held-out city"):
        compact_ids(corpus(ENCODING, 20, seed=1), ENCODING)


def test_training_is_reproducible_for_a_seed() -> None:
    from openchatml.demo_models.tiny_training import train

    recipe = TinyRecipe(
        dialogues=40000, steps=3, batch=4, hidden=32, layers=1, heads=2, kv_heads=1, experts=2
    )
    lines: list[str] = []
    first = train(ENCODING, recipe, report=lines.append)
    second = train(ENCODING, recipe, report=lambda line: None)
    assert first.token_ids == second.token_ids
    assert first.state.keys() == second.state.keys()
    assert all(torch.equal(first.state[name], second.state[name]) for name in first.state)
    assert lines[0].startswith("40000 dialogues") and "step 3/3" in lines[-1]
    assert set(first.measures) >= {
        "final_loss",
        "heldout_loss",
        "heldout_token_accuracy",
        "heldout_city_calls",
    }


def test_sorted_experts_compute_what_gpt_oss_experts_compute_with_the_same_gradients() -> None:
    from openchatml.demo_models.tiny_training import SortedExperts

    recipe = TinyRecipe(hidden=32, layers=1, heads=2, kv_heads=1, experts=4)
    torch.manual_seed(3)
    model = transformers.GptOssForCausalLM(transformers.GptOssConfig(**recipe.config(50)))
    mlp = model.model.layers[0].mlp
    with torch.no_grad():
        for parameter in mlp.parameters():
            parameter.normal_(0.0, 0.5)
    hidden = torch.randn(2, 37, 32)
    reference = mlp(hidden)[0]
    reference.square().sum().backward()
    expected = {name: p.grad.clone() for name, p in mlp.named_parameters()}
    mlp.zero_grad()
    mlp.experts.forward = SortedExperts(mlp.experts, torch)
    routed = torch.bincount(mlp.router(hidden.reshape(-1, 32))[2][:, 0], minlength=4)
    assert int((routed > 0).sum()) >= 2  # the tokens really go to several experts
    sorted_out = mlp(hidden)[0]
    sorted_out.square().sum().backward()
    torch.testing.assert_close(sorted_out, reference)
    for name, p in mlp.named_parameters():
        scale = float(expected[name].abs().max())  # sums in another order: float rounding only
        torch.testing.assert_close(p.grad, expected[name], rtol=1e-3, atol=1e-5 * scale, msg=name)
