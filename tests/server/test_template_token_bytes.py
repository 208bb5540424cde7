"""Template models: log probabilities carry each token's exact bytes, and reasoning
summaries come from the template's own answer.

A byte-level tokenizer splits "世界" into tokens that each hold part of a character;
``decode([id])`` cannot say their bytes, the ``LogProb.bytes`` must.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from test_responses_api import check_stream, sse_events
from test_template_model import ScriptedTemplateEngine, qwen_engine, serve

__all__ = ["qwen_engine"]  # the fixture, shared

ANSWER = "héllo → 世界"


def test_logprob_bytes_spell_the_answer(qwen_engine: Any, tmp_path: Path) -> None:
    engine = ScriptedTemplateEngine(qwen_engine.tokenizer, f"{ANSWER}<|im_end|>", chunk=1)
    server = serve(engine, tmp_path)
    body = {
        "model": "scripted-qwen3",
        "input": "hi",
        "include": ["message.output_text.logprobs"],
        "top_logprobs": 2,
        "reasoning": {"effort": "none"},
        "stream": True,
    }
    with server.http() as http:
        events = sse_events(http.post("/v1/responses", json=body).text)
    check_stream(events)
    part = events[-1]["response"]["output"][-1]["content"][0]
    assert part["text"] == ANSWER
    spelled = b"".join(bytes(lp["bytes"]) for lp in part["logprobs"])
    assert spelled == ANSWER.encode()
    assert any("\ufffd" in lp["token"] for lp in part["logprobs"])  # split characters, as text


def test_summary_of_a_template_models_reasoning(qwen_engine: Any, tmp_path: Path) -> None:
    # the scripted model says the same whatever it is asked: to summarise, it answers
    engine = ScriptedTemplateEngine(
        qwen_engine.tokenizer, "<think>\nSome thought.\n</think>\n\nShort.<|im_end|>"
    )
    server = serve(engine, tmp_path)
    client = server.client()
    response = client.responses.create(model="scripted-qwen3", input="hi", reasoning={"summary": "concise"})
    reasoning = response.output[0]
    assert reasoning.type == "reasoning" and reasoning.content[0].text.strip() == "Some thought."
    assert [s.text for s in reasoning.summary] == ["Short."]
    assert response.output_text == "Short."
    assert len(engine.prompts) == 2
