"""RedisVL (`SearchIndex`, its queries and filters, `SemanticCache`) against
pion-server, unmodified.

RedisVL builds FT.CREATE from a schema dict, reads FT.INFO back to check an index
(`exists`, `from_existing`, the semantic cache's schema comparison), writes hashes
through pipelines and turns FT.SEARCH replies into dicts. The vectors come from a tiny
deterministic vectorizer (words hashed into a fixed-dimension vector), so every
expected answer is computed here exactly, with numpy. Run with
PION_CLIENT_TESTS_PORT=<port of a Redis 8 with RediSearch> to check the expectations
against Redis itself.
"""

import time
import zlib

import numpy as np
import pytest
import redis
from redisvl.extensions.cache.llm import SemanticCache
from redisvl.extensions.message_history import MessageHistory, SemanticMessageHistory
from redisvl.extensions.router import Route, SemanticRouter
from redisvl.index import SearchIndex
from redisvl.query import (
    AggregateHybridQuery,
    CountQuery,
    FilterQuery,
    RangeQuery,
    TextQuery,
    VectorQuery,
)
from redisvl.query.filter import Num, Tag, Text
from redisvl.redis.utils import array_to_buffer
from redisvl.utils.vectorize.base import BaseVectorizer

DIM = 16
WORDS = "red blue green shoe boot shirt coat hat sock bag light heavy warm cold".split()
BRANDS = ["nike", "adidas", "puma"]

# MessageHistory.store() writes the "llm" role, which RedisVL itself deprecates.
pytestmark = pytest.mark.filterwarnings("ignore:Role 'llm' is a deprecated value")



def embed_text(text):
    """Each word adds a fixed pseudo-random vector (seeded by its CRC32)."""
    v = np.zeros(DIM, dtype=np.float64)
    for w in text.lower().split():
        v += np.random.default_rng(zlib.crc32(w.encode())).standard_normal(DIM)
    if not v.any():
        v[0] = 1.0
    return v.astype(np.float32)


class HashVectorizer(BaseVectorizer):
    """A deterministic toy embedding model: no download, same vector every run."""

    model: str = "toy-word-hash"
    dims: int = DIM

    def _embed(self, content, **kwargs):
        return [float(x) for x in embed_text(content)]

    def _embed_many(self, contents, batch_size=10, **kwargs):
        return [self._embed(c) for c in contents]


@pytest.fixture(params=[2, None], ids=["resp2", "resp3-wire"])
def client(request, server_port):
    # redis-py 8 speaks RESP3 by default but hands back RESP2-shaped results, which is
    # what RedisVL reads (an explicit protocol=3 client gives dicts, and RedisVL fails
    # on them against Redis too: 'dict' object has no attribute 'docs').
    r = redis.Redis(port=server_port, protocol=request.param)
    yield r
    for name in r.execute_command("FT._LIST"):
        r.execute_command("FT.DROPINDEX", name, "DD")
    r.close()


def products(n=120, seed=11):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        title = " ".join(rng.choice(WORDS, size=3, replace=False))
        out.append(
            {
                "id": f"{i:03d}",
                "title": title,
                "brand": BRANDS[i % 3],
                "price": int(10 + (i * 37) % 200),
                "vec": embed_text(title),
            }
        )
    return out


def schema(algorithm="hnsw", metric="cosine", name="rvl_products", storage="hash"):
    return {
        "index": {"name": name, "prefix": name, "storage_type": storage},
        "fields": [
            {"name": "id", "type": "tag"},
            {"name": "title", "type": "text"},
            {"name": "brand", "type": "tag"},
            {"name": "price", "type": "numeric", "attrs": {"sortable": True}},
            {
                "name": "embedding",
                "type": "vector",
                "attrs": {
                    "dims": DIM,
                    "algorithm": algorithm,
                    "distance_metric": metric,
                    "datatype": "float32",
                },
            },
        ],
    }


