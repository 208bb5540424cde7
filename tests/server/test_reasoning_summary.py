"""``reasoning.summary``: the served model summarises its reasoning, end to end.

The scripted model thinks and answers; asked (by the summariser's prompt) to summarise,
it answers with a summary after some reasoning of its own, which must not leak. The
official SDK reads the summary; the stream carries the summary events in the reasoning
item's lifecycle; a stored background response replays them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from live import ScriptedEngine, completion
from test_responses_api import ANSWER, THINK, check_stream, sse_events

from openchatml import Message, load_encoding
from openchatml.responses.summary import INSTRUCTIONS, MAX_TOKENS

SUMMARY = Message.assistant("Greeted the user warmly.", channel="final")
ITS_OWN = Message.assistant("Secret musings of the summariser.", channel="analysis")


def script(prompt: Sequence[int]) -> list[int]:
    text = load_encoding().decode(list(prompt))
    if INSTRUCTIONS["concise"] in text or INSTRUCTIONS["detailed"] in text:
        return completion(ITS_OWN, SUMMARY)
    return completion(THINK, ANSWER)


def test_sdk_reads_the_summary(serve: Any) -> None:
    engine = ScriptedEngine(script)
    server = serve(engine)
    client = server.client()
    response = client.responses.create(model="scripted-model", input="hi", reasoning={"summary": "concise"})
    reasoning = response.output[0]
    assert reasoning.type == "reasoning"
    assert [s.text for s in reasoning.summary] == ["Greeted the user warmly."]
    assert reasoning.content[0].text == "The user greets me."
    assert response.output_text == "Hello there!"
    assert response.reasoning.summary == "concise"
    # the summariser saw the reasoning, not the conversation; its own thoughts stayed hidden
    summary_prompt = load_encoding().decode(engine.prompts[1])
    assert "The user greets me." in summary_prompt and INSTRUCTIONS["concise"] in summary_prompt
    assert engine.params[1].max_tokens == MAX_TOKENS["concise"] and engine.params[1].temperature == 0
    assert "Secret musings" not in response.model_dump_json()
    plain = client.responses.create(model="scripted-model", input="hi")
    assert plain.output[0].summary == [] and len(engine.prompts) == 3  # no summary unless asked


def test_stream_and_replay_carry_the_summary(serve: Any) -> None:
    server = serve(ScriptedEngine(script, chunk=2))
    body = {"model": "scripted-model", "input": "hi", "reasoning": {"summary": "auto"}}
    with server.http() as http:
        live = sse_events(http.post("/v1/responses", json={**body, "stream": True}).text)
        background = http.post("/v1/responses", json={**body, "background": True}).json()
        replayed = sse_events(
            http.get(f"/v1/responses/{background['id']}", params={"stream": "true"}, timeout=30).text
        )
    for events in (live, replayed):
        check_stream(events)
        kinds = [e["type"] for e in events]
        summary_done = kinds.index("response.reasoning_summary_part.done")
        reasoning_done = next(
            n
            for n, e in enumerate(events)
            if e["type"] == "response.output_item.done" and e["output_index"] == 0
        )
        answer_added = next(
            n
            for n, e in enumerate(events)
            if e["type"] == "response.output_item.added" and e["output_index"] == 1
        )
        assert kinds.index("response.reasoning.done") < kinds.index("response.reasoning_summary_part.added")
        assert summary_done < reasoning_done < answer_added
        text = "".join(e["delta"] for e in events if e["type"] == "response.reasoning_summary_text.delta")
        assert text == "Greeted the user warmly."
        assert events[-1]["response"]["output"][0]["summary"][0]["text"] == text


def test_random_model_with_summaries_gives_valid_streams(serve: Any, tiny_engine: Any) -> None:
    """A real engine sampling random tokens: whatever it writes, and whatever its
    summaries hold, every event and snapshot is valid."""
    server = serve(tiny_engine)
    with server.http() as http:
        for seed in range(3):
            body = {
                "model": "tiny",
                "input": f"Hello {seed}",
                "max_output_tokens": 40,
                "seed": seed,
                "reasoning": {"summary": "detailed"},
                "stream": True,
            }
            events = sse_events(http.post("/v1/responses", json=body, timeout=120).text)
            check_stream(events)
            for item in events[-1]["response"]["output"]:
                if item["type"] == "reasoning":
                    assert all(part["type"] == "summary_text" for part in item["summary"])
