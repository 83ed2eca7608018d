"""Time to first token of pion serve for a coding agent's request, against mlx-lm's
own server.

The model is a folder built by ``pion.serve.testmodel`` with Llama-3.2-1B's attention
layout (16 layers, 8 K/V heads, head_dim 64, f16 K/V: 32 KiB per token) and random
weights, the same model the prompt-cache benchmark uses, with the byte-level test
tokenizer. The request is what a coding agent sends: a system prompt of
``--system-tokens`` tokens (4,096 by default) with three tools, then a short question;
its next turn adds the reply and another short question. Each route is timed from
sending a non-streaming chat completion with ``max_tokens`` 1 to having the reply,
after one warm-up request on an unrelated prompt:

- **cold**: the first turn, on a fresh ``pion serve`` whose cache is a pion-server;
- **next turn, same process**: the second turn on that process (session cache);
- **second process**: another ``pion serve`` on the same pion-server answers a next
  turn (a different question) from the stored prefix;
- **after a restart**: that process is SIGKILLed, started again, and answers a third
  next turn;
- **mlx_lm.server**: mlx-lm's server on the same folder, the first turn and a next turn.

``--repeat N`` runs it all N times and reports each route's median (and every run's
figure). Each repetition starts fresh ``pion serve`` processes on the same
pion-server and sends a system prompt of its own (the same length, a different
first line), so nothing an earlier repetition stored or kept in memory matches: its
cold turn is cold, and its other routes reuse only its own first turn.

    python benches/serve_ttft.py --server target/release/pion-server --system-tokens 4096 [--repeat 3]
"""

import argparse
import json
import os
import statistics
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

WORDS = ("repository module function test build cache prefix token request server client agent "
         "file patch review commit branch error type value result index store block layer").split()
TOOLS = [
    {"type": "function", "function": {"name": name, "description": desc, "parameters": {
        "type": "object", "properties": {p: {"type": "string", "description": f"the {p}"} for p in props},
        "required": list(props)}}}
    for name, desc, props in (
        ("read_file", "Read a file of the repository and return its text.", ("path",)),
        ("run_command", "Run a shell command in the repository and return its output.", ("command", "cwd")),
        ("apply_patch", "Apply a unified diff to the repository.", ("patch",)),
    )
]
QUESTIONS = ["Which function builds the cache, and where is it tested?",
             "Which module stores the blocks, and how are they named?",
             "Which request path handles streaming, and what does it send?",
             "Which file holds the benchmark, and what does it measure?"]