def make_index(client, algorithm="hnsw", metric="cosine", n=120):
    index = SearchIndex.from_dict(schema(algorithm, metric), redis_client=client)
    index.create(overwrite=True, drop=True)
    rows = products(n)
    keys = index.load(
        [
            {k: v for k, v in p.items() if k != "vec"}
            | {"embedding": array_to_buffer(p["vec"], "float32")}
            for p in rows
        ],
        id_field="id",
    )
    assert keys == [f"rvl_products:{p['id']}" for p in rows]
    return index, rows


def distances(metric, vecs, q):
    """RediSearch's distances: COSINE 1 - cos, IP 1 - dot, L2 squared."""
    if metric == "cosine":
        return 1 - (vecs @ q) / (np.linalg.norm(vecs, axis=1) * np.linalg.norm(q))
    if metric == "ip":
        return 1 - vecs @ q
    return ((vecs - q) ** 2).sum(axis=1)


def expected(rows, metric, q, k, keep=lambda p: True):
    rows = [p for p in rows if keep(p)]
    d = distances(metric, np.stack([p["vec"] for p in rows]).astype(np.float64), q.astype(np.float64))
    order = np.argsort(d, kind="stable")[:k]
    return [rows[i]["id"] for i in order], [float(d[i]) for i in order]


def ids(results):
    return [r["id"].split(":")[-1] for r in results]


@pytest.mark.parametrize(
    "algorithm,metric", [("hnsw", "cosine"), ("flat", "l2"), ("hnsw", "ip"), ("flat", "cosine")]
)
def test_vector_query_matches_brute_force(client, algorithm, metric):
    index, rows = make_index(client, algorithm, metric)
    q = embed_text("warm red boot")
    want, dists = expected(rows, metric, q, 7)
    # HNSW is approximate at its default EF_RUNTIME (Redis's misses neighbours here);
    # a wide ef_runtime, sent as a KNN attribute, makes both exact.
    extra = {"ef_runtime": 200} if algorithm == "hnsw" else {}
    res = index.query(
        VectorQuery(
            vector=q.tolist(),
            vector_field_name="embedding",
            return_fields=["title", "brand", "price"],
            num_results=7,
            **extra,
        )
    )
    # Ties in distance may come in either order: compare the distances.
    assert [round(float(r["vector_distance"]), 4) for r in res] == [round(d, 4) for d in dists]
    assert ids(res)[0] == want[0]
    by_id = {p["id"]: p for p in rows}
    for r in res:
        p = by_id[r["id"].split(":")[-1]]
        assert r["title"] == p["title"] and r["brand"] == p["brand"]
        assert int(r["price"]) == p["price"]
    if algorithm == "hnsw":
        res = index.query(VectorQuery(q.tolist(), "embedding", num_results=7))
        assert len(res) == 7
        assert len(set(ids(res)) & set(want)) >= 5


def test_vector_query_with_filters(client):
    index, rows = make_index(client)
    q = embed_text("blue shirt")
    cases = [
        (Tag("brand") == "nike", lambda p: p["brand"] == "nike"),
        (Tag("brand") == ["nike", "puma"], lambda p: p["brand"] in ("nike", "puma")),
        (Tag("brand") != "adidas", lambda p: p["brand"] != "adidas"),
        (Num("price") >= 100, lambda p: p["price"] >= 100),
        (Num("price") < 50, lambda p: p["price"] < 50),
        (Num("price").between(40, 120), lambda p: 40 <= p["price"] <= 120),
        (Num("price") == 47, lambda p: p["price"] == 47),
        (Num("price") != 47, lambda p: p["price"] != 47),
        (Text("title") == "coat", lambda p: "coat" in p["title"].split()),
        (Text("title") % "sho*", lambda p: any(w.startswith("sho") for w in p["title"].split())),
        (Text("title") != "coat", lambda p: "coat" not in p["title"].split()),
        (
            (Tag("brand") == "adidas") & (Num("price") > 60),
            lambda p: p["brand"] == "adidas" and p["price"] > 60,
        ),
        (
            (Tag("brand") == "puma") | (Text("title") == "hat"),
            lambda p: p["brand"] == "puma" or "hat" in p["title"].split(),
        ),
        (
            ((Tag("brand") == "nike") | (Tag("brand") == "puma")) & (Num("price") <= 150),
            lambda p: p["brand"] in ("nike", "puma") and p["price"] <= 150,
        ),
    ]
    for expr, keep in cases:
        res = index.query(
            VectorQuery(
                q.tolist(),
                "embedding",
                return_fields=["brand", "price", "title"],
                filter_expression=expr,
                num_results=5,
            )
        )
        want, dists = expected(rows, "cosine", q, 5, keep)
        assert [round(float(r["vector_distance"]), 4) for r in res] == [
            round(d, 4) for d in dists
        ], str(expr)
        assert all(keep({"brand": r["brand"], "price": int(r["price"]), "title": r["title"]}) for r in res)


