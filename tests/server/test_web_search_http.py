"""The hosted browser over HTTP, end to end through the official ``openai`` SDK: a scripted
gpt-oss searches a test corpus with ``web_search``, opens a result and cites it; the
server runs each ``browser.*`` call on the conversation's page stack, gives the model the
page and samples on in the same response: ``web_search_call`` items with their events,
the citation turned into a link with a ``url_citation`` annotation that points into the
answer, replay, the page stack kept across ``previous_response_id``, a failed search
reported and the loop going on, and web search accepted and not offered where the server
has no browser."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import openai
import pytest
from live import LiveServer, ScriptedEngine, completion
from openai.types.responses import ResponseFunctionWebSearch, ResponseOutputMessage
from sdk import validate_openai_event, validate_openai_response

from openchatml import Message
from openchatml.core.encoding import load_encoding
from openchatml.server.settings import BrowserSettings, ServiceSettings

TOOLS: list[Any] = [{"type": "web_search_preview"}]
LIGHTHOUSE = """# The lighthouse keeper

The keeper of the north light climbs 212 steps every evening.
He trims the wick and winds the clockwork that turns the lens.
The light has not failed on a single night since 1911.
"""
ORCHARD = """# Keeping an orchard

Apple trees want pruning in late winter, before the sap rises.
"""


@pytest.fixture
def browsing(tmp_path: Path) -> ServiceSettings:
    """Settings with the browser over a corpus of two Markdown files."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "lighthouse.md").write_text(LIGHTHOUSE)
    (corpus / "orchard.md").write_text(ORCHARD)
    browser = BrowserSettings(corpus=str(corpus), index=str(tmp_path / "index.sqlite3"), corpus_name="docs")
    return ServiceSettings(browser=browser)


def browser_call(action: str, arguments: dict[str, Any]) -> Message:
    return Message.tool_call(
        f"browser.{action}", json.dumps(arguments), channel="analysis", constrained=False
    )


def researcher(
    query: str = "lighthouse keeper", answer: str = "He climbs 212 steps 【1†L2-L3】."
) -> Callable[[Sequence[int]], list[int]]:
    """A script: search ``query``, open the first result, then answer ``answer`` — by how
    many browser replies the current turn holds."""
    encoding = load_encoding()

    def script(prompt: Sequence[int]) -> list[int]:
        turn = encoding.decode(list(prompt)).rsplit("<|start|>user", 1)[1]
        replies = turn.count("<|start|>browser.")
        if replies == 0:
            return completion(browser_call("search", {"query": query}))
        if replies == 1 and "No results" not in turn:
            return completion(browser_call("open", {"id": 0}))
        return completion(Message.assistant(answer, channel="final"))

    return script


def test_search_open_and_cite(serve: Callable[..., LiveServer], browsing: ServiceSettings) -> None:
    engine = ScriptedEngine(researcher())
    client = serve(engine, settings=browsing).client()
    response = client.responses.create(
        model="scripted-model",
        input="How many steps does the keeper climb?",
        tools=TOOLS,
        include=["web_search_call.action.sources"],
    )
    validate_openai_response(response.model_dump(mode="json"))
    search, opening, message = response.output
    assert isinstance(search, ResponseFunctionWebSearch) and isinstance(opening, ResponseFunctionWebSearch)
    assert search.status == "completed" and search.action.type == "search"
    assert search.action.query == "lighthouse keeper"
    assert search.action.sources is not None
    assert search.action.sources[0].url == "corpus://docs/lighthouse.md"
    assert opening.action.type == "open_page" and opening.action.url == "corpus://docs/lighthouse.md"
    assert isinstance(message, ResponseOutputMessage)
    text = message.content[0]
    assert text.type == "output_text"
    [citation] = text.annotations
    assert citation.type == "url_citation" and citation.url == "corpus://docs/lighthouse.md"
    cited = text.text[citation.start_index : citation.end_index]
    assert cited == "([The lighthouse keeper](corpus://docs/lighthouse.md))", text.text
    assert "【" not in text.text and text.text.startswith("He climbs 212 steps (")
    prompts = [load_encoding().decode(prompt) for prompt in engine.prompts]
    assert "## browser" in prompts[0] and "sources=corpus:docs" in prompts[0]
    assert "<|start|>browser.search to=assistant" in prompts[1]
    assert "212 steps" in prompts[2]  # the page the model opened


