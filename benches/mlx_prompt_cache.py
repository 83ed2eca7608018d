"""Time to first token with a cached prefix: Pion against mlx-lm's own prompt cache.

A random-weight model with Llama-3.2-1B's attention layout (16 layers, 8 KV heads,
head_dim 64, f16 K/V: 64 MiB at 2,048 tokens) and a narrow hidden size, a prefix of
N tokens and a 16-token question. Each route is timed from "I have the token ids" to
"I have the first answer token" (median of --repeats):

- cold: mlx-lm prefills prefix + question (``generate_step``, fresh cache);
- mlx-lm file: ``load_prompt_cache`` of the file ``save_prompt_cache`` wrote, read by
  a fresh process;
- Pion embedded: ``PionPromptCache(engine=pion.Engine(path))`` hit, same process;
- Pion wire: a fresh process, pion-server over the binary lane;
- Pion export: a fresh process, the server's export file (``KV.EXPORT``).

Fresh processes import mlx and build the model before the clock starts (the same for
mlx-lm's route and Pion's), and run one warm-up forward pass.

    python benches/mlx_prompt_cache.py --server target/release/pion-server --tokens 256 1024 2048
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

QUESTION = [(i * 7 + 3) % 1000 + 1 for i in range(16)]


def prefix_of(n):
    return [(i * 31 + 17) % 1000 + 1 for i in range(n)]


def first_token(model, prompt, cache):
    import mlx.core as mx
    from mlx_lm.generate import generate_step

    for tok, _ in generate_step(mx.array(prompt), model, max_tokens=1, prompt_cache=cache):
        return int(tok)


def build_model():
    from pion.mlx import random_models

    model = random_models.llama_1b_layout(seed=5)
    first_token(model, [1, 2, 3], None)  # warm-up
    return model


def worker(args):
    """One timed route in this (fresh) process; prints JSON."""
    model = build_model()
    times, tok = [], None
    for _ in range(args.repeats):
        if args.route == "mlx-file":
            from mlx_lm.models.cache import load_prompt_cache

            t0 = time.perf_counter()
            cache = load_prompt_cache(args.file)
            tok = first_token(model, QUESTION, cache)
        else:
            import pion.mlx

            store = pion.mlx.PionPromptCache(
                model, port=args.port, lane_port=args.port + 1, export=args.route == "export"
            )
            t0 = time.perf_counter()
            cache = store.get_or_prefill(prefix_of(args.n), namespace="bench")
            tok = first_token(model, QUESTION, cache)
            assert store.last["route"] == "hit", store.last
            store.store.close()
        times.append(time.perf_counter() - t0)
    print(json.dumps({"seconds": statistics.median(times), "token": tok}))


def spawn(route, n, repeats, port=0, file=""):
    cmd = [sys.executable, __file__, "--worker", route, "--n", str(n), "--repeats", str(repeats),
           "--port", str(port), "--file", file]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.environ.get("PION_SERVER_BIN", "target/release/pion-server"))
    ap.add_argument("--tokens", type=int, nargs="+", default=[256, 1024, 2048])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cold-repeats", type=int, default=1)
    ap.add_argument("--worker")
    ap.add_argument("--n", type=int, default=0)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--file", default="")
    args = ap.parse_args()
    if args.worker:
        args.route = args.worker
        return worker(args)

    import pion
    import pion.mlx
    from mlx_lm.models.cache import make_prompt_cache, save_prompt_cache

    tmp = tempfile.mkdtemp(prefix="pion-mlx-bench-")
    port = free_port()
    while True:
        lane = port + 1
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", lane))
            break
        except OSError:
            port = free_port()
    server = subprocess.Popen([args.server, "--port", str(port), "--dir", os.path.join(tmp, "server")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                time.sleep(0.05)
        model = build_model()
        engine = pion.Engine(os.path.join(tmp, "embedded"))
        print(f"{'tokens':>6} {'route':<16} {'TTFT ms':>10} {'vs cold':>9} {'vs mlx file':>12}")
        for n in args.tokens:
            prefix = prefix_of(n)
            cold_times, cold_tok = [], None
            for _ in range(args.cold_repeats):
                t0 = time.perf_counter()
                cold_tok = first_token(model, prefix + QUESTION, None)
                cold_times.append(time.perf_counter() - t0)
            cold = statistics.median(cold_times)
            # mlx-lm's own prompt-cache file.
            cache = make_prompt_cache(model)
            from mlx_lm.generate import generate_step
            import mlx.core as mx

            for _ in generate_step(mx.array(prefix), model, max_tokens=0, prompt_cache=cache):
                pass
            path = os.path.join(tmp, f"mlx-{n}.safetensors")
            save_prompt_cache(path, cache)
            # Pion: store through the server (export file written at store time) and the engine.
            pion.mlx.PionPromptCache(model, port=port, lane_port=port + 1).get_or_prefill(prefix, namespace="bench")
            embedded = pion.mlx.PionPromptCache(model, engine=engine)
            embedded.get_or_prefill(prefix, namespace="bench")
            emb_times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                tok = first_token(model, QUESTION, embedded.get_or_prefill(prefix, namespace="bench"))
                emb_times.append(time.perf_counter() - t0)
            rows = {
                "cold": {"seconds": cold, "token": cold_tok},
                "mlx-lm file": spawn("mlx-file", n, args.repeats, file=path),
                "pion embedded": {"seconds": statistics.median(emb_times), "token": tok},
                "pion wire": spawn("wire", n, args.repeats, port=port),
                "pion export": spawn("export", n, args.repeats, port=port),
            }
            base = rows["mlx-lm file"]["seconds"]
            for name, r in rows.items():
                print(f"{n:>6} {name:<16} {r['seconds'] * 1e3:>10.1f} {cold / r['seconds']:>8.1f}x"
                      f" {r['seconds'] / base:>11.2f}x  token {r['token']}")
            sys.stdout.flush()
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