def test_json_storage(client):
    """The same products stored as JSON documents (RedisVL's `storage_type: json`):
    FT.CREATE ON JSON with `$.name` fields, vectors as JSON arrays of floats."""
    index = SearchIndex.from_dict(
        schema("hnsw", "cosine", name="rvl_json", storage="json"), redis_client=client
    )
    index.create(overwrite=True, drop=True)
    rows = products()
    keys = index.load(
        [{k: v for k, v in p.items() if k != "vec"} | {"embedding": p["vec"].tolist()} for p in rows],
        id_field="id",
    )
    assert keys == [f"rvl_json:{p['id']}" for p in rows]
    assert client.execute_command("JSON.TYPE", keys[0], "$.embedding") == [b"array"]
    info = index.info()
    assert info["num_docs"] == len(rows) and info["hash_indexing_failures"] == 0, info
    q = embed_text("blue shirt")
    for expr, keep in [
        (None, lambda p: True),
        (Tag("brand") == "nike", lambda p: p["brand"] == "nike"),
        (Num("price").between(40, 120), lambda p: 40 <= p["price"] <= 120),
        (Text("title") == "coat", lambda p: "coat" in p["title"].split()),
    ]:
        res = index.query(
            VectorQuery(
                q.tolist(),
                "embedding",
                return_fields=["id", "brand", "price", "title"],
                filter_expression=expr,
                num_results=5,
            )
        )
        want, dists = expected(rows, "cosine", q, 5, keep)
        assert ids(res) == want, str(expr)
        assert [round(float(r["vector_distance"]), 4) for r in res] == [round(d, 4) for d in dists]
        assert all(keep({"brand": r["brand"], "price": int(r["price"]), "title": r["title"]}) for r in res)
    cheap = index.query(
        FilterQuery(
            filter_expression=Num("price") < 50, return_fields=["id", "price"], num_results=200
        )
    )
    assert sorted(ids(cheap)) == sorted(p["id"] for p in rows if p["price"] < 50)
    assert index.query(CountQuery(filter_expression=Tag("brand") == "puma")) == 40
    fetched = index.fetch("007")
    # RedisJSON's parser (and Pion's, which matches it) reads some doubles one ulp off.
    assert fetched["title"] == rows[7]["title"]
    assert np.allclose(fetched["embedding"], rows[7]["vec"], rtol=1e-12, atol=0)
    # A changed document is re-indexed, a deleted one leaves the index.
    client.execute_command("JSON.SET", keys[7], "$.brand", '"zara"')
    assert index.query(CountQuery(filter_expression=Tag("brand") == "zara")) == 1
    client.delete(keys[7])
    assert index.query(CountQuery(filter_expression=Tag("brand") == "zara")) == 0
    index.delete(drop=True)


