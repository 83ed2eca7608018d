"""``pion serve`` as a command: its start-up lines and one-line errors, and the prompt
cache shared through a pion-server — a second serve process, and one restarted after
SIGKILL, answer a conversation's next turn from the stored block-aligned prefix."""

import os
import shutil
import socket
import subprocess
import sys

import anthropic
import pytest

import pion

from pion.serve.chat import Conversation
from pion.serve.server import StartupError
from serve_support import BLOCK, ServeProcess, health, model_folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return model_folder(tmp_path_factory.mktemp("models"))


def _run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "pion.serve.cli", "serve", *args], capture_output=True, text=True,
                          timeout=120, env=None if env is None else dict(os.environ, **env))


def _one_line_error(out, text):
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.strip().count("\n") == 0 and text in out.stderr, out.stderr


def test_console_script_and_help():
    pion = shutil.which("pion", path=os.path.dirname(sys.executable))
    assert pion, "the pion console script is not installed"
    out = subprocess.run([pion, "serve", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    for flag in ("--model", "--server", "--data", "--kv-bits", "--max-tokens", "--api-key", "--port", "--host"):
        assert flag in out.stdout


def test_startup_errors_are_one_line(folder, tmp_path, free_port):
    out = _run("--model", str(tmp_path / "no-such-model"))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.strip().count("\n") == 0 and "no such model folder" in out.stderr
    out = _run("--model", str(tmp_path), "--data", str(tmp_path / "d"))
    assert out.returncode == 1 and "not a model folder" in out.stderr and "Traceback" not in out.stderr
    port = free_port()
    out = _run("--model", folder, "--server", f"127.0.0.1:{port}")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.strip().count("\n") == 0 and f"cannot reach pion-server at 127.0.0.1:{port}" in out.stderr

    # A repository name that is no model (offline: nothing is downloaded). The Hub's
    # errors run over several lines; the model is loaded after the engine is opened,
    # which must be closed again for the process to exit with status 1.
    out = _run("--model", "no-such-org/no-such-model", "--data", str(tmp_path / "hub"), "--port", str(free_port()),
               env={"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf-home")})
    _one_line_error(out, "cannot load the model no-such-org/no-such-model")
    # Online, the Hub's error texts run over several lines: the first one is shown.
    assert str(StartupError("cannot load the model x: Repository Not Found\n\nCheck the name.")) == \
        "cannot load the model x: Repository Not Found"

    # A data directory another process holds (here: this one, through the engine).
    held = pion.Engine(str(tmp_path / "held"))
    try:
        out = _run("--model", folder, "--data", str(tmp_path / "held"), "--port", str(free_port()))
        _one_line_error(out, f"cannot open the embedded engine in {tmp_path / 'held'}")
    finally:
        held.close()

    # A port something else listens on.
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        out = _run("--model", folder, "--data", str(tmp_path / "d2"), "--port", str(taken))
        _one_line_error(out, f"cannot listen on 127.0.0.1:{taken}")


def _turn(url, messages):
    m = anthropic.Anthropic(base_url=url, api_key="unused", max_retries=0).messages.create(
        model="any", max_tokens=12, system="You share a cache. " * 8, messages=messages,
        extra_body={"temperature": 0})
    return m


def _prompt_len(tok, messages):
    msgs = [{"role": "system", "content": "You share a cache. " * 8}] + [
        {"role": m["role"], "content": m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]}
        for m in messages]
    return len(Conversation(msgs, None, {"enable_thinking": False}).render(tok))


def test_second_process_and_restart_share_the_cache(folder, pion_server, free_port):
    from mlx_lm.tokenizer_utils import load as load_tokenizer
    from pathlib import Path

    tok = load_tokenizer(Path(folder))
    where = f"127.0.0.1:{pion_server.port}"
    args = ("--server", where, "--lane-port", str(pion_server.lane))
    a = ServeProcess(folder, free_port(), *args).start()
    b = c = None
    try:
        assert f"prompt cache: pion-server at {where}" in a.banner and "model: " in a.banner
        first = [{"role": "user", "content": "Remember the number 42."}]
        m1 = _turn(a.url, first)
        p1 = _prompt_len(tok, first)
        assert m1.usage.cache_read_input_tokens == 0 and m1.usage.input_tokens == p1
        second = first + [{"role": "assistant", "content": m1.content[0].text if m1.content else ""},
                          {"role": "user", "content": "Which number was it?"}]
        p2 = _prompt_len(tok, second)
        stored = p1 // BLOCK * BLOCK

        # Another serve process on the same pion-server: the next turn starts at the
        # stored prefix (the first prompt's blocks at least) and prefills the rest.
        b = ServeProcess(folder, free_port(), *args).start()
        m2 = _turn(b.url, second)
        last = health(b.url)["last"]
        assert last["source"] == "pion" and m2.usage.cache_read_input_tokens >= stored > 0
        assert last["prefilled_tokens"] == p2 - m2.usage.cache_read_input_tokens
        assert m2.usage.input_tokens + m2.usage.cache_read_input_tokens == p2

        # SIGKILL it and start again: same answer, from the stored prefix.
        b.kill9()
        c = ServeProcess(folder, free_port(), *args).start()
        m3 = _turn(c.url, second)
        assert m3.usage.cache_read_input_tokens >= stored
        last = health(c.url)["last"]
        assert last["source"] == "pion" and last["prefilled_tokens"] == p2 - m3.usage.cache_read_input_tokens
        assert [x.model_dump() for x in m3.content] == [x.model_dump() for x in m2.content]
        # The first process answers the same turn the same way (its own memory).
        m4 = _turn(a.url, second)
        assert [x.model_dump() for x in m4.content] == [x.model_dump() for x in m2.content]
    finally:
        for p in (a, b, c):
            if p is not None:
                p.stop()
