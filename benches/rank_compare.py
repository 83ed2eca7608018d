"""Ranking over a large index: FT.SEARCH text, `*`, tag, range and prefix queries
against Pion and the search oracle (Redis 8 with RediSearch), side by side in one
run, the same documents loaded into each, the same client.

Each query is timed `--rounds` times per server and the best time is kept; the
table gives both, their ratio (oracle time / Pion time: above 1 is Pion ahead) and
the totals, which must agree.

    python benches/rank_compare.py --server <release pion-server> \
        [--oracle .venv/search-oracle] [--docs 60000] [--threads 1] [--rounds 5]
"""

import argparse
import os
import platform
import shutil
import socket
import subprocess
import tempfile
import time

import redis

QUERIES = [
    ("one common word", ["hello", "LIMIT", "0", "10"]),
    ("one common word, SORTBY", ["hello", "SORTBY", "n", "LIMIT", "0", "10"]),
    ("every document (*)", ["*", "LIMIT", "0", "10"]),
    ("a tag (10%)", ["@g:{g1}", "LIMIT", "0", "10"]),
    ("a numeric range (83%)", ["@n:[100 50000]", "LIMIT", "0", "10"]),
    ("a prefix (111 terms)", ["w1*", "LIMIT", "0", "10"]),
    ("word | two prefixes, SORTBY", ["hello|w1*|w2*", "SORTBY", "n", "LIMIT", "0", "2"]),
]


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port):
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            redis.Redis(port=port).ping()
            return
        except redis.ConnectionError:
            time.sleep(0.1)
    raise SystemExit(f"no server on port {port}")


def load(r, docs):
    r.execute_command("FT.CREATE", "t", "SCHEMA", "x", "TEXT", "n", "NUMERIC", "SORTABLE", "g", "TAG")
    pipe = r.pipeline(transaction=False)
    for i in range(docs):
        pipe.hset(f"d{i}", mapping={"x": f"hello w{i % 1000} w{i % 777}", "n": i, "g": f"g{i % 10}"})
        if i % 5000 == 4999:
            pipe.execute()
    pipe.execute()


def best_ms(r, args, rounds):
    best, total = float("inf"), None
    for _ in range(rounds):
        started = time.perf_counter()
        reply = r.execute_command("FT.SEARCH", "t", *args)
        best = min(best, time.perf_counter() - started)
        total = reply[0]
    return best * 1000, total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True, help="pion-server binary (a release build)")
    ap.add_argument("--oracle", default=os.path.join(os.path.dirname(__file__), "..", ".venv", "search-oracle"))
    ap.add_argument("--docs", type=int, default=60000)
    ap.add_argument("--threads", type=int, default=1, help="Pion's worker threads (the oracle's queries run on one)")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()

    work = tempfile.mkdtemp(prefix="rank-compare-")
    pion_port, oracle_port = free_port(), free_port()
    procs = [
        subprocess.Popen(
            [a.server, "--port", str(pion_port), "--wal", "off", "--dir", os.path.join(work, "pion"),
             "--threads", str(a.threads)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        subprocess.Popen(
            [os.path.join(a.oracle, "redis-server"), "--port", str(oracle_port), "--save", "", "--dir", work,
             "--loadmodule", os.path.join(a.oracle, "redisearch.so"),
             "--loadmodule", os.path.join(a.oracle, "rejson.so")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
    ]
    try:
        sides = {}
        for name, port in (("pion", pion_port), ("oracle", oracle_port)):
            wait_ready(port)
            r = redis.Redis(port=port, protocol=2)
            started = time.perf_counter()
            load(r, a.docs)
            print(f"{name}: {a.docs} documents loaded in {time.perf_counter() - started:.1f} s")
            sides[name] = r
        print(f"cpu: {cpu_model()}; "
              f"{os.cpu_count()} cores; pion --threads {a.threads}; best of {a.rounds}")
        print(f"{'query':32s} {'pion ms':>10s} {'oracle ms':>10s} {'ratio':>7s}  totals")
        for label, args in QUERIES:
            p_ms, p_total = best_ms(sides["pion"], args, a.rounds)
            o_ms, o_total = best_ms(sides["oracle"], args, a.rounds)
            print(f"{label:32s} {p_ms:10.2f} {o_ms:10.2f} {o_ms / p_ms:7.2f}  {p_total} / {o_total}")
    finally:
        for p in procs:
            p.terminate()
            p.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
