"""The Open Responses server: ``openchatml serve``.

``build(config)`` opens the engine and store a :class:`~.config.ServerConfig` names and
returns the ASGI app; ``serve(config)`` runs it with uvicorn until interrupted.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import Callable

from fastapi import FastAPI

from ..engines.base import EngineError
from ..responses.crypto import Sealer
from ..responses.dialect import TemplateDialect
from ..responses.input import PromptSettings
from .admission import Admission
from .app import create_app
from .auth import KeyChecker
from .config import ConfigError, ServerConfig, open_engine, open_store, sealing_key
from .limits import Limits
from .service import ResponseService
from .settings import ServiceSettings

__all__ = ["ConfigError", "ServerConfig", "build", "serve"]


async def build(config: ServerConfig, *, say: Callable[[str], None] = lambda line: None) -> FastAPI:
    """The app for ``config``: engine loaded, store opened (responses that stopped servers
    left unfinished marked failed, expired ones evicted). Raises :class:`ConfigError`."""
    say(f"loading model {config.model if not config.upstream else config.upstream} …")
    engine = await open_engine(config)
    store = open_store(config)
    if store is not None:
        await store.open()
        interrupted = await store.interrupt_unfinished()
        evicted = await store.evict(int(time.time()))
        if interrupted or evicted:
            say(f"store: {interrupted} left by stopped servers marked failed, {evicted} expired removed")
    try:
        dialect = TemplateDialect.of_engine(engine)
    except EngineError as exc:
        await engine.aclose()
        hint = "Serve a gpt-oss model, or one whose chat template can be analysed."
        raise ConfigError(f"{exc}. {hint}") from None
    if dialect is not None:
        fmt = dialect.format
        say(f"chat template: {fmt.tools.syntax.value} tool calls, reasoning {fmt.reasoning.mode.value}")
    service = ResponseService(
        engine,
        store,
        dialect=dialect,
        sealer=Sealer(sealing_key(config.home)),
        settings=ServiceSettings(
            prompt=PromptSettings(),
            limits=config.request_limits,
            ttl_seconds=config.ttl_seconds,
            wire=config.wire,
            default_max_output_tokens=config.default_max_output_tokens,
        ),
        admission=Admission(config.running_limit(), config.max_queued, config.max_per_key),
    )

    async def shutdown() -> None:
        await engine.aclose()
        if store is not None:
            await store.close()

    return create_app(
        service,
        keys=KeyChecker(config.api_keys),
        limits=Limits(
            config.max_body_bytes,
            config.requests_per_minute,
            auth_failures_per_minute=config.auth_failures_per_minute,
        ),
        on_shutdown=shutdown,
    )


def serve(config: ServerConfig) -> int:
    """Run the server until interrupted (Ctrl-C or SIGTERM: a graceful stop, status 0);
    the exit status (2 when the configuration cannot be served)."""
    import uvicorn

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    async def main() -> int:
        try:
            app = await build(config, say=say)
        except ConfigError as exc:
            say(f"error: {exc}")
            return 2
        info = app.state.service.engine.info
        store = app.state.service.store
        where = f"{info.engine}, {info.device}" if info.device else info.engine
        keys = ", API keys required" if config.api_keys else ""
        say(
            f"openchatml serving {info.id} ({where}) on http://{config.host}:{config.port}/v1/responses"
            f" — store: {store if store is not None else 'none'}{keys}"
        )
        options = app.state.limits.uvicorn_options()
        server = uvicorn.Server(
            uvicorn.Config(app, host=config.host, port=config.port, log_level="warning", **options)
        )
        await server.serve()
        return 0

    def terminate(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    # uvicorn shuts down gracefully on SIGINT / SIGTERM, then raises the signal again:
    # both end here as a clean exit.
    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        return asyncio.run(main())
    except KeyboardInterrupt:
        say("openchatml stopped")
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
