"""redis-py's `vset()` API (Redis 8 vector sets) against pion-server, unmodified, over
RESP2 and RESP3.

redis-py shapes replies itself: VSIM WITHSCORES/WITHATTRIBS become dicts (from flat
pairs in RESP2, from maps in RESP3), VEMB RAW a dict, VINFO a dict, VLINKS WITHSCORES a
list of dicts. Each test checks what an application gets back, so a reply shape redis-py
cannot parse fails here. Run with PION_CLIENT_TESTS_PORT=<port of a Redis 8> to check
the expectations against Redis itself.
"""

import numpy as np
import pytest
import redis
from redis.commands.vectorset.commands import QuantizationOptions


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def r(request, server_port):
    client = redis.Redis(port=server_port, protocol=request.param, decode_responses=True)
    client.delete("vs", "vs:bin", "vs:q8", "vs:raw", "vs:red", "nokey")
    yield client
    client.delete("vs", "vs:bin", "vs:q8", "vs:raw", "vs:red")
    client.close()


def unit(v):
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


def fill(r, n=60, dim=8, seed=3, key="vs", **kw):
    """n random elements e0..e{n-1}; every element has a year and a genre."""
    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    for i, v in enumerate(vecs):
        attrs = {"year": 1950 + i, "genre": "drama" if i % 2 else "comedy"}
        assert r.vset().vadd(key, v.tolist(), f"e{i}", attributes=attrs, **kw) == 1
    return vecs


def cosine_order(vecs, q, allowed=None):
    """Elements by cosine similarity to q, best first (VSIM's order)."""
    sims = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)) @ unit(q)
    order = np.argsort(-sims, kind="stable")
    return [f"e{i}" for i in order if allowed is None or allowed(i)], sims


def test_add_card_dim_and_membership(r):
    vs = r.vset()
    vecs = fill(r, n=10)
    assert vs.vcard("vs") == 10
    assert vs.vdim("vs") == 8
    # Re-adding an element updates it: VADD answers 0.
    assert vs.vadd("vs", vecs[0].tolist(), "e0") == 0
    # Bytes go as FP32 blobs.
    assert vs.vadd("vs", vecs[1].tobytes(), "blob") == 1
    assert vs.vcard("vs") == 11
    assert vs.vrem("vs", "blob") == 1
    assert vs.vrem("vs", "blob") == 0
    assert vs.vcard("vs") == 10
    assert vs.vcard("nokey") == 0
    with pytest.raises(redis.ResponseError):
        vs.vdim("nokey")
    with pytest.raises(redis.ResponseError):
        vs.vadd("vs", [1.0, 2.0], "wrongdim")


def test_vsim_by_vector_element_and_blob(r):
    vs = r.vset()
    vecs = fill(r)
    q = vecs[7] + 0.05
    want, sims = cosine_order(vecs, q)
    assert vs.vsim("vs", q.tolist(), count=5) == want[:5]
    assert vs.vsim("vs", q.astype(np.float32).tobytes(), count=5) == want[:5]
    # Default count is 10.
    assert vs.vsim("vs", q.tolist()) == want[:10]
    # By element: the element itself comes first.
    assert vs.vsim("vs", "e7", count=3)[0] == "e7"
    # truth (linear scan), no_thread and ef give the same answer on a small set.
    assert vs.vsim("vs", q.tolist(), count=5, truth=True) == want[:5]
    assert vs.vsim("vs", q.tolist(), count=5, no_thread=True) == want[:5]
    assert vs.vsim("vs", q.tolist(), count=5, ef=200) == want[:5]


