"""Decode attention over a stored prefix: Pion's ATTEND.QUERY against mlx's own
``mx.fast.scaled_dot_product_attention`` on the CPU, in one run, on the same data.

One layer-step of Llama-3.2-1B's layout (8 KV heads, 32 query heads, head_dim 64, f16
K/V, one query position) over prefixes of 1K-64K tokens (``--tokens``):

- ``pion``: ATTEND.QUERY on an embedded engine (``pion.Engine``): the command's whole
  path, view lookup and the kernel, with the query and the answer crossing into Python;
- ``lane``: the same over a pion-server's binary lane (``--server-bin``): one
  per-layer round trip as a client's server-side attention makes it;
- ``mlx``: ``mx.fast.scaled_dot_product_attention`` over the same K/V already in mlx
  arrays on the CPU (what local attention costs a client that holds the prefix), in f16
  and, upcast, in f32 (mlx's CPU path is faster in f32);
- ``sparse``: ATTEND.QUERY with ``SPARSE 512``, the selector included.

Run: ``.venv/bin/python benches/attend_compare.py [--tokens 1024,4096,65536]
[--server-bin target/release/pion-server] [--reps 20]``. doc/benchmarks.md has the
method and figures.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import tempfile
import time

import mlx.core as mx
import numpy as np

import pion

KV_HEADS, Q_HEADS, DIM, BLOCK = 8, 32, 64, 256


def manifest():
    return {
        "model": "attend-bench",
        "block_tokens": BLOCK,
        "dtype": "f16",
        "tier": "as-given",
        "layers": [{"kind": "attention", "kv_heads": KV_HEADS, "head_dim": DIM}],
    }


def store_prefix(store, ns, k, v):
    """Stores K/V ``[H, T, D]`` block by block; returns the block ids."""
    store.register(ns, manifest())
    parent, ids = None, []
    for a in range(0, k.shape[1], BLOCK):
        layer = np.concatenate([k[:, a : a + BLOCK].ravel(), v[:, a : a + BLOCK].ravel()])
        parent = store.store_block(ns, parent, list(range(a, a + BLOCK)), [layer])
        ids.append(parent)
    return ids


def median_us(fn, reps):
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", default="1024,4096,16384,32768,65536")
    ap.add_argument("--server-bin", default=None)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    sizes = [int(t) for t in args.tokens.split(",")]
    mx.set_default_device(mx.cpu)
    rng = np.random.default_rng(0)
    q = rng.uniform(-1, 1, (1, Q_HEADS, 1, DIM)).astype(np.float16)
    q_rows = np.ascontiguousarray(q.astype("<f4").reshape(Q_HEADS, DIM))
    scale = 1.0 / np.sqrt(DIM)
    server, client, workdir = None, None, tempfile.mkdtemp(prefix="attend-bench-")
    if args.server_bin:
        port = free_port()
        server = subprocess.Popen(
            [args.server_bin, "--port", str(port), "--kvcache-port", str(port + 1), "--dir", workdir],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(200):
            try:
                client = pion.connect("127.0.0.1", port, lane_port=port + 1)
                break
            except OSError:
                time.sleep(0.05)
    engine = pion.Engine()
    rows = []
    try:
        for t in sizes:
            k = rng.uniform(-1, 1, (KV_HEADS, t, DIM)).astype(np.float16)
            v = rng.uniform(-1, 1, (KV_HEADS, t, DIM)).astype(np.float16)
            ns = f"bench-{t}"
            ids = store_prefix(engine, ns, k, v)
            engine.attend_view(ns, "v", ids)
            pion_us = median_us(lambda: engine.attend(ns, "v", 0, q_rows, 1, scale), args.reps)
            sparse_us = median_us(lambda: engine.attend(ns, "v", 0, q_rows, 1, scale, 512), args.reps)
            lane_us = None
            if client is not None:
                lane_ids = store_prefix(client, ns, k, v)
                client.attend_view(ns, "v", lane_ids)
                lane_us = median_us(lambda: client.attend(ns, "v", 0, q_rows, 1, scale), args.reps)
            mq, mk, mv = mx.array(q), mx.array(k[None]), mx.array(v[None])
            mx.eval(mq, mk, mv)
            mlx_us = median_us(
                lambda: mx.eval(mx.fast.scaled_dot_product_attention(mq, mk, mv, scale=scale)), args.reps
            )
            # mlx's CPU path is faster in f32 than in f16: the same values, upcast.
            fq, fk, fv = (a.astype(mx.float32) for a in (mq, mk, mv))
            mx.eval(fq, fk, fv)
            mlx32_us = median_us(
                lambda: mx.eval(mx.fast.scaled_dot_product_attention(fq, fk, fv, scale=scale)), args.reps
            )
            del fq, fk, fv
            gbs = (2 * k.nbytes) / (pion_us * 1e-6) / 1e9
            rows.append(
                {"tokens": t, "pion_us": pion_us, "lane_us": lane_us, "mlx_us": mlx_us,
                 "mlx_f32_us": mlx32_us, "sparse_us": sparse_us, "pion_gbs": gbs}
            )
            lane = f"{lane_us:10.0f}" if lane_us is not None else f"{'-':>10}"
            print(
                f"{t:>7} tokens: pion {pion_us:9.0f} µs ({gbs:5.1f} GB/s)  lane {lane} µs  "
                f"mlx {mlx_us:9.0f} µs (f32 {mlx32_us:8.0f})  mlx/pion {mlx_us / pion_us:5.2f}x  "
                f"sparse-512 {sparse_us:7.0f} µs ({pion_us / sparse_us:5.1f}x dense)",
                flush=True,
            )
            engine.execute("KV.DROP", ns)
            if client is not None:
                client.execute("KV.DROP", ns)
    finally:
        engine.close()
        if client is not None:
            client.close()
        if server is not None:
            server.terminate()
            server.wait(timeout=10)
    print(json.dumps({"threads": os.cpu_count(), "rows": rows}))


if __name__ == "__main__":
    main()
