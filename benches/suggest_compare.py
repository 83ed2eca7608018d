"""FT.SUGADD and FT.SUGGET against RediSearch in one run: 100,000 random words added
(pipelined, 1,000 per round trip), then 2,000 lookups of 1-4 letter prefixes, exact
and FUZZY, MAX 10, one at a time. Prints commands per second for each server and the
ratio. Usage:

    python benches/suggest_compare.py --pion-port 1974 --redis-port 6379

with a pion-server and a Redis with RediSearch (e.g. the search oracle) running.
"""

import argparse
import random
import string
import time

import redis


def run(port, words, prefixes):
    r = redis.Redis(port=port)
    r.delete("bench:sug")
    rng = random.Random(9)
    p = r.pipeline(transaction=False)
    t = time.perf_counter()
    for i, w in enumerate(words):
        p.execute_command("FT.SUGADD", "bench:sug", w, rng.randint(1, 100))
        if i % 1000 == 999:
            p.execute()
    p.execute()
    out = {"SUGADD": len(words) / (time.perf_counter() - t)}
    for name, extra in (("SUGGET", []), ("SUGGET FUZZY", ["FUZZY"])):
        t = time.perf_counter()
        for q in prefixes:
            r.execute_command("FT.SUGGET", "bench:sug", q, "MAX", "10", *extra)
        out[name] = len(prefixes) / (time.perf_counter() - t)
    r.delete("bench:sug")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pion-port", type=int, default=1974)
    ap.add_argument("--redis-port", type=int, default=6379)
    args = ap.parse_args()
    rng = random.Random(5)
    letters = string.ascii_lowercase
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(3, 12))) for _ in range(100_000)]
    prefixes = [w[: rng.randint(1, 4)] for w in rng.sample(words, 2000)]
    redis_side = run(args.redis_port, words, prefixes)
    pion_side = run(args.pion_port, words, prefixes)
    print(f"{'':14} {'RediSearch':>12} {'Pion':>12} {'ratio':>7}")
    for k in redis_side:
        print(f"{k:14} {redis_side[k]:12,.0f} {pion_side[k]:12,.0f} {pion_side[k] / redis_side[k]:6.2f}x")


if __name__ == "__main__":
    main()
