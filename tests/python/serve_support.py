"""Helpers for the ``pion serve`` tests: test model folders, an in-process server
with an injectable generator, and a ``pion serve`` process."""

import os
import subprocess
import sys
import time

import http.client
import json
import urllib.parse

from pion.serve.server import Options, Server, build
from pion.serve.worker import Generator

BLOCK = 16
STEP = 64


def model_folder(root, arch="llama", seed=7, template=None, tag=""):
    """A test model folder (built once per path); ``template`` replaces the chat
    template (``tag`` names such a folder apart)."""
    from pion.serve.testmodel import build_model_folder

    path = os.path.join(str(root), f"{arch}-{seed}{'-' + tag if tag else ''}")
    if not os.path.exists(os.path.join(path, "tokenizer.json")):
        build_model_folder(path, arch, seed=seed, chat_template=template)
    return path


class Scripted(Generator):
    """Replies with scripted text (one script per request, in order) instead of the
    model's choice; the model still runs every token, so the cache stays real.
    ``prefill_delay``/``token_delay`` slow the model down (seconds)."""

    def __init__(self):
        self.scripts = []
        self.current = None
        self.prefill_delay = 0.0
        self.token_delay = 0.0
        self.tokenizer = None
        self.fail = None

    def begin(self, job):
        text = self.scripts.pop(0) if self.scripts else None
        self.current = None if text is None else self.tokenizer.encode(text, add_special_tokens=False)

    def prefill(self, model, tokens, cache):
        if self.prefill_delay:
            time.sleep(self.prefill_delay)
        super().prefill(model, tokens, cache)

    def sample(self, logprobs, sampler):
        if self.fail:
            raise RuntimeError(self.fail)
        if self.token_delay:
            time.sleep(self.token_delay)
        if self.current is None:
            return super().sample(logprobs, sampler)
        if not self.current:
            return next(iter(self.tokenizer.eos_token_ids))
        return self.current.pop(0)


def start_server(folder, data, port, generator=None, **kw):
    """An in-process ``pion serve`` (uvicorn on a thread) on ``port``."""
    opts = Options(model=folder, port=port, data=str(data), block_tokens=BLOCK, prefill_step=STEP, **kw)
    service = build(opts, generator)
    if isinstance(generator, Scripted):
        generator.tokenizer = service.tokenizer
    return Server(service, port=port).start()


def request(method, url, body=None, raw=None):
    """(status, decoded JSON body) of one HTTP request."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    path = u.path + ("?" + u.query if u.query else "")
    conn.request(method, path, body=data, headers={"content-type": "application/json"})
    r = conn.getresponse()
    out = r.read()
    conn.close()
    return r.status, json.loads(out)


def stream_lines(url, body):
    """The non-empty lines of a streamed (SSE) response."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    conn.request("POST", u.path, body=json.dumps(body).encode(), headers={"content-type": "application/json"})
    r = conn.getresponse()
    lines = [l.decode().rstrip("\r\n") for l in r]
    conn.close()
    return [l for l in lines if l]


def health(url):
    return request("GET", url + "/health")[1]


def settled(url, timeout=15):
    """``/health`` once the worker is idle: the last request's cache update (after
    its reply went out) is done, and ``last`` has its ``kept_tokens``."""
    deadline = time.time() + timeout
    while True:
        h = health(url)
        if (not h["busy"] and h["queued"] == 0) or time.time() > deadline:
            return h
        time.sleep(0.02)


class ServeProcess:
    """``python -m pion.serve.cli serve …`` in a child process."""

    def __init__(self, folder, port, *args):
        self.folder, self.port, self.args = folder, port, list(args)
        self.proc = None
        self.banner = ""

    def start(self, timeout=120):
        cmd = [sys.executable, "-m", "pion.serve.cli", "serve", "--model", self.folder, "--port", str(self.port),
               "--block-tokens", str(BLOCK), "--prefill-step", str(STEP), *self.args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines = []
        deadline = time.time() + timeout
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("pion serve exited:\n" + "".join(lines))
            lines.append(line)
            if line.startswith("listening on"):
                self.banner = "".join(lines)
                return self
        raise RuntimeError("pion serve did not start:\n" + "".join(lines))

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def kill9(self):
        self.proc.kill()
        self.proc.wait(timeout=10)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
