"""Pion's prompt cache around an mlx-lm model, timed against mlx-lm's cold prefill.

A long shared prefix (a system prompt, a document) is prefilled once; every later
request — from this process, from another process over the wire, or through the
export lane on the same machine — starts at the first new token. Each route is
followed by a short greedy answer, which must be the same everywhere.

Run pion-server first (``cargo run --release -p pion-server``), then:

    python examples/prompt_cache_demo.py            # server on 127.0.0.1:1974
    python examples/prompt_cache_demo.py --server target/release/pion-server   # starts one

No weights are downloaded: the model is mlx-lm's Llama built with random weights
(``pion.mlx.random_models``); pass ``--hf-model`` to use a real one you have locally.
"""

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import time

import mlx.core as mx
from mlx_lm.generate import generate_step

import pion.mlx
from pion.mlx import random_models

PREFIX = [(i * 31 + 17) % 1000 + 1 for i in range(1024)]
QUESTION = [(i * 7 + 3) % 1000 + 1 for i in range(12)]


def load_model(hf_model):
    if hf_model:
        from mlx_lm import load

        return load(hf_model)[0]
    return random_models.llama_1b_layout(seed=5)


def answer(model, prompt, cache, tokens=12):
    """Time to the first token, and the greedy answer."""
    t0 = time.perf_counter()
    out, first = [], None
    for tok, _ in generate_step(mx.array(prompt), model, max_tokens=tokens, prompt_cache=cache):
        if first is None:
            first = time.perf_counter() - t0
        out.append(int(tok))
    return first, out


def second_process(args, export):
    """The same request from another process (a restarted agent, another tool)."""
    cmd = [sys.executable, __file__, "--child", "1" if export else "0", "--port", str(args.port)]
    if args.hf_model:
        cmd += ["--hf-model", args.hf_model]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def child(args):
    model = load_model(args.hf_model)
    answer(model, [1, 2, 3], None, 1)  # warm-up, as the parent had
    store = pion.mlx.PionPromptCache(model, port=args.port, export=args.child == "1")
    t0 = time.perf_counter()
    cache = store.get_or_prefill(PREFIX, namespace="demo")
    fetch = time.perf_counter() - t0
    first, out = answer(model, QUESTION, cache)
    print(json.dumps({"ttft": fetch + first, "answer": out, "route": store.last}))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=1974)
    ap.add_argument("--server", help="start this pion-server binary for the demo")
    ap.add_argument("--hf-model", help="a local mlx-lm model path instead of random weights")
    ap.add_argument("--child")
    args = ap.parse_args()
    if args.child is not None:
        return child(args)

    server = None
    if args.server:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            args.port = s.getsockname()[1]
        data = tempfile.mkdtemp(prefix="pion-demo-")
        server = subprocess.Popen([args.server, "--port", str(args.port), "--dir", data],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", args.port)).close()
                break
            except OSError:
                time.sleep(0.05)
    try:
        model = load_model(args.hf_model)
        answer(model, [1, 2, 3], None, 1)  # warm-up
        print(f"prefix {len(PREFIX)} tokens, question {len(QUESTION)} tokens\n")

        first, cold = answer(model, PREFIX + QUESTION, None)
        print(f"{'mlx-lm cold prefill':<34} TTFT {first * 1e3:9.1f} ms  answer {cold}")

        store = pion.mlx.PionPromptCache(model, port=args.port)
        t0 = time.perf_counter()
        cache = store.get_or_prefill(PREFIX, namespace="demo")
        took = time.perf_counter() - t0
        first, out = answer(model, QUESTION, cache)
        print(f"{'Pion, first time (' + store.last['route'] + ')':<34} TTFT {(took + first) * 1e3:9.1f} ms  answer {out}")

        t0 = time.perf_counter()
        cache = store.get_or_prefill(PREFIX, namespace="demo")
        took = time.perf_counter() - t0
        first, out = answer(model, QUESTION, cache)
        print(f"{'Pion, same process (' + store.last['via'] + ')':<34} TTFT {(took + first) * 1e3:9.1f} ms  answer {out}")

        for export, label in ((False, "Pion, second process, wire"), (True, "Pion, second process, export")):
            got = second_process(args, export)
            print(f"{label:<34} TTFT {got['ttft'] * 1e3:9.1f} ms  answer {got['answer']}")
            if got["answer"] != cold:
                print("  (differs from the cold answer!)")
    finally:
        if server is not None:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