def test_aggregate_hybrid_query(client):
    """RedisVL's AggregateHybridQuery: FT.AGGREGATE with ADDSCORES and SCORER BM25STD,
    the text score fused with the KNN similarity by APPLY, sorted by the fused score."""
    index, rows = make_index(client)
    q = embed_text("warm coat")
    res = index.query(
        AggregateHybridQuery(
            text="warm coat",
            text_field_name="title",
            vector=q.tolist(),
            vector_field_name="embedding",
            alpha=0.7,
            num_results=8,
            return_fields=["id", "title", "brand"],
            stopwords=None,
        )
    )
    assert 0 < len(res) <= 8
    for r in res:
        words = r["title"].split()
        assert "warm" in words or "coat" in words, r
        text, dist = float(r["text_score"]), float(r["vector_distance"])
        assert text > 0
        fused = 0.3 * text + 0.7 * (2 - dist) / 2
        assert abs(float(r["hybrid_score"]) - fused) < 1e-6, r
    scores = [float(r["hybrid_score"]) for r in res]
    assert scores == sorted(scores, reverse=True)
    # The KNN part: the nearest documents among those the text matches.
    matching = [p for p in rows if {"warm", "coat"} & set(p["title"].split())]
    want, _ = expected(matching, "cosine", q, 8)
    assert sorted(ids(res)) == sorted(want)


def test_range_query(client):
    index, rows = make_index(client)
    q = embed_text("cold green hat")
    for threshold in (0.2, 0.5, 0.9):
        res = index.query(
            RangeQuery(
                q.tolist(),
                "embedding",
                return_fields=["title"],
                distance_threshold=threshold,
                num_results=200,
            )
        )
        d = distances("cosine", np.stack([p["vec"] for p in rows]).astype(np.float64), q)
        want = {rows[i]["id"] for i in np.nonzero(d <= threshold)[0]}
        assert set(ids(res)) == want
        got = [float(r["vector_distance"]) for r in res]
        assert got == sorted(got)
        assert all(x <= threshold + 1e-6 for x in got)
    # With a filter.
    res = index.query(
        RangeQuery(
            q.tolist(),
            "embedding",
            distance_threshold=0.6,
            filter_expression=Tag("brand") == "puma",
            num_results=200,
        )
    )
    d = distances("cosine", np.stack([p["vec"] for p in rows]).astype(np.float64), q)
    want = {rows[i]["id"] for i in np.nonzero(d <= 0.6)[0] if rows[i]["brand"] == "puma"}
    assert set(ids(res)) == want


def test_filter_count_and_pagination(client):
    index, rows = make_index(client)
    expr = (Tag("brand") == "nike") & (Num("price") > 50)
    want = sorted(
        (p for p in rows if p["brand"] == "nike" and p["price"] > 50),
        key=lambda p: (p["price"], p["id"]),
    )
    assert index.query(CountQuery(expr)) == len(want)
    assert index.query(CountQuery()) == len(rows)
    res = index.query(
        FilterQuery(expr, return_fields=["id", "price"], num_results=100, sort_by="price")
    )
    assert [int(r["price"]) for r in res] == [p["price"] for p in want]
    res = index.query(FilterQuery(expr, return_fields=["price"], sort_by=("price", "DESC"), num_results=3))
    assert [int(r["price"]) for r in res] == [p["price"] for p in want][::-1][:3]
    # paginate: LIMIT offset/size until an empty page; sorted on the unique id.
    pages = list(
        index.paginate(FilterQuery(Tag("brand") == "puma", return_fields=["id"], sort_by="id"), page_size=7)
    )
    got = [i for page in pages for i in ids(page)]
    assert got == sorted(p["id"] for p in rows if p["brand"] == "puma")
    assert [len(p) for p in pages][:-1] == [7] * (len(pages) - 1)
    # Explicit paging on a query.
    q = FilterQuery(Tag("brand") == "adidas", return_fields=["id"], sort_by="id")
    q.paging(5, 4)
    assert ids(index.query(q)) == sorted(p["id"] for p in rows if p["brand"] == "adidas")[5:9]
    # batch_query: several queries in one pipeline.
    a, b = index.batch_query(
        [FilterQuery(Tag("brand") == "nike", num_results=100), FilterQuery(Num("price") == 47)]
    )
    assert set(ids(a)) == {p["id"] for p in rows if p["brand"] == "nike"}
    assert set(ids(b)) == {p["id"] for p in rows if p["price"] == 47}


