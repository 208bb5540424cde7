"""Prometheus metrics of the server (``GET /metrics``), in a registry of its own."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from ..responses.resource import Usage

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    """Counters of requests, responses and tokens; latency histograms."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "openchatml_http_requests", "HTTP requests by route and status.", ["route", "status"], registry=r
        )
        self.responses = Counter("openchatml_responses", "Responses by final status.", ["status"], registry=r)
        self.stream_failures = Counter(
            "openchatml_stream_failures",
            "Streams ended by an error of the server while writing them (an error event, then "
            "response.failed).",
            registry=r,
        )
        self.running = Gauge("openchatml_responses_running", "Responses being generated.", registry=r)
        self.queued = Gauge("openchatml_responses_queued", "Responses waiting for the engine.", registry=r)
        self.input_tokens = Counter("openchatml_input_tokens", "Prompt tokens.", registry=r)
        self.output_tokens = Counter("openchatml_output_tokens", "Sampled tokens.", registry=r)
        self.reasoning_tokens = Counter(
            "openchatml_reasoning_tokens", "Sampled reasoning tokens.", registry=r
        )
        self.ttft = Histogram(
            "openchatml_time_to_first_delta_seconds", "Time to the first delta.", registry=r
        )
        self.duration = Histogram("openchatml_response_seconds", "Time to generate a response.", registry=r)

    def started(self) -> None:
        """A response started."""
        self.running.inc()

    def finished(
        self, status: str, usage: Usage, ttft: float | None, seconds: float, *, running: bool = True
    ) -> None:
        """A response ended with ``status`` after ``seconds`` (``running``: it had started
        generating; a response cancelled while queued had not)."""
        if running:
            self.running.dec()
        self.responses.labels(status).inc()
        self.input_tokens.inc(usage.input_tokens)
        self.output_tokens.inc(usage.output_tokens)
        self.reasoning_tokens.inc(usage.reasoning_tokens)
        if ttft is not None:
            self.ttft.observe(ttft)
        self.duration.observe(seconds)

    def render(self) -> bytes:
        """The text exposition format."""
        return generate_latest(self.registry)
