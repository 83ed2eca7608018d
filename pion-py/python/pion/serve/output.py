"""The model's text, split into what each API sends: text, thinking and tool calls.

Models write tool calls and thinking as markup in their text (``<tool_call>{…}
</tool_call>``, ``<think>…</think>`` for Qwen-family models; mlx-lm infers the
markers and the parser of each family from its chat template and vocabulary). A
:class:`OutputParser` takes the text as it streams and returns :class:`Segment`\\ s,
holding back only what may be the start of a marker, so text still streams token by
token. The same parser turns a whole reply into the assistant message that the next
request will carry, which is how the cache knows what the next turn looks like.
"""

import dataclasses
import json
import secrets
from typing import Any, Dict, List, Optional

__all__ = ["Segment", "OutputParser", "new_id", "assistant_message"]


def new_id(prefix: str) -> str:
    """A random id in the style of the APIs (``call_…``, ``toolu_…``, ``msg_…``)."""
    return prefix + secrets.token_hex(12)


@dataclasses.dataclass
class Segment:
    """``kind``: ``text``, ``thinking`` or ``tool_call`` (with ``name`` and
    ``arguments``, a JSON object as text)."""

    kind: str
    text: str = ""
    name: str = ""
    arguments: str = ""


class OutputParser:
    """Splits streamed model text. ``tokenizer`` is mlx-lm's ``TokenizerWrapper``
    (its ``think_start``/``think_end``, ``tool_call_start``/``tool_call_end`` and
    ``tool_parser``); ``thinking`` says the prompt already opened a thinking block;
    ``tools`` the request's tools (None: tool markup stays text)."""

    def __init__(self, tokenizer: Any, thinking: bool = False, tools: Optional[List[Dict[str, Any]]] = None):
        self.think = (tokenizer.think_start, tokenizer.think_end) if getattr(tokenizer, "has_thinking", False) else None
        has_tools = tools and getattr(tokenizer, "has_tool_calling", False)
        self.tool = (tokenizer.tool_call_start, tokenizer.tool_call_end) if has_tools else None
        self.tool_parser = tokenizer.tool_parser if has_tools else None
        self.tools = tools
        self.state = "thinking" if (thinking and self.think) else "text"
        self.buf = ""
        self.strip_next = False
        self.calls = 0

    def _openers(self) -> List[str]:
        out = []
        if self.tool:
            out.append(self.tool[0])
        if self.think and self.calls == 0:
            out.append(self.think[0])
        return out

    @staticmethod
    def _held(buf: str, markers: List[str]) -> int:
        """How many trailing characters of ``buf`` may start one of ``markers``."""
        hold = 0
        for m in markers:
            for k in range(min(len(m) - 1, len(buf)), 0, -1):
                if buf.endswith(m[:k]):
                    hold = max(hold, k)
                    break
        return hold

    def _emit(self, out: List[Segment], kind: str, text: str) -> None:
        if kind == "text" and self.strip_next:
            text = text.lstrip()
            if not text:
                return
            self.strip_next = False
        if not text:
            return
        if out and out[-1].kind == kind:
            out[-1].text += text
        else:
            out.append(Segment(kind, text))

    def feed(self, text: str) -> List[Segment]:
        """Segments complete after ``text`` was appended."""
        self.buf += text
        out: List[Segment] = []
        while True:
            if self.state == "text":
                openers = self._openers()
                found = [(self.buf.find(m), m) for m in openers if m in self.buf]
                if found:
                    at, m = min(found)
                    self._emit(out, "text", self.buf[:at])
                    self.buf = self.buf[at + len(m) :]
                    self.state = "tool" if self.tool and m == self.tool[0] else "thinking"
                    continue
                keep = self._held(self.buf, openers)
                self._emit(out, "text", self.buf[: len(self.buf) - keep])
                self.buf = self.buf[len(self.buf) - keep :]
                return out
            end = self.think[1] if self.state == "thinking" else self.tool[1]
            at = self.buf.find(end)
            if at >= 0:
                body, self.buf = self.buf[:at], self.buf[at + len(end) :]
                if self.state == "thinking":
                    self._emit(out, "thinking", body)
                else:
                    self._tool(out, body, closed=True)
                self.state, self.strip_next = "text", True
                continue
            if self.state == "thinking":
                keep = self._held(self.buf, [end])
                self._emit(out, "thinking", self.buf[: len(self.buf) - keep])
                self.buf = self.buf[len(self.buf) - keep :]
            return out

    def _tool(self, out: List[Segment], body: str, closed: bool) -> None:
        try:
            parsed = self.tool_parser(body, self.tools)
            calls = parsed if isinstance(parsed, list) else [parsed]
            segs = []
            for c in calls:
                args = c.get("arguments", {})
                if isinstance(args, str):
                    args = json.loads(args)
                if not isinstance(args, dict) or not isinstance(c.get("name"), str):
                    raise ValueError("not a function call")
                segs.append(Segment("tool_call", name=c["name"], arguments=json.dumps(args, ensure_ascii=False)))
        except (ValueError, TypeError, AttributeError, KeyError, json.JSONDecodeError):
            # Not a call after all (a truncated or malformed one): it stays text.
            raw = self.tool[0] + body + (self.tool[1] if closed else "")
            self._emit(out, "text", raw)
            return
        self.calls += len(segs)
        out.extend(segs)

    def close(self) -> List[Segment]:
        """What is left when the reply has ended."""
        out: List[Segment] = []
        if self.state == "text":
            self._emit(out, "text", self.buf)
        elif self.state == "thinking":
            self._emit(out, "thinking", self.buf)
        else:
            self._tool(out, self.buf, closed=False)
        self.buf, self.state = "", "text"
        return out


def assistant_message(segments: List[Segment]) -> Dict[str, Any]:
    """The chat-template message of a reply made of ``segments``."""
    text = "".join(s.text for s in segments if s.kind == "text")
    thinking = "".join(s.text for s in segments if s.kind == "thinking")
    msg: Dict[str, Any] = {"role": "assistant", "content": text}
    calls = [s for s in segments if s.kind == "tool_call"]
    if calls:
        msg["tool_calls"] = [
            {"type": "function", "function": {"name": c.name, "arguments": json.loads(c.arguments)}} for c in calls
        ]
    if thinking:
        msg["reasoning_content"] = thinking
    return msg