def test_exists_info_from_existing_fetch_and_delete(client):
    index, rows = make_index(client, "flat", "l2", n=30)
    assert index.exists()
    info = index.info()
    assert info["index_name"] == "rvl_products"
    assert int(info["num_docs"]) == 30
    # from_existing rebuilds the schema from FT.INFO: the same schema must come back.
    again = SearchIndex.from_existing("rvl_products", redis_client=client)
    assert again.schema.to_dict() == index.schema.to_dict()
    hnsw, _ = make_index(client, "hnsw", "ip", n=10)
    again = SearchIndex.from_existing("rvl_products", redis_client=client)
    assert again.schema.to_dict() == hnsw.schema.to_dict()
    assert again.fetch("003")["title"] == products(10)[3]["title"]
    assert again.query(CountQuery()) == 10
    assert index.listall() == ["rvl_products"]
    index.drop_keys(["rvl_products:001", "rvl_products:002"])
    assert index.query(CountQuery()) == 8
    assert index.clear() == 8
    assert index.query(CountQuery()) == 0
    index.delete(drop=True)
    assert not index.exists()
    assert client.execute_command("FT._LIST") == []


def test_create_overwrite_keeps_or_drops_data(client):
    index, rows = make_index(client, n=20)
    index.create(overwrite=True, drop=False)
    # Rescanned from the hashes (in the background in Redis: wait for it).
    deadline = time.time() + 5
    while index.query(CountQuery()) != 20 and time.time() < deadline:
        time.sleep(0.05)
    assert index.query(CountQuery()) == 20
    index.create(overwrite=True, drop=True)
    assert index.query(CountQuery()) == 0
    assert client.dbsize() == 0


def test_semantic_cache(client, server_port):
    vec = HashVectorizer()
    cache = SemanticCache(
        name="llmcache",
        distance_threshold=0.1,
        vectorizer=vec,
        redis_client=client,
        filterable_fields=[{"name": "user", "type": "tag"}],
        overwrite=True,
    )
    try:
        k1 = cache.store("what colour is the sky", "blue", metadata={"src": "t"}, filters={"user": "ann"})
        cache.store("warm red boot", "a boot", filters={"user": "bob"})
        assert k1.startswith("llmcache:")
        hit = cache.check("what colour is the sky")
        assert [h["response"] for h in hit] == ["blue"]
        assert hit[0]["metadata"] == {"src": "t"}
        assert hit[0]["prompt"] == "what colour is the sky"
        assert float(hit[0]["vector_distance"]) < 1e-5
        # A different prompt is farther than the threshold: a miss; a looser one hits.
        assert cache.check("red boot") == []
        assert [h["response"] for h in cache.check("red boot", distance_threshold=0.5)] == ["a boot"]
        # The filterable tag.
        assert cache.check("warm red boot", filter_expression=Tag("user") == "ann") == []
        assert [h["response"] for h in cache.check("warm red boot", filter_expression=Tag("user") == "bob")] == ["a boot"]
        assert cache.check("what colour is the sky", return_fields=["response"])[0].keys() >= {"response", "key"}
        # TTL: set on store, refreshed by a hit.
        cache.set_ttl(30)
        k3 = cache.store("cold green hat", "a hat")
        assert 0 < client.ttl(k3) <= 30
        client.expire(k3, 5)
        assert cache.check("cold green hat")
        assert client.ttl(k3) > 5
        cache.set_ttl(None)
        # Reopening with the same schema checks FT.INFO against it (no overwrite).
        same = SemanticCache(
            name="llmcache",
            vectorizer=vec,
            redis_client=client,
            filterable_fields=[{"name": "user", "type": "tag"}],
        )
        assert [h["response"] for h in same.check("warm red boot")] == ["a boot"]
        cache.drop(keys=[k1])
        assert cache.check("what colour is the sky") == []
        cache.clear()
        assert cache.check("warm red boot") == []
        assert client.keys("llmcache:*") == []
        assert cache.index.exists()
    finally:
        cache.delete()
    assert not cache.index.exists()