def test_stream_events_and_replay(serve: Callable[..., LiveServer], browsing: ServiceSettings) -> None:
    client = serve(ScriptedEngine(researcher()), settings=browsing).client()
    events = list(client.responses.create(model="scripted-model", input="steps?", tools=TOOLS, stream=True))
    for event in events:
        validate_openai_event(event.model_dump(mode="json"))
    kinds = [event.type for event in events]
    for kind in (
        "response.web_search_call.in_progress",
        "response.web_search_call.searching",
        "response.web_search_call.completed",
        "response.output_text.annotation.added",
    ):
        assert kind in kinds
    assert kinds.count("response.web_search_call.completed") == 2
    final = events[-1].response
    assert final.status == "completed"
    search = final.output[0]
    assert isinstance(search, ResponseFunctionWebSearch) and search.action.type == "search"
    assert search.action.sources is None  # not included
    [annotation] = [event for event in events if event.type == "response.output_text.annotation.added"]
    done = next(event for event in events if event.type == "response.output_text.done")
    cited = annotation.annotation  # type: ignore[attr-defined]
    assert cited.url == "corpus://docs/lighthouse.md"
    link = done.text[cited.start_index : cited.end_index]  # type: ignore[attr-defined]
    assert link.startswith("([") and link.endswith("))")
    replayed = list(client.responses.retrieve(final.id, stream=True))

    def without_deltas(kinds: list[str]) -> list[str]:
        return [kind for kind in kinds if not kind.endswith(".delta")]

    assert without_deltas([e.type for e in replayed]) == without_deltas(kinds)
    assert replayed[-1].response.output == final.output  # type: ignore[attr-defined]


def test_pages_survive_previous_response_id(
    serve: Callable[..., LiveServer], browsing: ServiceSettings
) -> None:
    """A second turn cites the page the first opened: the chain keeps its page stack."""
    encoding = load_encoding()
    first_turn = researcher()

    def script(prompt: Sequence[int]) -> list[int]:
        if not encoding.decode(list(prompt)).rsplit("<|start|>user<|message|>", 1)[1].startswith("since"):
            return first_turn(prompt)
        return completion(Message.assistant("Since 1911 【1†L4】.", channel="final"))

    client = serve(ScriptedEngine(script), settings=browsing).client()
    first = client.responses.create(model="scripted-model", input="steps?", tools=TOOLS)
    second = client.responses.create(
        model="scripted-model", input="since when?", tools=TOOLS, previous_response_id=first.id
    )
    [message] = second.output
    assert isinstance(message, ResponseOutputMessage) and message.content[0].type == "output_text"
    [citation] = message.content[0].annotations
    assert citation.url == "corpus://docs/lighthouse.md"  # type: ignore[union-attr]
    again = client.responses.create(model="scripted-model", input="since when?", tools=TOOLS)
    [uncited] = again.output  # a new chain has no page 1: the citation stays as written
    assert isinstance(uncited, ResponseOutputMessage) and uncited.content[0].type == "output_text"
    assert uncited.content[0].annotations == [] and "【1†L4】" in uncited.content[0].text


def test_a_failed_search_is_reported_and_the_loop_goes_on(
    serve: Callable[..., LiveServer], browsing: ServiceSettings
) -> None:
    engine = ScriptedEngine(researcher(query="zeppelin", answer="Nothing found."))
    client = serve(engine, settings=browsing).client()
    response = client.responses.create(model="scripted-model", input="zeppelins?", tools=TOOLS)
    search, message = response.output
    assert isinstance(search, ResponseFunctionWebSearch) and search.status == "failed"
    assert isinstance(message, ResponseOutputMessage) and response.status == "completed"
    assert "No results" in load_encoding().decode(engine.prompts[1])