def system_prompt(tokens, run=0):
    """``tokens`` bytes (one token each) of words; runs after the first start with a
    line of their own, so that no two runs share a prefix."""
    out, i = [], 0
    while sum(len(w) + 1 for w in out) < tokens:
        out.append(WORDS[(i * 7 + i // 5) % len(WORDS)])
        i += 1
    head = f"Run {run}.\n" if run else ""
    return (head + " ".join(out))[:tokens]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout=300):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("no server on port %d" % port)


def chat(port, messages, model="bench"):
    body = json.dumps({"model": model, "messages": messages, "tools": TOOLS, "max_tokens": 1,
                       "temperature": 0}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", body,
                                 {"content-type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=3600) as r:
        out = json.loads(r.read())
    return time.perf_counter() - t0, out


def serve(folder, port, server_port, lane):
    cmd = [sys.executable, "-m", "pion.serve.cli", "serve", "--model", folder, "--port", str(port),
           "--server", f"127.0.0.1:{server_port}", "--lane-port", str(lane)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port, proc)
    chat(port, [{"role": "user", "content": "warm up"}])
    return proc


def turn(system, question, reply=None, first=None):
    msgs = [{"role": "system", "content": system}, {"role": "user", "content": first or question}]
    if reply is not None:
        msgs += [{"role": "assistant", "content": reply}, {"role": "user", "content": question}]
    return msgs


def pion_routes(folder, system, sport, lane):
    """(route, seconds, usage) for the four pion serve routes on fresh processes."""
    procs, rows = [], []
    try:
        a_port = free_port()
        procs.append(serve(folder, a_port, sport, lane))
        t, r = chat(a_port, turn(system, QUESTIONS[0]))
        reply = r["choices"][0]["message"]["content"] or ""
        rows.append(("cold", t, r["usage"]))
        t, r = chat(a_port, turn(system, QUESTIONS[1], reply, QUESTIONS[0]))
        rows.append(("next turn, same process", t, r["usage"]))
        b_port = free_port()
        b = serve(folder, b_port, sport, lane)
        procs.append(b)
        t, r = chat(b_port, turn(system, QUESTIONS[2], reply, QUESTIONS[0]))
        rows.append(("second process", t, r["usage"]))
        b.kill()
        b.wait()
        procs.append(serve(folder, b_port, sport, lane))
        t, r = chat(b_port, turn(system, QUESTIONS[3], reply, QUESTIONS[0]))
        rows.append(("after a restart (SIGKILL)", t, r["usage"]))
        for p in procs:
            p.terminate()
            p.wait()
        procs = []
    finally:
        for p in procs:
            p.kill()
            p.wait()
    return rows


def mlx_lm_routes(port, folder, system):
    """(route, seconds, usage) for mlx_lm.server's first turn and next turn."""
    rows = []
    t, r = chat(port, turn(system, QUESTIONS[0]), folder)
    rows.append(("mlx_lm.server cold", t, r.get("usage", {})))
    t, r = chat(port, turn(system, QUESTIONS[1], r["choices"][0]["message"]["content"] or "", QUESTIONS[0]), folder)
    rows.append(("mlx_lm.server next turn", t, r.get("usage", {})))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.environ.get("PION_SERVER_BIN", "target/release/pion-server"))
    ap.add_argument("--system-tokens", type=int, default=4096)
    ap.add_argument("--skip-mlx-lm", action="store_true")
    ap.add_argument("--repeat", type=int, default=1, help="runs of every route; the median is reported")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")

    from pion.serve.testmodel import build_model_folder

    tmp = tempfile.mkdtemp(prefix="pion-serve-bench-")
    folder = build_model_folder(os.path.join(tmp, "model"), "llama_1b_layout", seed=5)
    sport, lane = free_port(), free_port()
    pion_server = subprocess.Popen([args.server, "--port", str(sport), "--kvcache-port", str(lane),
                                    "--dir", os.path.join(tmp, "server")],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    runs = []  # per repetition: [(route, seconds, usage), ...]
    mlx_server = None
    try:
        wait_port(sport, pion_server)
        for run in range(args.repeat):
            runs.append(pion_routes(folder, system_prompt(args.system_tokens, run), sport, lane))
        if not args.skip_mlx_lm:
            m_port = free_port()
            mlx_server = subprocess.Popen([sys.executable, "-m", "mlx_lm.server", "--model", folder,
                                           "--port", str(m_port)],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_port(m_port, mlx_server)
            chat(m_port, [{"role": "user", "content": "warm up"}], folder)
            for run in range(args.repeat):
                runs[run] += mlx_lm_routes(m_port, folder, system_prompt(args.system_tokens, run))
    finally:
        if mlx_server is not None:
            mlx_server.kill()
            mlx_server.wait()
        pion_server.terminate()
        pion_server.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    names = [name for name, _, _ in runs[0]]
    times = {name: [run[i][1] for run in runs] for i, name in enumerate(names)}
    median = {name: statistics.median(ts) for name, ts in times.items()}
    usages = {name: usage for name, _, usage in runs[-1]}
    cold, same = median["cold"], median["next turn, same process"]
    print(f"system prompt {args.system_tokens} tokens + 3 tools; prompt {usages['cold'].get('prompt_tokens')} tokens"
          + (f"; median of {args.repeat} runs" if args.repeat > 1 else ""))
    head = f"{'route':<28} {'TTFT ms':>10} {'vs cold':>8} {'vs next turn':>13} {'cached':>7} {'prompt':>7}"
    print(head + ("  runs (ms)" if args.repeat > 1 else ""))
    for name in names:
        t, usage = median[name], usages[name]
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", "")
        line = (f"{name:<28} {t * 1000:>10,.0f} {t / cold:>8.3f} {t / same:>13.2f} {cached!s:>7} "
                f"{usage.get('prompt_tokens', '')!s:>7}")
        if args.repeat > 1:
            line += "  " + " ".join(f"{x * 1000:,.0f}" for x in times[name])
        print(line)


if __name__ == "__main__":
    main()
