"""The HTTP side of ``pion serve``: routes, authentication, errors, streaming.

A Starlette application (ASGI, served by uvicorn). Each API's module turns a request
into a :class:`pion.serve.worker.Job` and the worker's events into its own JSON or
server-sent events; this module holds what they share:

- :class:`Service`: submits jobs and yields their events, with ``None`` every
  ``keepalive`` seconds of silence (a long prefill, a queue) so that a stream can send
  its API's keep-alive (``ping``, ``response.in_progress``, an SSE comment);
- responses that watch the connection: a client that disconnects cancels its job,
  streaming or not;
- authentication (``x-api-key`` or ``Authorization: Bearer`` when a key is set) and
  errors in the format of the API a path belongs to. Routing looks at the path only
  (Claude Code posts to ``/v1/messages?beta=true``).
"""

import asyncio
import hmac
import json
import time
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, List, Optional

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .chat import Conversation, RequestError
from .worker import Event, Job, Sampling, Worker

__all__ = ["Service", "create_app", "SSEResponse", "WatchedResponse", "openai_error", "anthropic_error"]


# ---- errors ------------------------------------------------------------------------

_ANTHROPIC_KINDS = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                    404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
                    500: "api_error", 529: "overloaded_error"}
_OPENAI_KINDS = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error",
                 500: "server_error"}


def openai_error(message: str, status: int = 400, param: Optional[str] = None, code: Optional[str] = None) -> JSONResponse:
    """An error in the OpenAI API's format."""
    body = {"error": {"message": message, "type": _OPENAI_KINDS.get(status, "invalid_request_error"),
                      "param": param, "code": code}}
    return JSONResponse(body, status_code=status)


def anthropic_error(message: str, status: int = 400) -> JSONResponse:
    """An error in the Anthropic API's format."""
    body = {"type": "error", "error": {"type": _ANTHROPIC_KINDS.get(status, "api_error"), "message": message}}
    return JSONResponse(body, status_code=status)


def _is_anthropic(path: str) -> bool:
    return path.rstrip("/").startswith("/v1/messages")


def error_for(path: str, message: str, status: int, param: Optional[str] = None, code: Optional[str] = None) -> JSONResponse:
    """An error in the format of the API that ``path`` belongs to."""
    if _is_anthropic(path):
        return anthropic_error(message, status)
    return openai_error(message, status, param, code)


async def read_json(request: Request) -> Dict[str, Any]:
    """The request body as a JSON object (a :class:`RequestError` otherwise)."""
    raw = await request.body()
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RequestError(f"the request body is not valid JSON: {e}") from None
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object")
    return body


# ---- the bridge to the worker ------------------------------------------------------


class Service:
    """What the routes share: the worker (model, tokenizer, cache), the model's
    name, the keep-alive interval, the reply-length limit and the API key."""

    def __init__(self, worker: Worker, model_id: str, keepalive: float = 5.0, max_tokens: int = 8192,
                 api_key: Optional[str] = None, cache_where: str = ""):
        self.worker, self.model_id, self.keepalive = worker, model_id, keepalive
        self.max_tokens, self.api_key, self.cache_where = max_tokens, api_key, cache_where
        self.created = int(time.time())

    @property
    def tokenizer(self) -> Any:
        """mlx-lm's tokenizer wrapper of the loaded model."""
        return self.worker.tokenizer

    def reply_limit(self, requested: Optional[int], what: str) -> int:
        """The reply's token limit: the request's, at most the server's."""
        if requested is None:
            return self.max_tokens
        if not isinstance(requested, int) or isinstance(requested, bool) or requested < 1:
            raise RequestError(f"{what} must be a positive integer", param=what)
        return min(requested, self.max_tokens)

    async def events(self, job: Job) -> AsyncIterator[Optional[Event]]:
        """Submits ``job`` and yields its events, ``None`` after each ``keepalive``
        seconds without one; cancels the job if the consumer stops early."""
        loop = asyncio.get_running_loop()
        q: "asyncio.Queue[Event]" = asyncio.Queue()
        job.emit = lambda ev: loop.call_soon_threadsafe(q.put_nowait, ev)
        self.worker.submit(job)
        finished = False
        try:
            while True:
                try:
                    ev = await asyncio.wait_for(q.get(), timeout=self.keepalive)
                except asyncio.TimeoutError:
                    yield None
                    continue
                if ev.kind in ("done", "error"):
                    finished = True
                yield ev
                if finished:
                    return
        finally:
            if not finished:
                job.cancelled.set()

    async def run(self, job: Job) -> Dict[str, Any]:
        """Runs ``job`` to its end: ``{"text", "started", "done"}`` (an ``error``
        event becomes a :class:`RequestError` with status 500)."""
        text: List[str] = []
        started = done = None
        async for ev in self.events(job):
            if ev is None:
                continue
            if ev.kind == "started":
                started = ev
            elif ev.kind == "text":
                text.append(ev.text)
            elif ev.kind == "error":
                raise RequestError(f"generation failed: {ev.message}", status=500, kind="api_error")
            elif ev.kind == "done":
                done = ev
        return {"text": "".join(text), "started": started, "done": done}

    async def render(self, fn: Callable[[], Any]) -> Any:
        """Runs template rendering / tokenising off the event loop."""
        return await anyio.to_thread.run_sync(fn)

    async def chat_job(self, conv: Conversation, sampling: Sampling) -> "tuple[Job, str]":
        """A job for a chat conversation (rendered with the model's template), with
        the re-rendering the cache needs; also returns the prompt text."""
        tok = self.tokenizer

        def prepare() -> "tuple[str, List[int]]":
            text = conv.text(tok)
            return text, tok.encode(text, add_special_tokens=False)

        text, prompt = await self.render(prepare)
        if not prompt:
            raise RequestError("the conversation renders to no tokens")
        job = Job(prompt, sampling, emit=lambda ev: None, rerender=lambda reply: conv.rerender(tok, text, reply),
                  thinking_open=conv.opens_thinking(tok, text))
        return job, text


