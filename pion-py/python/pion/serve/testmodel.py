"""A tiny model folder that ``mlx_lm.load`` reads, built in code.

Tests, the demo and the benchmark need a model that is there without a download. The
folder holds what a real checkpoint holds: ``config.json`` (the architecture's own
arguments), ``model.safetensors`` (random weights from :mod:`pion.mlx.random_models`,
so that different prompts give different answers), a byte-level ``tokenizer.json``
(one token per byte, so every text round-trips, plus ChatML's special tokens and the
tool-call and thinking markers as tokens of their own) and ``tokenizer_config.json``
with a ChatML chat template that renders tools, tool calls, tool results and thinking
the way Qwen-family models do. mlx-lm infers its JSON tool parser and the
``<think>`` markers from it, as it does for those models.
"""

import dataclasses
import json
import os
from typing import Any, Dict, List, Optional

__all__ = ["CHAT_TEMPLATE", "SPECIAL_TOKENS", "MARKER_TOKENS", "build_model_folder", "byte_tokenizer"]

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
"""ChatML's control tokens (never produced by encoding plain text)."""
MARKER_TOKENS = ["<tool_call>", "</tool_call>", "<think>", "</think>"]
"""Markers that are single tokens, as in Qwen's vocabularies."""

CHAT_TEMPLATE = r"""{%- macro render(content) -%}
{%- if content is string -%}{{ content }}{%- elif content -%}{%- for part in content -%}{{ part.text if part.text is defined else '' }}{%- endfor -%}{%- endif -%}
{%- endmacro -%}
{%- if tools %}<|im_start|>system
{% if messages and messages[0].role == 'system' %}{{ render(messages[0].content) }}

{% endif %}# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
{% elif messages and messages[0].role == 'system' %}<|im_start|>system
{{ render(messages[0].content) }}<|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'system' %}
{%- if not loop.first %}<|im_start|>system
{{ render(message.content) }}<|im_end|>
{% endif %}
{%- elif message.role == 'user' %}<|im_start|>user
{{ render(message.content) }}<|im_end|>
{% elif message.role == 'assistant' %}<|im_start|>assistant
{% if message.reasoning_content %}<think>
{{ message.reasoning_content }}
</think>

{% endif %}{{ render(message.content) }}
{%- for tc in message.tool_calls or [] %}
{%- set tool_call = tc.function if tc.function is defined else tc %}
{%- if loop.first and render(message.content) %}
{% endif %}<tool_call>
{"name": "{{ tool_call.name }}", "arguments": {{ tool_call.arguments | tojson }}}
</tool_call>
{%- endfor %}<|im_end|>
{% elif message.role == 'tool' %}<|im_start|>user
<tool_response>
{{ render(message.content) }}
</tool_response><|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% if enable_thinking is defined and enable_thinking %}<think>
{% endif %}
{%- endif %}"""
"""ChatML with tools (Qwen's markup); ``enable_thinking`` opens a ``<think>`` block."""


def _bytes_to_unicode() -> Dict[int, str]:
    """The printable character byte-level BPE uses for each byte (GPT-2's table)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    chars = list(printable)
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(printable, (chr(c) for c in chars)))


def byte_tokenizer() -> Any:
    """A ``tokenizers.Tokenizer``: token id = byte value for 0..255, then
    :data:`SPECIAL_TOKENS` and :data:`MARKER_TOKENS`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    table = _bytes_to_unicode()
    vocab = {table[b]: b for b in range(256)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(SPECIAL_TOKENS)
    tok.add_tokens(MARKER_TOKENS)
    return tok


def _model(arch: str, seed: int, vocab: int, options: Dict[str, Any]) -> Any:
    from pion.mlx import random_models

    return random_models.BUILDERS[arch](seed=seed, vocab=vocab, **options)


def build_model_folder(path: str, arch: str = "llama", seed: int = 0, chat_template: Optional[str] = None,
                       **options: Any) -> str:
    """Writes a loadable model folder at ``path`` (created if missing) and returns it.

    ``arch`` is one of :data:`pion.mlx.random_models.BUILDERS` (``llama``,
    ``gemma3``, ``qwen3_next``, ``falcon_h1``, ``llama_1b_layout``); ``options`` go to
    that builder (``layers``, ``hidden`` …). ``chat_template`` replaces
    :data:`CHAT_TEMPLATE` (a template that renders conversations another way, as
    some model families' do). The vocabulary is the tokenizer's, so every token the
    model can produce decodes. The same arguments give the same folder, byte for byte,
    so two processes can build it and load the same weights.
    """
    import mlx.core as mx
    from mlx.utils import tree_flatten

    os.makedirs(path, exist_ok=True)
    tok = byte_tokenizer()
    vocab = tok.get_vocab_size()
    model = _model(arch, seed, vocab, options)
    args = model.args
    config = dataclasses.asdict(args) if dataclasses.is_dataclass(args) else dict(vars(args))
    # Unset fields keep the architecture's defaults (transformers' config classes,
    # which AutoTokenizer reads too, refuse explicit nulls).
    config = {k: v for k, v in config.items() if v is not None}
    config["model_type"] = getattr(args, "model_type", arch)
    config.setdefault("vocab_size", vocab)
    config["eos_token_id"] = tok.token_to_id("<|im_end|>")
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True, default=str)
    weights = dict(tree_flatten(model.parameters()))
    mx.save_safetensors(os.path.join(path, "model.safetensors"), weights, metadata={"format": "mlx"})
    tok.save(os.path.join(path, "tokenizer.json"))
    added: Dict[str, Any] = {}
    for name in SPECIAL_TOKENS + MARKER_TOKENS:
        added[str(tok.token_to_id(name))] = {
            "content": name,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": name in SPECIAL_TOKENS,
        }
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "added_tokens_decoder": added,
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "model_max_length": 131072,
        "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE if chat_template is None else chat_template,
        "tool_parser_type": "json_tools",
    }
    with open(os.path.join(path, "tokenizer_config.json"), "w") as f:
        json.dump(tokenizer_config, f, indent=2)
    with open(os.path.join(path, "special_tokens_map.json"), "w") as f:
        json.dump({"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}, f, indent=2)
    return path


def main(argv: List[str] = None) -> None:
    """``python -m pion.serve.testmodel PATH [ARCH]``: writes a test model folder."""
    import sys

    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        raise SystemExit("usage: python -m pion.serve.testmodel PATH [llama|gemma3|qwen3_next|falcon_h1|llama_1b_layout]")
    print(build_model_folder(argv[0], argv[1] if len(argv) > 1 else "llama"))


if __name__ == "__main__":
    main()