def test_semantic_cache_expiry(client):
    """An expired entry leaves the index at once: the next check misses."""
    cache = SemanticCache(
        name="ttlcache", vectorizer=HashVectorizer(), redis_client=client, ttl=60, overwrite=True
    )
    try:
        key = cache.store("short lived", "gone soon")
        assert 0 < client.ttl(key) <= 60
        assert cache.check("short lived")
        client.pexpire(key, 50)
        time.sleep(0.3)
        assert cache.check("short lived") == []
        assert cache.index.query(CountQuery()) == 0
    finally:
        cache.delete()


def test_text_query_scorers_and_in_order(client):
    index, rows = make_index(client)
    has = lambda p, w: w in p["title"].split()  # noqa: E731
    for scorer in ("BM25STD", "TFIDF", "BM25", "TFIDF.DOCNORM", "DISMAX", "DOCSCORE"):
        res = index.query(
            TextQuery(
                "warm boot",
                "title",
                text_scorer=scorer,
                return_fields=["title"],
                num_results=200,
                stopwords=None,
            )
        )
        want = {p["id"] for p in rows if has(p, "warm") or has(p, "boot")}
        assert set(ids(res)) == want, scorer
        scores = [float(r["score"]) for r in res]
        assert scores == sorted(scores, reverse=True), scorer
        if scorer in ("DISMAX", "DOCSCORE"):
            continue  # the best term's frequency, the document's score: all equal here
        # Titles with both words rank above titles with one.
        both = [has(r, "warm") and has(r, "boot") for r in ({"title": x["title"]} for x in res)]
        assert both == sorted(both, reverse=True), scorer
    # With a filter, and INORDER (words in the query's order).
    res = index.query(
        TextQuery("warm", "title", filter_expression=Tag("brand") == "nike", stopwords=None, num_results=200)
    )
    assert set(ids(res)) == {p["id"] for p in rows if has(p, "warm") and p["brand"] == "nike"}
    res = index.query(
        FilterQuery(Text("title") % "red boot", return_fields=["title"], in_order=True, num_results=200)
    )
    got = {r["title"] for r in res}
    want = set()
    for p in rows:
        w = p["title"].split()
        if "red" in w and "boot" in w and w.index("red") < w.index("boot"):
            want.add(p["title"])
    assert got == want


def test_vector_query_hybrid_policies(client):
    index, rows = make_index(client, "hnsw", "l2")
    q = embed_text("heavy coat")
    keep = lambda p: p["brand"] == "adidas"  # noqa: E731
    want, dists = expected(rows, "l2", q, 5, keep)
    for policy, extra in (("ADHOC_BF", {}), ("BATCHES", {"batch_size": 8}), ("BATCHES", {})):
        res = index.query(
            VectorQuery(
                q.tolist(),
                "embedding",
                filter_expression=Tag("brand") == "adidas",
                num_results=5,
                hybrid_policy=policy,
                **extra,
            )
        )
        assert [round(float(r["vector_distance"]), 3) for r in res] == [round(d, 3) for d in dists]
    # Distances normalised by RedisVL (client side) still in order.
    res = index.query(VectorQuery(q.tolist(), "embedding", num_results=5, normalize_vector_distance=True))
    got = [float(r["vector_distance"]) for r in res]
    assert got == sorted(got, reverse=True) and all(0 <= x <= 1 for x in got)


