#!/usr/bin/env python3
"""Pion's HNSW index next to hnswlib and faiss (IndexHNSWFlat) on one embedding set.

Same M (16), ef_construction (200), threads and ef sweep for all three; the Rust harness
(benches/src/bin/vector_compare.rs) runs as a subprocess and reports JSON. Prints one
side-by-side table and Pion's ratios to hnswlib. Method: doc/vector-index.md.

    python3 benches/vector_compare.py [--data DIR] [--threads 2] [--metric cosine|ip]
                                      [--limit N] [--passes N] [--pion-bin PATH]

--data defaults to $PION_VECTOR_DATA/minilm384 (TEXMEX base.fvecs, query.fvecs, gt.ivecs).
Needs numpy, hnswlib, faiss-cpu.
"""
import argparse
import json
import os
import subprocess
import time

import numpy as np

EFS = [10, 20, 40, 80, 160, 320]
M, EFC = 16, 200


def read_vecs(path, dtype):
    raw = np.fromfile(path, dtype=np.int32)
    dim = int(raw[0])
    return raw.reshape(-1, dim + 1)[:, 1:].copy().view(dtype)


def recall(ids, gt, k):
    return float(np.mean([len(set(a[:k]) & set(b[:k])) / k for a, b in zip(ids, gt)]))


def sweep(search, queries, gt, passes):
    """Recall and QPS per ef; the QPS of the median of `passes` timed passes."""
    rows = []
    for ef in EFS:
        times = []
        for _ in range(passes):
            t = time.perf_counter()
            ids = search(queries, 10, ef)
            times.append(time.perf_counter() - t)
        qps = len(queries) / sorted(times)[len(times) // 2]
        r100 = recall(search(queries, 100, ef), gt, 100) if ef >= 100 else None
        rows.append({"ef": ef, "recall10": recall(ids, gt, 10), "recall100": r100, "qps": qps})
    return rows


def run_hnswlib(base, queries, gt, threads, metric, passes):
    import hnswlib

    idx = hnswlib.Index(space={"cosine": "cosine", "ip": "ip", "l2": "l2"}[metric], dim=base.shape[1])
    idx.init_index(max_elements=len(base), M=M, ef_construction=EFC)
    idx.set_num_threads(threads)
    t = time.perf_counter()
    idx.add_items(base, np.arange(len(base)), num_threads=threads)
    build = time.perf_counter() - t

    def search(q, k, ef):
        idx.set_ef(max(ef, k))
        return idx.knn_query(q, k=k, num_threads=threads)[0]

    # hnswlib stores f32 vectors plus links: report its own formula.
    size_per = base.shape[1] * 4 + (2 * M + 1) * 4 + 8
    return {"engine": "hnswlib", "build_s": build, "memory_bytes": size_per * len(base),
            "rows": sweep(search, queries, gt, passes)}


def run_faiss(base, queries, gt, threads, metric, passes):
    import faiss

    faiss.omp_set_num_threads(threads)
    kind = faiss.METRIC_L2 if metric == "l2" else faiss.METRIC_INNER_PRODUCT
    idx = faiss.IndexHNSWFlat(base.shape[1], M, kind)
    idx.hnsw.efConstruction = EFC
    t = time.perf_counter()
    idx.add(base)
    build = time.perf_counter() - t

    def search(q, k, ef):
        idx.hnsw.efSearch = max(ef, k)
        return idx.search(q, k)[1]

    return {"engine": "faiss", "build_s": build, "memory_bytes": None,
            "rows": sweep(search, queries, gt, passes)}


def run_pion(args):
    cmd = [args.pion_bin, "--data", args.data, "--threads", str(args.threads),
           "--metric", args.metric, "--passes", str(args.passes), "--json"]
    if args.limit:
        cmd += ["--limit", str(args.limit)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(os.environ.get("PION_VECTOR_DATA", ""), "minilm384"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--metric", default="cosine", choices=["cosine", "ip", "l2"])
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--passes", type=int, default=3, help="timed passes per ef; the median counts")
    target = os.environ.get("CARGO_TARGET_DIR", "target")
    ap.add_argument("--pion-bin", default=os.path.join(target, "release", "vector_compare"))
    args = ap.parse_args()

    base = read_vecs(os.path.join(args.data, "base.fvecs"), np.float32)
    queries = read_vecs(os.path.join(args.data, "query.fvecs"), np.float32)
    gt = read_vecs(os.path.join(args.data, "gt.ivecs"), np.int32)
    if args.limit:
        base = base[: args.limit]
        sims = queries @ base.T if args.metric != "l2" else -((queries[:, None, :] - base[None]) ** 2).sum(-1)
        gt = np.argsort(-sims, axis=1)[:, :100]
    raw = base.nbytes
    results = [run_pion(args), run_hnswlib(base, queries, gt, args.threads, args.metric, args.passes),
               run_faiss(base, queries, gt, args.threads, args.metric, args.passes)]

    print(f"{len(base)}x{base.shape[1]} {args.metric}, M={M} efC={EFC}, {args.threads} threads; "
          f"CPU: {results[0].get('cpu', 'unknown')}")
    for r in results:
        mem = r.get("memory_bytes")
        mem_s = f"{mem / 2**20:.1f} MiB ({100 * mem / raw:.0f}% of f32)" if mem else "-"
        print(f"  {r['engine']:8} build {r['build_s']:7.2f} s   memory {mem_s}")
    head = "  ef " + "".join(f"| {r['engine']:>8} R@10  R@100     QPS " for r in results)
    print(head)
    for i, ef in enumerate(EFS):
        line = f"{ef:>4} "
        for r in results:
            row = r["rows"][i]
            r100 = f"{row['recall100']:.3f}" if row["recall100"] is not None else "   - "
            line += f"|   {row['recall10']:.3f}  {r100} {row['qps']:8.0f} "
        print(line)
    pion, hnsw = results[0], results[1]
    print(f"build time pion/hnswlib: {pion['build_s'] / hnsw['build_s']:.2f}")

    def at95(r):
        ok = [row for row in r["rows"] if row["recall10"] >= 0.95]
        return ok[0] if ok else None

    p95, h95 = at95(pion), at95(hnsw)
    if p95 and h95:
        print(f"QPS at recall@10 >= 0.95: pion {p95['qps']:.0f} (ef {p95['ef']}) vs hnswlib "
              f"{h95['qps']:.0f} (ef {h95['ef']}): ratio {p95['qps'] / h95['qps']:.2f}")


if __name__ == "__main__":
    main()
