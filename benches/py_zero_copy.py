"""Layers in and out of the embedded engine from Python, against a plain memcpy of the
same bytes in the same run.

Stores and fetches blocks of a Llama-8B-shaped namespace (32 attention layers, 8 KV
heads of 128 dims, f16, 64-token blocks: 256 KiB a layer, 8 MiB a block) through
`pion.Engine` in memory:

- store, buffers: `Engine.store_block` reading numpy arrays in place (one copy, into
  the store);
- store, bytes (the earlier path): each layer turned into bytes, sent as a `KV.PUT`
  argument and copied into the store;
- fetch, views: `Engine.fetch_many` handing out read-only views of the stored bytes;
- fetch, views + copy out: the same, then each layer copied into a preallocated numpy
  array (what a caller that owns its KV cache does);
- fetch, bytes (the earlier path): `KV.MGET` replies copied into Python bytes;
- memcpy: `numpy.copyto` of the same bytes between preallocated arrays.

Prints GB/s (10^9 bytes per second) for each, median of the rounds, and each as a
share of memcpy. Usage: `python benches/py_zero_copy.py [--blocks 8] [--rounds 5]`.
"""

import argparse
import json
import platform
import statistics
import time

import numpy as np

import pion
from pion._ops import PrefixOps

LAYERS, HEADS, DIM, TOKENS = 32, 8, 128, 64
MANIFEST = {
    "model": "bench-8b",
    "block_tokens": TOKENS,
    "dtype": "f16",
    "layers": [{"kind": "attention", "kv_heads": HEADS, "head_dim": DIM}] * LAYERS,
}


def block_layers(rng, blocks):
    shape = (2, HEADS, TOKENS, DIM)
    return [[rng.standard_normal(shape).astype(np.float16) for _ in range(LAYERS)] for _ in range(blocks)]


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(1)
    data = block_layers(rng, args.blocks)
    total = sum(l.nbytes for b in data for l in b)
    results = {}

    def record(name, seconds):
        results.setdefault(name, []).append(total / seconds / 1e9)

    sink = [[np.empty_like(l) for l in b] for b in data]
    for r in range(args.rounds):
        # Fresh tokens per round and path: every store is new (no deduplication).
        for path in ("store, buffers", "store, bytes (earlier path)"):
            e = pion.Engine()
            e.register("m", MANIFEST)
            base = 1_000_000 * (r + 1)

            def store(e=e, path=path, base=base):
                parent = None
                ids = []
                for i, layers in enumerate(data):
                    tokens = list(range(base + i * TOKENS, base + (i + 1) * TOKENS))
                    if path == "store, buffers":
                        parent = e.store_block("m", parent, tokens, layers)
                    else:
                        parent = PrefixOps.store_block(e, "m", parent, tokens, layers)
                    ids.append(parent)
                return ids

            ids_holder = []
            record(path, timed(lambda: ids_holder.append(store())))
            ids = ids_holder[0]
            if path == "store, buffers":
                record("fetch, views", timed(lambda: e.fetch_many("m", ids)))

                def fetch_copy():
                    for (_, views), out in zip(e.fetch_many("m", ids), sink):
                        for v, o in zip(views, out):
                            np.copyto(o, np.frombuffer(v, dtype=np.float16).reshape(o.shape))

                record("fetch, views + copy out", timed(fetch_copy))

                def fetch_bytes():
                    for i in ids:
                        e.execute("KV.GET", "m", i)

                record("fetch, bytes (earlier path)", timed(fetch_bytes))
            e.close()

        def memcpy():
            for b, out in zip(data, sink):
                for l, o in zip(b, out):
                    np.copyto(o, l)

        record("memcpy", timed(memcpy))

    base = statistics.median(results["memcpy"])
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"{args.blocks} blocks of {total // args.blocks >> 20} MiB, median of {args.rounds}")
    print(f"{'path':34} {'GB/s':>8} {'of memcpy':>10}")
    for name, values in results.items():
        v = statistics.median(values)
        print(f"{name:34} {v:8.2f} {v / base:9.0%}")
    print(json.dumps({k: round(statistics.median(v), 3) for k, v in results.items()}))


if __name__ == "__main__":
    main()
