"""redis-py, unmodified, against a real pion-server process (RESP2 and RESP3)."""

import pytest
import redis
from conftest import PionServerProcess


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc = PionServerProcess(tmp_path_factory.mktemp("pion-data"), "--threads", "2").start()
    yield proc.port
    assert proc.stop() == 0, "SIGTERM must shut pion-server down cleanly"


@pytest.mark.parametrize("protocol", [2, 3])
def test_core_types(server, protocol):
    r = redis.Redis(port=server, protocol=protocol, decode_responses=True)
    r.flushall()
    assert r.set("k", "v", ex=100) is True
    assert r.get("k") == "v"
    assert 0 < r.ttl("k") <= 100
    assert r.incrby("n", 5) == 5
    assert r.incrbyfloat("f", 0.5) == 0.5
    assert r.hset("h", mapping={"a": "1", "b": "2"}) == 2
    assert r.hgetall("h") == {"a": "1", "b": "2"}
    assert r.rpush("l", "x", "y", "z") == 3
    assert r.lrange("l", 0, -1) == ["x", "y", "z"]
    assert r.sadd("s", "a", "b") == 2
    assert r.smembers("s") == {"a", "b"}
    assert r.zadd("z", {"m1": 1.5, "m2": 0.5}) == 2
    # redis-py returns tuples over RESP2 and two-element lists over RESP3 (as with Redis).
    pairs = [tuple(p) for p in r.zrange("z", 0, -1, withscores=True)]
    assert pairs == [("m2", 0.5), ("m1", 1.5)]
    assert r.zscore("z", "m1") == 1.5
    assert r.type("z") == "zset"
    assert sorted(r.keys("*")) == ["f", "h", "k", "l", "n", "s", "z"]
    assert r.dbsize() == 7
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.lpush("h", "x")


def test_pipeline_without_transaction_and_scan(server):
    r = redis.Redis(port=server, decode_responses=True)
    r.flushall()
    pipe = r.pipeline(transaction=False)
    for i in range(500):
        pipe.set(f"key:{i}", i)
    assert all(pipe.execute())
    assert {k for k in r.scan_iter(match="key:*", count=50)} == {f"key:{i}" for i in range(500)}
    info = r.info()
    assert info["redis_version"] == "7.0.15"
    assert "pion_version" in info
    assert r.client_setname("tester") is True
    assert r.client_getname() == "tester"


def test_prompt_cache_commands_through_redis_py(server):
    """The KV.* commands are plain binary-safe RESP: redis-py drives them unmodified."""
    import json
    import struct

    r = redis.Redis(port=server)
    manifest = {
        "model": "py-test",
        "block_tokens": 4,
        "dtype": "f16",
        "layers": [{"kind": "attention", "kv_heads": 1, "head_dim": 8}],
    }
    assert r.execute_command("KV.REGISTER", "py", json.dumps(manifest)) == b"OK"
    tokens = struct.pack("<4I", 1, 2, 3, 4)
    layer = bytes(range(2 * 1 * 4 * 8 * 2))  # K and V, f16
    block_id = r.execute_command("KV.PUT", "py", "root", tokens, layer)
    assert len(block_id) == 32
    matched, ids = r.execute_command("KV.MATCH", "py", tokens + struct.pack("<I", 9))
    assert matched == 4 and ids == [block_id]
    count, data = r.execute_command("KV.GET", "py", block_id)
    assert count == 4 and data == layer
    with pytest.raises(redis.ResponseError, match="unknown namespace"):
        r.execute_command("KV.MATCH", "nope", tokens)


