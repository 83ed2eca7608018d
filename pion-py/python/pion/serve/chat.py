"""A conversation as the chat template sees it, whichever API it came through.

Each API's request becomes a :class:`Conversation`: chat-template messages (``role``,
``content`` as text, ``tool_calls`` with ``arguments`` as an object,
``reasoning_content``, ``tool`` messages for results), tools in the
``{"type": "function", "function": {…}}`` form and the template's switches
(``enable_thinking``). Rendering goes through the model's own
``tokenizer.apply_chat_template``, so the token ids are exactly those the model was
trained on, and :meth:`Conversation.rerender` renders the conversation with a reply
appended, as the client will send it next time: what the prompt cache keeps is the
part the two renderings share.

**Volatile text.** A prefix cache only helps if the start of the prompt is the same
from one request to the next. Claude Code puts a per-request line into its system
prompt, ``x-anthropic-billing-header: cc_version=…; cc_entrypoint=…; cch=…;`` (a
hash that changes every request), which would make every prompt new from its first
tokens; :func:`strip_volatile` removes such lines before rendering (a local model has
no use for them).
"""

import dataclasses
import json
import re
from typing import Any, Dict, List, Optional

from .output import OutputParser, assistant_message

__all__ = ["Conversation", "strip_volatile", "RequestError", "text_of"]

_VOLATILE = re.compile(r"^x-anthropic-billing-header:[^\n]*(\n|$)", re.MULTILINE)


class RequestError(Exception):
    """A request the server refuses (HTTP ``status``; ``param`` names the field)."""

    def __init__(self, message: str, status: int = 400, param: Optional[str] = None, kind: str = "invalid_request_error"):
        super().__init__(message)
        self.message, self.status, self.param, self.kind = message, status, param, kind


def strip_volatile(text: str) -> str:
    """``text`` without per-request lines that defeat prefix caching (see the module
    documentation)."""
    return _VOLATILE.sub("", text)


def text_of(content: Any, what: str = "content", allowed: tuple = ("text",)) -> str:
    """The text of a message's content: a string, or a list of parts whose ``type``
    is in ``allowed`` (each with ``text``). Other part types are refused."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise RequestError(f"{what} must be a string or a list of content parts", param=what)
    out = []
    for part in content:
        if isinstance(part, str):
            out.append(part)
            continue
        if not isinstance(part, dict):
            raise RequestError(f"{what}: a content part must be an object", param=what)
        kind = part.get("type")
        if kind not in allowed:
            raise RequestError(f"{what}: content of type {kind!r} is not supported by this server (text only)", param=what)
        out.append(str(part.get("text", "")))
    return "".join(out)


def parse_arguments(raw: Any, what: str) -> Dict[str, Any]:
    """Tool-call arguments as an object (they arrive as JSON text or an object)."""
    if isinstance(raw, dict):
        return raw
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            raise RequestError(f"{what}: arguments are not valid JSON", param=what) from None
        if isinstance(value, dict):
            return value
    raise RequestError(f"{what}: arguments must be a JSON object", param=what)


@dataclasses.dataclass
class Conversation:
    """Messages, tools and template switches of one chat request."""

    messages: List[Dict[str, Any]]
    tools: Optional[List[Dict[str, Any]]] = None
    template_kwargs: Dict[str, Any] = dataclasses.field(default_factory=dict)

    def text(self, tokenizer: Any, add_generation_prompt: bool = True, extra: Optional[Dict[str, Any]] = None) -> str:
        """The rendered prompt text."""
        messages = [dict(m) for m in self.messages]
        if extra is not None:
            messages.append(extra)
        try:
            return tokenizer.apply_chat_template(
                messages,
                tools=self.tools or None,
                add_generation_prompt=add_generation_prompt,
                tokenize=False,
                **self.template_kwargs,
            )
        except Exception as e:  # a template that refuses the conversation
            raise RequestError(f"the model's chat template refused the conversation: {e}") from e

    def render(self, tokenizer: Any) -> List[int]:
        """The prompt's token ids (with the generation prompt)."""
        return tokenizer.encode(self.text(tokenizer), add_special_tokens=False)

    def opens_thinking(self, tokenizer: Any, prompt_text: str) -> bool:
        """Whether the rendered prompt ends inside a thinking block (templates that
        open ``<think>`` themselves)."""
        start = getattr(tokenizer, "think_start", None)
        return bool(start) and prompt_text.rstrip().endswith(start)

    def parser(self, tokenizer: Any, prompt_text: str) -> OutputParser:
        """An :class:`OutputParser` for this request's reply."""
        return OutputParser(tokenizer, self.opens_thinking(tokenizer, prompt_text), self.tools)

    def rerender(self, tokenizer: Any, prompt_text: str, reply: str) -> List[int]:
        """Token ids of the conversation with ``reply`` (the model's raw text) as its
        last assistant message, without a generation prompt. A template that refuses
        to render it raises :class:`RequestError` (the cache then keeps the prompt)."""
        parser = self.parser(tokenizer, prompt_text)
        segments = parser.feed(reply) + parser.close()
        text = self.text(tokenizer, add_generation_prompt=False, extra=assistant_message(segments))
        return tokenizer.encode(text, add_special_tokens=False)