def test_web_search_is_accepted_and_not_offered_without_a_browser(serve: Callable[..., LiveServer]) -> None:
    engine = ScriptedEngine(completion(Message.assistant("no browser here", channel="final")))
    server = serve(engine)
    response = server.client().responses.create(model="scripted-model", input="hi", tools=TOOLS)
    assert response.status == "completed" and response.tools[0].type == "web_search_preview"
    assert "## browser" not in load_encoding().decode(engine.prompts[0])
    models = server.client().models.list().model_dump(mode="json")["data"][0]
    assert "web_search_preview" in models["tool_types"]["accepted_not_offered"]


def test_a_browsing_server_lists_web_search_as_offered(
    serve: Callable[..., LiveServer], browsing: ServiceSettings
) -> None:
    model = serve(ScriptedEngine([]), settings=browsing).client().models.list().model_dump(mode="json")
    types = model["data"][0]["tool_types"]
    assert "web_search_preview" in types["offered"] and "web_search" in types["offered"]
    assert "web_search_preview" not in types["accepted_not_offered"]


def test_a_call_of_the_browser_the_request_does_not_offer_is_refused(
    serve: Callable[..., LiveServer], browsing: ServiceSettings
) -> None:
    """Without ``web_search`` in the request, a ``browser.search`` the model makes up runs
    nothing: the response fails as any call of a tool not offered does."""
    engine = ScriptedEngine(researcher())
    response = (
        serve(engine, settings=browsing)
        .client()
        .responses.create(
            model="scripted-model", input="steps?", tools=[{"type": "function", "name": "noop"}]
        )
    )
    assert not [item for item in response.output if item.type == "web_search_call"]
    assert len(engine.prompts) == 1
    with pytest.raises(openai.BadRequestError):
        serve(engine, settings=browsing).client().responses.create(
            model="scripted-model", input="x", tools=TOOLS, tool_choice={"type": "function", "name": "nope"}
        )


def test_a_background_response_runs_the_whole_loop(
    serve: Callable[..., LiveServer], browsing: ServiceSettings
) -> None:
    client = serve(ScriptedEngine(researcher(), delay=0.01), settings=browsing).client()
    created = client.responses.create(model="scripted-model", input="steps?", tools=TOOLS, background=True)
    assert created.status in ("queued", "in_progress")
    deadline = time.monotonic() + 30
    response = client.responses.retrieve(created.id)
    while response.status in ("queued", "in_progress") and time.monotonic() < deadline:
        time.sleep(0.05)
        response = client.responses.retrieve(created.id)
    assert response.status == "completed"
    assert [item.type for item in response.output] == ["web_search_call", "web_search_call", "message"]


def test_reasoning_summaries_are_written_between_the_calls(
    serve: Callable[..., LiveServer], browsing: ServiceSettings
) -> None:
    """``reasoning.summary`` through the agent loop: the reasoning before a hosted call gets
    its summary before the call's item opens."""
    from openchatml.responses.summary import INSTRUCTIONS

    encoding = load_encoding()
    research = researcher()

    def script(prompt: Sequence[int]) -> list[int]:
        text = encoding.decode(list(prompt))
        if INSTRUCTIONS["concise"] in text:
            return completion(Message.assistant("Planned a search.", channel="final"))
        if "<|start|>browser." in text:
            return research(prompt)
        thought = Message.assistant("I should search the corpus.", channel="analysis")
        return completion(thought, browser_call("search", {"query": "lighthouse keeper"}))

    client = serve(ScriptedEngine(script), settings=browsing).client()
    events = list(
        client.responses.create(
            model="scripted-model", input="steps?", tools=TOOLS, reasoning={"summary": "concise"}, stream=True
        )
    )
    final = events[-1].response  # type: ignore[attr-defined]
    assert final.status == "completed"
    assert [item.type for item in final.output] == [
        "reasoning",
        "web_search_call",
        "web_search_call",
        "message",
    ]
    assert [part.text for part in final.output[0].summary] == ["Planned a search."]
    kinds = [event.type for event in events]
    assert kinds.index("response.reasoning_summary_part.done") < kinds.index(
        "response.web_search_call.in_progress"
    )
