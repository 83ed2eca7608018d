"""OpenAI's Responses API (``/v1/responses``), the one Codex speaks.

``instructions`` and ``input`` (a string, or items: messages with ``input_text`` /
``output_text`` parts, ``function_call`` and ``function_call_output`` items,
``reasoning`` items) become a :class:`pion.serve.chat.Conversation`; flat function
tools (``{"type": "function", "name": …, "parameters": …}``) become template tools.
A stream is the event sequence the API defines, each event with its
``sequence_number``: ``response.created`` and ``response.in_progress``; per output
item ``response.output_item.added`` … ``response.output_item.done`` — a
``reasoning`` item (``response.reasoning_text.*``), a ``message`` (with
``response.content_part.added``, ``response.output_text.delta``/``.done`` and
``response.content_part.done``), a ``function_call`` (with
``response.function_call_arguments.delta``/``.done``) — and ``response.completed``
(``response.incomplete`` when ``max_output_tokens`` ran out). During a long prefill,
``response.in_progress`` is sent again as a keep-alive. Usage has
``input_tokens_details.cached_tokens``. This server keeps no responses:
``previous_response_id`` is refused (send the whole input, as Codex does).
"""

import time
from typing import Any, AsyncIterator, Dict, List, Optional

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .app import Service, SSEResponse, WatchedResponse, read_json, sse
from .chat import Conversation, RequestError, parse_arguments, strip_volatile, text_of
from .openai_api import sampling_from, thinking_kwargs
from .output import Segment, new_id
from .worker import Sampling

__all__ = ["responses", "conversation_from"]

_PARTS = ("input_text", "output_text", "text", "refusal")


def _tools(body: Dict[str, Any]) -> Optional[List[Dict[str, Any]]]:
    choice = body.get("tool_choice")
    if choice not in (None, "auto", "none"):
        raise RequestError("tool_choice: only \"auto\" and \"none\" are supported (a local model cannot be forced to "
                           "call a tool)", param="tool_choice")
    tools = body.get("tools")
    if not tools or choice == "none":
        return None
    out = []
    for i, t in enumerate(tools):
        if not isinstance(t, dict) or t.get("type") != "function" or not isinstance(t.get("name"), str):
            kind = t.get("type") if isinstance(t, dict) else None
            raise RequestError(f"tools[{i}]: tools of type {kind!r} are not supported (function tools only)",
                               param=f"tools[{i}]")
        out.append({"type": "function", "function": {
            "name": t["name"], "description": t.get("description") or "",
            "parameters": t.get("parameters") or {"type": "object", "properties": {}}}})
    return out


def _items(value: Any) -> List[Dict[str, Any]]:
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if not isinstance(value, list) or not value:
        raise RequestError("input must be a string or a non-empty list of items", param="input")
    messages: List[Dict[str, Any]] = []

    def assistant() -> Dict[str, Any]:
        # Consecutive output items (reasoning, text, calls) are one assistant turn.
        if not messages or messages[-1]["role"] != "assistant" or messages[-1].get("_closed"):
            messages.append({"role": "assistant", "content": ""})
        return messages[-1]

    for i, item in enumerate(value):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise RequestError(f"{where} must be an object", param=where)
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            text = text_of(item.get("content"), where, _PARTS)
            if role in ("system", "developer"):
                messages.append({"role": "system", "content": strip_volatile(text)})
            elif role == "user":
                messages.append({"role": "user", "content": text})
            elif role == "assistant":
                msg = assistant()
                if msg.get("tool_calls"):
                    msg["_closed"] = True
                    msg = assistant()
                msg["content"] += text
            else:
                raise RequestError(f"{where}: role {role!r} is not supported", param=where)
        elif kind == "function_call":
            msg = assistant()
            msg.setdefault("tool_calls", []).append({"type": "function", "id": item.get("call_id"), "function": {
                "name": str(item.get("name", "")), "arguments": parse_arguments(item.get("arguments"), where)}})
        elif kind == "function_call_output":
            out = item.get("output")
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"),
                             "content": out if isinstance(out, str) else text_of(out, where, _PARTS)})
        elif kind == "reasoning":
            parts = item.get("content") or item.get("summary") or []
            text = "".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))
            msg = assistant()
            msg["reasoning_content"] = msg.get("reasoning_content", "") + text
        else:
            raise RequestError(f"{where}: items of type {kind!r} are not supported by this server", param=where)
    for m in messages:
        m.pop("_closed", None)
    return messages


