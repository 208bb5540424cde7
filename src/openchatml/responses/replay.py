"""The event stream of a response that already ended, rebuilt from its snapshot.

``replay_events(snapshot)`` gives what a live stream would have sent, with each item's
text in a single delta (an ``output_text`` delta carrying all of the part's
``logprobs``): ``response.created``, ``response.in_progress``, every item's
lifecycle (a reasoning item's summary parts after its content), then the terminal
event. ``starting_after`` drops events up to that sequence number, so a client can
resume.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

_TERMINAL_EVENT = {
    "completed": "response.completed",
    "incomplete": "response.incomplete",
    "cancelled": "response.incomplete",
    "failed": "response.failed",
}


def _item_events(index: int, item: dict[str, Any]) -> Iterator[dict[str, Any]]:
    kind = item.get("type")
    added = {**item, "status": "in_progress"}
    common = {"item_id": item.get("id", ""), "output_index": index}
    if kind == "function_call":
        yield {
            "type": "response.output_item.added",
            "output_index": index,
            "item": {**added, "arguments": ""},
        }
        yield {"type": "response.function_call_arguments.delta", **common, "delta": item["arguments"]}
        yield {
            "type": "response.function_call_arguments.done",
            **common,
            "name": item["name"],
            "arguments": item["arguments"],
        }
    elif kind in ("message", "reasoning"):
        parts = item.get("content") or []
        yield {"type": "response.output_item.added", "output_index": index, "item": {**added, "content": []}}
        for c, part in enumerate(parts):
            text = part.get("text", "")
            delta, done = (
                ("response.output_text.delta", "response.output_text.done")
                if kind == "message"
                else ("response.reasoning.delta", "response.reasoning.done")
            )
            added = {**part, "text": ""}
            if "logprobs" in part:
                added["logprobs"] = []
            yield {"type": "response.content_part.added", **common, "content_index": c, "part": added}
            extra: dict[str, Any] = {"logprobs": part.get("logprobs") or []} if kind == "message" else {}
            yield {"type": delta, **common, "content_index": c, "delta": text, **extra}
            yield {"type": done, **common, "content_index": c, "text": text, **extra}
            yield {"type": "response.content_part.done", **common, "content_index": c, "part": part}
        for i, part in enumerate(item.get("summary") or [] if kind == "reasoning" else []):
            text = part.get("text", "")
            summary = {**common, "summary_index": i}
            yield {"type": "response.reasoning_summary_part.added", **summary, "part": {**part, "text": ""}}
            yield {"type": "response.reasoning_summary_text.delta", **summary, "delta": text}
            yield {"type": "response.reasoning_summary_text.done", **summary, "text": text}
            yield {"type": "response.reasoning_summary_part.done", **summary, "part": part}
    else:
        yield {"type": "response.output_item.added", "output_index": index, "item": added}
    yield {"type": "response.output_item.done", "output_index": index, "item": item}


def replay_events(snapshot: dict[str, Any], *, starting_after: int | None = None) -> list[dict[str, Any]]:
    """Events of a finished response from its snapshot, numbered from 0."""
    early = {
        **snapshot,
        "status": "in_progress",
        "output": [],
        "usage": None,
        "completed_at": None,
        "error": None,
        "incomplete_details": None,
    }
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": early},
        {"type": "response.in_progress", "response": early},
    ]
    for index, item in enumerate(snapshot.get("output") or []):
        events.extend(_item_events(index, item))
    status = snapshot.get("status", "completed")
    if status == "failed":
        error = snapshot.get("error") or {}
        events.append(
            {
                "type": "error",
                "error": {
                    "type": "server_error",
                    "code": error.get("code"),
                    "message": error.get("message", ""),
                    "param": None,
                },
            }
        )
    events.append({"type": _TERMINAL_EVENT.get(status, "response.completed"), "response": snapshot})
    out = [
        {"type": e["type"], "sequence_number": n, **{k: v for k, v in e.items() if k != "type"}}
        for n, e in enumerate(events)
    ]
    if starting_after is not None:
        out = [e for e in out if e["sequence_number"] > starting_after]
    return out