def test_vsim_with_scores_and_attribs(r):
    vs = r.vset()
    vecs = fill(r)
    q = vecs[11]
    want, sims = cosine_order(vecs, q)
    scored = vs.vsim("vs", q.tolist(), with_scores=True, count=4)
    assert list(scored) == want[:4]
    for name, score in scored.items():
        # VSIM reports (1 + cosine) / 2, from Q8-quantised vectors.
        assert isinstance(score, float)
        assert abs(score - (1 + sims[int(name[1:])]) / 2) < 0.02
    assert abs(scored["e11"] - 1.0) < 1e-3

    attribs = vs.vsim("vs", q.tolist(), with_attribs=True, count=3)
    assert list(attribs) == want[:3]
    assert attribs["e11"] == {"year": 1961, "genre": "drama"}

    both = vs.vsim("vs", q.tolist(), with_scores=True, with_attribs=True, count=3)
    assert list(both) == want[:3]
    assert both["e11"]["attributes"] == {"year": 1961, "genre": "drama"}
    assert abs(float(both["e11"]["score"]) - 1.0) < 1e-3

    # An element without attributes: None in the attribs dict.
    vs.vadd("vs", q.tolist(), "bare")
    attribs = vs.vsim("vs", "bare", with_attribs=True, count=2)
    assert attribs["bare"] is None


def test_vsim_filter_epsilon_and_filter_ef(r):
    vs = r.vset()
    vecs = fill(r)
    q = vecs[20]
    want, sims = cosine_order(
        vecs, q, allowed=lambda i: i % 2 == 1 and 1950 + i >= 1980
    )
    got = vs.vsim(
        "vs",
        q.tolist(),
        count=5,
        filter='.genre == "drama" and .year >= 1980',
        filter_ef=500,
    )
    assert got == want[:5]
    got = vs.vsim("vs", q.tolist(), count=100, filter='.genre in ["comedy"] and .year < 1960')
    assert sorted(got, key=lambda e: int(e[1:])) == [f"e{i}" for i in range(0, 10, 2)]
    assert vs.vsim("vs", q.tolist(), filter=".year > 3000") == []
    # EPSILON: only elements whose distance (1 - score) is within it.
    close = vs.vsim("vs", q.tolist(), with_scores=True, count=60, epsilon=0.3)
    assert "e20" in close
    assert all(s >= 0.7 - 1e-6 for s in close.values())
    all_scores = vs.vsim("vs", q.tolist(), with_scores=True, count=60)
    assert set(close) == {e for e, s in all_scores.items() if s >= 0.7}


def test_vemb_plain_and_raw(r):
    vs = r.vset()
    v = [0.6, -0.8, 0.0, 0.0]
    vs.vadd("vs:raw", v, "a", quantization=QuantizationOptions.NOQUANT)
    emb = vs.vemb("vs:raw", "a")
    assert len(emb) == 4
    assert all(abs(x - y) < 1e-6 for x, y in zip(emb, v))
    raw = vs.vemb("vs:raw", "a", raw=True)
    assert raw["quantization"] in ("f32", b"f32")
    assert len(raw["raw"]) == 16
    assert abs(raw["l2"] - 1.0) < 1e-6
    vs.vadd("vs:q8", [3.0, 4.0, 0.0, 0.0], "a", quantization=QuantizationOptions.Q8)
    raw = vs.vemb("vs:q8", "a", raw=True)
    assert raw["quantization"] in ("int8", b"int8")
    assert abs(raw["l2"] - 5.0) < 1e-4
    assert "range" in raw
    emb = vs.vemb("vs:q8", "a")
    assert abs(emb[0] - 3.0) < 0.05 and abs(emb[1] - 4.0) < 0.05
    vs.vadd("vs:bin", [1.0, -2.0, 3.0, -4.0], "a", quantization=QuantizationOptions.BIN)
    raw = vs.vemb("vs:bin", "a", raw=True)
    assert raw["quantization"] in ("bin", b"bin")
    assert [x > 0 for x in vs.vemb("vs:bin", "a")] == [True, False, True, False]
    assert vs.vemb("vs:raw", "nope") is None
    assert vs.vemb("nokey", "a") is None