def conversation_from(body: Dict[str, Any]) -> Conversation:
    """A Responses request as a conversation."""
    if body.get("previous_response_id"):
        raise RequestError("previous_response_id: this server keeps no responses; send the whole conversation as "
                           "input", param="previous_response_id")
    messages = _items(body.get("input"))
    instructions = body.get("instructions")
    if instructions:
        if not isinstance(instructions, str):
            raise RequestError("instructions must be a string", param="instructions")
        messages.insert(0, {"role": "system", "content": strip_volatile(instructions)})
    effort = (body.get("reasoning") or {}).get("effort") if isinstance(body.get("reasoning"), dict) else None
    return Conversation(messages, _tools(body), thinking_kwargs(effort))


def _refuse(body: Dict[str, Any]) -> None:
    fmt = ((body.get("text") or {}).get("format")) if isinstance(body.get("text"), dict) else None
    if fmt is not None and fmt.get("type") != "text":
        raise RequestError("text.format: only {\"type\": \"text\"} is supported", param="text.format")
    if body.get("background"):
        raise RequestError("background responses are not supported by this server", param="background")
    if body.get("top_logprobs"):
        raise RequestError("top_logprobs is not supported by this server", param="top_logprobs")


def _usage(prompt: int, cached: int, output: int) -> Dict[str, Any]:
    return {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + output}


class _Builder:
    """The response object and its output items, as the events build them."""

    def __init__(self, body: Dict[str, Any], model: str, sampling: Sampling, tools: Optional[List[Dict[str, Any]]]):
        self.id = new_id("resp_")
        self.created = int(time.time())
        self.output: List[Dict[str, Any]] = []
        self.base = {
            "id": self.id, "object": "response", "created_at": self.created, "model": model,
            "instructions": body.get("instructions"), "metadata": body.get("metadata") or {},
            "parallel_tool_calls": body.get("parallel_tool_calls", True) is not False,
            "temperature": sampling.temperature, "top_p": sampling.top_p,
            "max_output_tokens": body.get("max_output_tokens"), "previous_response_id": None,
            "reasoning": body.get("reasoning") or {"effort": None, "summary": None},
            "store": False, "text": {"format": {"type": "text"}},
            "tool_choice": body.get("tool_choice") or "auto",
            "tools": body.get("tools") or [], "truncation": "disabled", "error": None,
            "incomplete_details": None, "user": body.get("user"),
        }
        self.usage: Optional[Dict[str, Any]] = None
        self.status = "in_progress"

    def response(self) -> Dict[str, Any]:
        r = dict(self.base, status=self.status, output=self.output, usage=self.usage)
        if self.status == "incomplete":
            r["incomplete_details"] = {"reason": "max_output_tokens"}
        return r


def _item(seg: Segment, status: str) -> Dict[str, Any]:
    if seg.kind == "text":
        return {"type": "message", "id": new_id("msg_"), "status": status, "role": "assistant", "content": []}
    if seg.kind == "thinking":
        return {"type": "reasoning", "id": new_id("rs_"), "summary": [], "content": [], "status": status}
    return {"type": "function_call", "id": new_id("fc_"), "call_id": new_id("call_"), "name": seg.name,
            "arguments": "", "status": status}


