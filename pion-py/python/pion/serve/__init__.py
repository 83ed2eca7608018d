"""``pion serve``: a local OpenAI- and Anthropic-compatible model server (mlx-lm)
whose prompt cache lives in Pion.

A restarted server, a second server process or another tool sharing the same
pion-server starts a conversation's next turn at the longest stored prefix instead of
prefilling the whole prompt again. Needs the ``serve`` extra
(``pip install './pion-py[serve]'``: Starlette and uvicorn).

Modules: :mod:`~pion.serve.cli` (the command), :mod:`~pion.serve.server` (putting
it together), :mod:`~pion.serve.app` (routes, errors, streaming),
:mod:`~pion.serve.openai_api`, :mod:`~pion.serve.responses_api`,
:mod:`~pion.serve.anthropic_api` (the wire formats), :mod:`~pion.serve.chat`
(conversations and the chat template), :mod:`~pion.serve.output` (text, thinking and
tool calls out of the model's text), :mod:`~pion.serve.worker` (the model's thread),
:mod:`~pion.serve.cache` (session cache over Pion) and :mod:`~pion.serve.testmodel`
(a tiny model folder for tests and demos).
"""

__all__ = ["Options", "Server", "build"]


def __getattr__(name: str):
    # Lazy: ``pion serve --help`` and the test-model builder need no web stack.
    if name in __all__:
        from . import server

        return getattr(server, name)
    raise AttributeError(name)