# ---- responses that watch the connection --------------------------------------------


async def _until_disconnect(receive: Callable[[], Awaitable[Dict[str, Any]]]) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


class SSEResponse(Response):
    """Server-sent events from an async iterator of ``bytes``; a client that
    disconnects stops the iterator and calls ``cancel`` (which cancels its job) at
    once."""

    media_type = "text/event-stream"

    def __init__(self, chunks: AsyncIterator[bytes], cancel: Callable[[], None]):
        # No body of its own: headers without a Content-Length (as StreamingResponse).
        self.status_code, self.background = 200, None
        self.init_headers({"cache-control": "no-cache", "x-accel-buffering": "no"})
        self.chunks, self.cancel = chunks, cancel

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async with anyio.create_task_group() as tg:

            async def stream() -> None:
                try:
                    await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
                    async for chunk in self.chunks:
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                except OSError:
                    pass  # the client went away
                except Exception:  # a bug in a stream: log it, end the stream
                    import sys
                    import traceback

                    traceback.print_exc(file=sys.stderr)
                finally:
                    self.cancel()
                    with anyio.CancelScope(shield=True):
                        await self.chunks.aclose()
                tg.cancel_scope.cancel()

            async def watch() -> None:
                await _until_disconnect(receive)
                tg.cancel_scope.cancel()

            tg.start_soon(stream)
            tg.start_soon(watch)


class WatchedResponse(Response):
    """A JSON response computed by ``make`` (a coroutine function returning a
    ``Response``) while the connection is watched: a disconnect cancels it and calls
    ``cancel`` (which cancels the job; after the job's end it does nothing)."""

    def __init__(self, make: Callable[[], Awaitable[Response]], cancel: Callable[[], None]):
        super().__init__()
        self.make, self.cancel = make, cancel

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        result: List[Response] = []
        async with anyio.create_task_group() as tg:

            async def compute() -> None:
                try:
                    result.append(await self.make())
                except RequestError as e:
                    result.append(error_for(scope["path"], e.message, e.status, e.param))
                finally:
                    self.cancel()
                tg.cancel_scope.cancel()

            async def watch() -> None:
                await _until_disconnect(receive)
                tg.cancel_scope.cancel()

            tg.start_soon(compute)
            tg.start_soon(watch)
        if result:
            await result[0](scope, receive, send)


def sse(data: Any, event: Optional[str] = None) -> bytes:
    """One server-sent event (``data`` as JSON unless it is already text)."""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return (head + f"data: {payload}\n\n").encode()


# ---- the application ---------------------------------------------------------------


def _authorized(service: Service, request: Request) -> bool:
    if not service.api_key:
        return True
    given = request.headers.get("x-api-key")
    auth = request.headers.get("authorization", "")
    if given is None and auth.lower().startswith("bearer "):
        given = auth[7:].strip()
    return given is not None and hmac.compare_digest(given.encode(), service.api_key.encode())


def create_app(service: Service) -> Starlette:
    """The ASGI application serving every endpoint for ``service``."""
    from . import anthropic_api, openai_api, responses_api

    def endpoint(handler: Callable[[Service, Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        async def run(request: Request) -> Response:
            path = request.url.path
            if not _authorized(service, request):
                return error_for(path, "invalid API key (send it as x-api-key or Authorization: Bearer)", 401,
                                 code="invalid_api_key")
            try:
                return await handler(service, request)
            except RequestError as e:
                return error_for(path, e.message, e.status, e.param)

        return run

    async def health(request: Request) -> Response:
        w = service.worker
        return JSONResponse({
            "status": "ok",
            "model": service.model_id,
            "cache": service.cache_where,
            "queued": w.queued,
            "busy": w.busy,
            "stats": w.stats,
            "last": w.last,
            "prompt_cache": w.cache.info(),
        })

    async def models(service: Service, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [
            {"id": service.model_id, "object": "model", "created": service.created, "owned_by": "pion"}]})

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/v1/models", endpoint(models), methods=["GET"]),
        Route("/v1/chat/completions", endpoint(openai_api.chat_completions), methods=["POST"]),
        Route("/v1/completions", endpoint(openai_api.completions), methods=["POST"]),
        Route("/v1/responses", endpoint(responses_api.responses), methods=["POST"]),
        Route("/v1/messages", endpoint(anthropic_api.messages), methods=["POST"]),
        Route("/v1/messages/count_tokens", endpoint(anthropic_api.count_tokens), methods=["POST"]),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        if status == 405:
            return error_for(request.url.path, f"method {request.method} not allowed on {request.url.path}", 405)
        return error_for(request.url.path, f"no route {request.method} {request.url.path}", 404)

    async def server_error(request: Request, exc: Exception) -> Response:
        return error_for(request.url.path, f"internal error: {type(exc).__name__}: {exc}", 500)

    return Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found, 500: server_error})