def test_message_history(client):
    history = MessageHistory("chat", session_tag="s1", redis_client=client)
    try:
        history.add_messages(
            [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "hello there"},
                {"role": "llm", "content": "hi"},
            ]
        )
        history.store("what is red", "a colour")
        history.store("other session", "yes", session_tag="s2")
        assert history.count() == 5
        assert history.count(session_tag="s2") == 2
        recent = history.get_recent(top_k=3)
        assert recent == [
            {"role": "llm", "content": "hi"},
            {"role": "user", "content": "what is red"},
            {"role": "llm", "content": "a colour"},
        ]
        assert history.get_recent(top_k=10, role="user", as_text=True) == ["hello there", "what is red"]
        assert history.get_recent(session_tag="s2", as_text=True) == ["other session", "yes"]
        assert [m["content"] for m in history.messages][:2] == ["be brief", "hello there"]
        history.drop()  # the latest message of the session
        assert history.count() == 4
        history.clear()
        assert history.count() == 0
    finally:
        history.delete()


def test_semantic_message_history(client):
    history = SemanticMessageHistory(
        "semchat", session_tag="s1", vectorizer=HashVectorizer(), redis_client=client, overwrite=True
    )
    try:
        history.store("warm red boot", "a boot for winter")
        history.store("cold green hat", "a hat")
        history.store("blue shirt", "a shirt")
        relevant = history.get_relevant("warm red boot", distance_threshold=0.05)
        assert relevant == [{"role": "user", "content": "warm red boot"}]
        assert history.get_relevant("sock bag", distance_threshold=0.01) == []
        assert history.get_relevant("sock bag", distance_threshold=0.01, fall_back=True, top_k=2) == [
            {"role": "user", "content": "blue shirt"},
            {"role": "llm", "content": "a shirt"},
        ]
        assert history.get_recent(top_k=2, as_text=True) == ["blue shirt", "a shirt"]
        assert history.count() == 6
    finally:
        history.delete()


def test_semantic_router(client):
    router = SemanticRouter(
        name="router",
        vectorizer=HashVectorizer(),
        routes=[
            Route(name="shoes", references=["red boot", "warm boot", "shoe"], distance_threshold=0.5),
            Route(name="hats", references=["green hat", "cold hat"], distance_threshold=0.5),
        ],
        redis_client=client,
        overwrite=True,
    )
    try:
        assert router("warm red boot").name == "shoes"
        assert router("cold green hat").name == "hats"
    finally:
        router.delete()


def test_drop_by_filter(client):
    index, rows = make_index(client, n=30)
    assert index.drop_by_filter(Tag("brand") == "nike").matched == 10
    assert index.query(CountQuery()) == 20
    assert index.query(CountQuery(Tag("brand") == "nike")) == 0


def test_update_by_filter(client):
    index, rows = make_index(client, n=30)
    assert index.update_by_filter(Tag("brand") == "puma", {"price": 1}).matched == 10
    assert index.query(CountQuery(Num("price") == 1)) == 10


def test_async_search_index(server_port):
    """AsyncSearchIndex over redis.asyncio, as async apps (FastAPI and the like) use it."""
    import asyncio

    import redis.asyncio as aredis
    from redisvl.index import AsyncSearchIndex

    async def scenario():
        client = aredis.Redis(port=server_port)
        index = AsyncSearchIndex.from_dict(schema("hnsw", "cosine"), redis_client=client)
        await index.create(overwrite=True, drop=True)
        rows = products(40)
        await index.load(
            [
                {k: v for k, v in p.items() if k != "vec"}
                | {"embedding": array_to_buffer(p["vec"], "float32")}
                for p in rows
            ],
            id_field="id",
        )
        q = embed_text("green coat")
        res = await index.query(
            VectorQuery(
                q.tolist(),
                "embedding",
                num_results=3,
                filter_expression=Tag("brand") == "puma",
            )
        )
        want, dists = expected(rows, "cosine", q, 3, lambda p: p["brand"] == "puma")
        assert [round(float(r["vector_distance"]), 4) for r in res] == [round(d, 4) for d in dists]
        assert await index.query(CountQuery(Num("price") > 100)) == sum(p["price"] > 100 for p in rows)
        assert await index.exists()
        await index.delete(drop=True)
        assert not await index.exists()
        await client.aclose()

    asyncio.run(scenario())