@pytest.mark.parametrize("protocol", [2, 3])
def test_register_script_runs_through_evalsha(server, protocol):
    """redis-py's Script objects: EVALSHA first, EVAL on NOSCRIPT, then cached."""
    client = redis.Redis(port=server, protocol=protocol)
    client.flushall()
    client.script_flush()
    bump = client.register_script(
        "local v = redis.call('incrby', KEYS[1], ARGV[1]) "
        "return {v, redis.call('get', KEYS[1]), cjson.encode({n = v})}"
    )
    assert bump(keys=["counter"], args=[5]) == [5, b"5", b'{"n":5}']
    assert client.script_exists(bump.sha) == [True]
    assert bump(keys=["counter"], args=[2]) == [7, b"7", b'{"n":7}']
    with pytest.raises(redis.exceptions.ResponseError, match="WRONGTYPE"):
        client.lpush("alist", "x")
        bump(keys=["alist"], args=[1])
    pipe = client.pipeline(transaction=False)
    bump(keys=["counter"], args=[1], client=pipe)
    pipe.get("counter")
    assert pipe.execute() == [[8, b"8", b'{"n":8}'], b"8"]


@pytest.mark.parametrize("protocol", [2, 3])
def test_pipeline_transaction_and_watch(server, protocol):
    r = redis.Redis(port=server, protocol=protocol, decode_responses=True)
    r.flushall()
    with r.pipeline(transaction=True) as p:
        p.set("a", 1).incr("a").lpush("a", "x").get("a")
        with pytest.raises(redis.ResponseError):
            p.execute()
    assert r.get("a") == "2"
    assert r.pipeline(transaction=True).set("b", 1).incr("b", 5).execute() == [True, 6]
    # WATCH: another client's write makes the transaction fail, a retry succeeds.
    other = redis.Redis(port=server, protocol=protocol, decode_responses=True)
    with r.pipeline(transaction=True) as p:
        p.watch("b")
        other.set("b", 100)
        p.multi()
        p.set("b", 7)
        with pytest.raises(redis.WatchError):
            p.execute()
    assert r.get("b") == "100"

    def add_one(pipe):
        value = int(pipe.get("b"))
        pipe.multi()
        pipe.set("b", value + 1)

    r.transaction(add_one, "b")
    assert r.get("b") == "101"


def test_transactions_and_blocking_pops_across_threads(server):
    """Writers on several connections move units between counters inside MULTI/EXEC;
    a reader's transactional snapshot always sees the same total. Consumers block on
    a list that producers fill; every item arrives exactly once."""
    import threading

    r = redis.Redis(port=server, decode_responses=True)
    r.flushall()
    keys = [f"acct:{i}" for i in range(6)]
    r.mset({k: 100 for k in keys})
    stop = threading.Event()
    errors = []

    def mover(seed):
        import random

        rnd = random.Random(seed)
        c = redis.Redis(port=server, decode_responses=True)
        for _ in range(300):
            a, b = rnd.sample(keys, 2)
            n = rnd.randint(1, 5)
            c.pipeline(transaction=True).decrby(a, n).incrby(b, n).execute()

    def auditor():
        c = redis.Redis(port=server, decode_responses=True)
        while not stop.is_set():
            total = sum(int(v) for v in c.pipeline(transaction=True).mget(keys).execute()[0])
            if total != 600:
                errors.append(total)
            script_total = c.eval(
                "local s = 0 for _, k in ipairs(KEYS) do s = s + tonumber(redis.call('get', k)) end return s",
                len(keys),
                *keys,
            )
            if script_total != 600:
                errors.append(script_total)

    movers = [threading.Thread(target=mover, args=(s,)) for s in range(4)]
    audit = threading.Thread(target=auditor)
    audit.start()
    for t in movers:
        t.start()
    for t in movers:
        t.join()
    stop.set()
    audit.join()
    assert errors == []
    assert sum(int(v) for v in r.mget(keys)) == 600

    got = []
    lock = threading.Lock()

    def consumer():
        c = redis.Redis(port=server, decode_responses=True)
        while True:
            item = c.blpop(["jobs"], timeout=2)
            if item is None:
                return
            with lock:
                got.append(item[1])

    consumers = [threading.Thread(target=consumer) for _ in range(3)]
    for t in consumers:
        t.start()
    for i in range(300):
        r.rpush("jobs", f"job{i}")
    for t in consumers:
        t.join()
    assert sorted(got) == sorted(f"job{i}" for i in range(300))
