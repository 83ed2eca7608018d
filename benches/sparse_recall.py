"""The sparse block selector on a real-shaped workload: K/V that a test model (a
random-weight model with Llama-3.2-1B's attention layout: 16 layers, 8 KV heads, 32
query heads, head_dim 64) computes over a long random prompt, stored in Pion, and the
model's own decode queries.

For each block size (16, 32, 64) and token budget (256-4096) it reports:

- attention-mass recall: the share of the dense softmax mass inside the blocks the
  selector kept, ``exp(lse_sparse - lse_dense)``, averaged over every layer, query
  head and decode step (both LSEs from ATTEND.QUERY on the same queries);
- agreement: how many of 32 greedy tokens decoded with sparse server attention equal
  those decoded with dense server attention (the same stored prefix, the same f32
  arithmetic; only the selection differs), and the first step where they part.

Run: ``.venv/bin/python benches/sparse_recall.py [--prompt 8192] [--blocks 16,32,64]
[--budgets 256,512,1024,2048,4096]``. doc/benchmarks.md has the figures.
"""

import argparse
import json

import mlx.core as mx
import numpy as np

import pion
import pion.mlx
from pion.mlx import random_models
from pion.mlx import server_attention

TOKENS = 32


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prompt", type=int, default=8192)
    ap.add_argument("--blocks", default="16,32,64")
    ap.add_argument("--budgets", default="256,512,1024,2048,4096")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    model = random_models.llama_1b_layout(seed=args.seed, dtype=mx.float32)
    rng = np.random.default_rng(args.seed)
    prompt = [int(t) for t in rng.integers(1, 1000, args.prompt)]
    question = [5, 9, 11, 42, 7]
    budgets = [int(b) for b in args.budgets.split(",")]
    results = []
    with pion.Engine() as engine:
        for block in (int(b) for b in args.blocks.split(",")):
            dense = pion.mlx.PionPromptCache(
                model, engine=engine, block_tokens=block, prefill_step_size=block * (2048 // block),
                attention="server",
            )
            # Record the queries dense decoding sends, per layer, to score recall with.
            sent = []
            inner = server_attention.ServerAttentionCache.attend

            def recording(self, queries, keys, values, scale):
                sent.append((self.view, self.layer, np.array(queries.astype(mx.float32)), scale))
                return inner(self, queries, keys, values, scale)

            server_attention.ServerAttentionCache.attend = recording
            try:
                want = random_models.greedy(model, question, cache=dense.get_or_prefill(prompt), tokens=TOKENS)
            finally:
                server_attention.ServerAttentionCache.attend = inner
            view = sent[0][0]
            ns = view.namespace
            for budget in budgets:
                recalls = []
                for _, layer, q, scale in sent[:: max(1, len(sent) // 256)]:
                    _, H, L, D = q.shape
                    rows = np.ascontiguousarray(q.reshape(H, L, D).transpose(1, 0, 2), dtype="<f4")
                    _, lse_d = engine.attend(ns, view.name, layer, rows, L, scale)
                    _, lse_s = engine.attend(ns, view.name, layer, rows, L, scale, budget)
                    recalls.append(np.exp(lse_s - lse_d))
                recall = float(np.mean(np.concatenate(recalls)))
                sparse = pion.mlx.PionPromptCache(
                    model, engine=engine, block_tokens=block, prefill_step_size=block * (2048 // block),
                    attention="server", sparse_budget=budget,
                )
                got = random_models.greedy(model, question, cache=sparse.get_or_prefill(prompt), tokens=TOKENS)
                same = sum(a == b for a, b in zip(got, want))
                first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), TOKENS)
                results.append({"block": block, "budget": budget, "recall": recall, "same": same, "first_diff": first})
                print(
                    f"block {block:>3}  budget {budget:>5}: attention-mass recall {recall:6.3f}  "
                    f"greedy tokens equal to dense {same:>2}/{TOKENS} (first difference at {first})",
                    flush=True,
                )
    print(json.dumps({"prompt": args.prompt, "results": results}))


if __name__ == "__main__":
    main()