async def responses(service: Service, request: Request) -> Response:
    """``POST /v1/responses``."""
    body = await read_json(request)
    _refuse(body)
    conv = conversation_from(body)
    sampling = sampling_from(service, body, "max_output_tokens")
    job, prompt_text = await service.chat_job(conv, sampling)
    tok = service.tokenizer
    b = _Builder(body, body.get("model") or service.model_id, sampling, conv.tools)
    single = body.get("parallel_tool_calls") is False

    if not body.get("stream"):

        async def make() -> Response:
            out = await service.run(job)
            parser = conv.parser(tok, prompt_text)
            calls = 0
            for s in parser.feed(out["text"]) + parser.close():
                if s.kind == "tool_call":
                    if single and calls:
                        continue
                    calls += 1
                item = _item(s, "completed")
                if s.kind == "text":
                    item["content"] = [{"type": "output_text", "text": s.text, "annotations": [], "logprobs": []}]
                elif s.kind == "thinking":
                    item["content"] = [{"type": "reasoning_text", "text": s.text}]
                else:
                    item["arguments"] = s.arguments
                b.output.append(item)
            done = out["done"]
            b.status = "incomplete" if done.reason == "length" else "completed"
            b.usage = _usage(len(job.prompt), out["started"].cached, done.completion_tokens)
            return JSONResponse(b.response())

        return WatchedResponse(make, job.cancelled.set)

    async def stream() -> AsyncIterator[bytes]:
        seq = 0
        parser = conv.parser(tok, prompt_text)
        current: Optional[Dict[str, Any]] = None
        kind: Optional[str] = None
        text = ""
        cached, calls = 0, 0

        def event(kind: str, **fields: Any) -> bytes:
            nonlocal seq
            data = {"type": kind, "sequence_number": seq, **fields}
            seq += 1
            return sse(data, kind)

        def close() -> List[bytes]:
            nonlocal current, kind, text
            if current is None:
                return []
            idx, out = len(b.output) - 1, []
            if kind == "text":
                part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
                out.append(event("response.output_text.done", item_id=current["id"], output_index=idx,
                                 content_index=0, text=text, logprobs=[]))
                out.append(event("response.content_part.done", item_id=current["id"], output_index=idx,
                                 content_index=0, part=part))
                current["content"] = [part]
            elif kind == "thinking":
                out.append(event("response.reasoning_text.done", item_id=current["id"], output_index=idx,
                                 content_index=0, text=text))
                current["content"] = [{"type": "reasoning_text", "text": text}]
            current["status"] = "completed"
            out.append(event("response.output_item.done", output_index=idx, item=current))
            current, kind, text = None, None, ""
            return out

        yield event("response.created", response=b.response())
        yield event("response.in_progress", response=b.response())
        async for ev in service.events(job):
            if ev is None:
                yield event("response.in_progress", response=b.response())
                continue
            if ev.kind == "started":
                cached = ev.cached
                continue
            if ev.kind == "error":
                b.status = "failed"
                r = b.response()
                r["error"] = {"code": "server_error", "message": f"generation failed: {ev.message}"}
                yield event("response.failed", response=r)
                return
            for s in parser.feed(ev.text) if ev.kind == "text" else parser.close():
                if s.kind == "tool_call" and single and calls:
                    continue
                if s.kind != kind or s.kind == "tool_call":
                    for chunk in close():
                        yield chunk
                    current, kind = _item(s, "in_progress"), s.kind
                    b.output.append(current)
                    idx = len(b.output) - 1
                    yield event("response.output_item.added", output_index=idx, item=dict(current))
                    if s.kind == "text":
                        yield event("response.content_part.added", item_id=current["id"], output_index=idx,
                                    content_index=0, part={"type": "output_text", "text": "", "annotations": [],
                                                           "logprobs": []})
                idx = len(b.output) - 1
                if s.kind == "text":
                    text += s.text
                    yield event("response.output_text.delta", item_id=current["id"], output_index=idx,
                                content_index=0, delta=s.text, logprobs=[])
                elif s.kind == "thinking":
                    text += s.text
                    yield event("response.reasoning_text.delta", item_id=current["id"], output_index=idx,
                                content_index=0, delta=s.text)
                else:
                    calls += 1
                    yield event("response.function_call_arguments.delta", item_id=current["id"], output_index=idx,
                                delta=s.arguments)
                    yield event("response.function_call_arguments.done", item_id=current["id"], output_index=idx,
                                name=s.name, arguments=s.arguments)
                    current["arguments"] = s.arguments
                    for chunk in close():
                        yield chunk
            if ev.kind == "done":
                for chunk in close():
                    yield chunk
                b.status = "incomplete" if ev.reason == "length" else "completed"
                b.usage = _usage(len(job.prompt), cached, ev.completion_tokens)
                yield event("response.incomplete" if b.status == "incomplete" else "response.completed",
                            response=b.response())
                return

    return SSEResponse(stream(), job.cancelled.set)