def test_vinfo_and_vlinks(r):
    vs = r.vset()
    fill(r, n=30, numlinks=8)
    info = vs.vinfo("vs")
    assert info["quant-type"] == "int8"
    assert info["vector-dim"] == 8
    assert info["size"] == 30
    assert info["hnsw-m"] == 8
    assert info["attributes-count"] == 30
    assert vs.vinfo("nokey") is None
    links = vs.vlinks("vs", "e0")
    assert isinstance(links, list) and links
    assert all(isinstance(level, list) for level in links)
    assert set(links[0]) <= {f"e{i}" for i in range(1, 30)}
    scored = vs.vlinks("vs", "e0", with_scores=True)
    assert [set(level) for level in scored] == [set(level) for level in links]
    assert all(0.0 <= s <= 1.0 for level in scored for s in level.values())
    assert vs.vlinks("vs", "nope") is None
    assert vs.vlinks("nokey", "e0") is None


def test_attributes_set_get_and_clear(r):
    vs = r.vset()
    fill(r, n=4)
    assert vs.vgetattr("vs", "e1") == {"year": 1951, "genre": "drama"}
    assert vs.vsetattr("vs", "e1", {"year": 2024, "tags": ["a", "b"], "ok": True}) == 1
    assert vs.vgetattr("vs", "e1") == {"year": 2024, "tags": ["a", "b"], "ok": True}
    assert vs.vsim("vs", "e1", filter=".year == 2024 and .ok") == ["e1"]
    assert vs.vsim("vs", "e1", filter='"a" in .tags') == ["e1"]
    # None (an empty JSON object on the wire) removes them.
    assert vs.vsetattr("vs", "e1", None) == 1
    assert vs.vgetattr("vs", "e1") is None
    assert vs.vsetattr("vs", "nope", {"x": 1}) == 0
    assert vs.vgetattr("vs", "nope") is None
    assert vs.vgetattr("nokey", "e1") is None


def test_vrandmember(r):
    vs = r.vset()
    fill(r, n=5)
    names = {f"e{i}" for i in range(5)}
    assert vs.vrandmember("vs") in names
    three = vs.vrandmember("vs", 3)
    assert len(three) == 3 and len(set(three)) == 3 and set(three) <= names
    assert sorted(vs.vrandmember("vs", 10)) == sorted(names)
    dup = vs.vrandmember("vs", -12)
    assert len(dup) == 12 and set(dup) <= names
    assert vs.vrandmember("vs", 0) == []
    assert vs.vrandmember("nokey") is None
    assert vs.vrandmember("nokey", 3) == []


def test_vadd_options_cas_ef_reduce(r):
    vs = r.vset()
    rng = np.random.default_rng(5)
    for i in range(20):
        v = rng.standard_normal(16).tolist()
        assert vs.vadd("vs", v, f"x{i}", cas=True, ef=100, numlinks=12) == 1
    assert vs.vinfo("vs")["hnsw-m"] == 12
    assert vs.vsim("vs", "x3", count=1) == ["x3"]
    # REDUCE projects to fewer dimensions; VDIM reports the reduced one.
    for i in range(5):
        vs.vadd("vs:red", rng.standard_normal(32).tolist(), f"y{i}", reduce_dim=8)
    assert vs.vdim("vs:red") == 8
    assert vs.vinfo("vs:red")["projection-input-dim"] == 32
    assert vs.vsim("vs:red", "y2", count=1) == ["y2"]


def test_pipeline_and_bytes_client(server_port):
    """A pipeline of V* commands (without MULTI), and a client without decode_responses (bytes)."""
    r = redis.Redis(port=server_port)
    r.delete("vs")
    pipe = r.pipeline(transaction=False)
    for i in range(5):
        pipe.vset().vadd("vs", [float(i), 1.0], f"p{i}", attributes={"i": i})
    pipe.vset().vcard("vs")
    assert pipe.execute() == [1, 1, 1, 1, 1, 5]
    got = r.vset().vsim("vs", [4.0, 1.0], with_scores=True, count=2)
    assert list(got) == [b"p4", b"p3"]
    assert r.vset().vgetattr("vs", "p2") == {"i": 2}
    assert r.vset().vinfo("vs")[b"size"] == 5
    r.delete("vs")
    r.close()
