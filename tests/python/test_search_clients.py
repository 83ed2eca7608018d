"""redis-py's `ft()` search API against pion-server, unmodified, over RESP2 and RESP3.

redis-py's default handshake is RESP2; with `protocol=3` it sends `HELLO 3` and then
parses FT.SEARCH replies as maps. Both must give the same documents.
"""

import struct

import numpy as np
import pytest
import redis
from redis.commands.search.field import NumericField, TagField, TextField, VectorField
from redis.commands.search.index_definition import IndexDefinition, IndexType
from redis.commands.search.query import Query
from redis.commands.search.suggestion import Suggestion


def blob(v):
    return np.asarray(v, dtype=np.float32).tobytes()


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def client(request, pion_server):
    r = redis.Redis(port=pion_server.port, protocol=request.param)
    r.flushall()
    yield r
    for name in r.execute_command("FT._LIST"):
        r.ft(name.decode() if isinstance(name, bytes) else name).dropindex()
    r.close()


def create_docs(r, n=200, dim=8, seed=7):
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    r.ft("docs").create_index(
        [
            TextField("title"),
            TagField("genre"),
            NumericField("year", sortable=True),
            VectorField(
                "embedding",
                "HNSW",
                {"TYPE": "FLOAT32", "DIM": dim, "DISTANCE_METRIC": "L2"},
            ),
        ],
        definition=IndexDefinition(prefix=["doc:"], index_type=IndexType.HASH),
    )
    pipe = r.pipeline(transaction=False)
    for i, v in enumerate(vecs):
        pipe.hset(
            f"doc:{i}",
            mapping={
                "title": f"story number {i} " + ("dragon" if i % 3 == 0 else "river"),
                "genre": "fantasy" if i % 2 else "drama",
                "year": 1900 + i,
                "embedding": v.tobytes(),
            },
        )
    pipe.execute()
    return vecs


class Doc:
    """One result, the same whichever protocol redis-py parsed (RESP3 gives dicts)."""

    def __init__(self, id, fields):
        self.id = id
        for k, v in fields.items():
            setattr(self, k, v)


def decode(x):
    return x.decode() if isinstance(x, bytes) else x


def results(res):
    """(total, [Doc]) from a RESP2 `Result` or a RESP3 map."""
    if isinstance(res, dict):
        docs = [
            Doc(
                decode(d["id"]),
                {decode(k): decode(v) for k, v in d.get("extra_attributes", {}).items()},
            )
            for d in res["results"]
        ]
        return res["total_results"], docs
    return res.total, res.docs


def exact_knn(vecs, q, k, allowed=None):
    d = ((vecs - q) ** 2).sum(axis=1)
    order = [i for i in np.argsort(d, kind="stable") if allowed is None or allowed(i)]
    return [f"doc:{i}" for i in order[:k]]


def test_knn_matches_brute_force(client):
    vecs = create_docs(client)
    q = vecs[17] + 0.01
    res = client.ft("docs").search(
        Query("*=>[KNN 10 @embedding $v AS dist]")
        .sort_by("dist")
        .return_fields("dist", "year")
        .dialect(2),
        query_params={"v": blob(q)},
    )
    _, docs = results(res)
    assert [d.id for d in docs] == exact_knn(vecs, q, 10)
    dists = [float(d.dist) for d in docs]
    assert dists == sorted(dists)
    assert abs(dists[0] - float(((vecs[17] - q) ** 2).sum())) < 1e-4


def test_optimize_links_the_graph_and_keeps_answers(client):
    vecs = create_docs(client, n=500)
    assert client.execute_command("FT.OPTIMIZE", "docs") in (b"OK", "OK")
    # The graph answers now: exactly with an EF_RUNTIME as wide as the index, and
    # with high recall at the default.
    found = 0
    for i in (0, 123, 250, 377, 499):
        want = exact_knn(vecs, vecs[i], 5)
        res = client.ft("docs").search(
            Query("*=>[KNN 5 @embedding $v EF_RUNTIME 500 AS dist]").sort_by("dist").dialect(2),
            query_params={"v": blob(vecs[i])},
        )
        assert [d.id for d in results(res)[1]] == want
        res = client.ft("docs").search(
            Query("*=>[KNN 5 @embedding $v AS dist]").sort_by("dist").dialect(2),
            query_params={"v": blob(vecs[i])},
        )
        found += len(set(d.id for d in results(res)[1]) & set(want))
    assert found >= 0.8 * 25


def test_filtered_knn_tag_and_numeric(client):
    vecs = create_docs(client)
    q = vecs[3]
    res = client.ft("docs").search(
        Query("(@genre:{fantasy} @year:[1950 +inf])=>[KNN 5 @embedding $v AS dist]")
        .sort_by("dist")
        .dialect(2),
        query_params={"v": blob(q)},
    )
    want = exact_knn(vecs, q, 5, allowed=lambda i: i % 2 == 1 and 1900 + i >= 1950)
    _, docs = results(res)
    assert [d.id for d in docs] == want
    assert all(d.genre == "fantasy" for d in docs)


def test_text_filters_paging_and_counts(client):
    create_docs(client)
    ft = client.ft("docs")
    assert results(ft.search(Query("dragon").paging(0, 0)))[0] == 67
    total, docs = results(
        ft.search(Query("@title:dragon @year:[1900 1930]").sort_by("year").paging(2, 3))
    )
    assert total == 11
    assert [d.id for d in docs] == ["doc:6", "doc:9", "doc:12"]
    total, docs = results(ft.search(Query("-@genre:{drama}").no_content().paging(0, 1000)))
    assert total == 100 and all(int(d.id[4:]) % 2 == 1 for d in docs)


def test_index_follows_writes_and_info_round_trips(client):
    vecs = create_docs(client, n=20)
    ft = client.ft("docs")
    client.delete("doc:0")
    client.hset("doc:1", "genre", "horror")
    assert results(ft.search(Query("@genre:{horror}")))[0] == 1
    assert results(ft.search(Query("*").paging(0, 0)))[0] == 19
    info = {decode(k): v for k, v in ft.info().items()}
    assert int(info["num_docs"]) == 19
    names = [
        (a[1] if isinstance(a, list) else {decode(k): v for k, v in a.items()}["identifier"])
        for a in info["attributes"]
    ]
    assert [decode(n) for n in names] == [
        "title",
        "genre",
        "year",
        "embedding",
    ]
    q = vecs[5]
    res = ft.search(
        Query("*=>[KNN 1 @embedding $v]").dialect(2), query_params={"v": blob(q)}
    )
    assert results(res)[1][0].id == "doc:5"


def test_aliases_switch_readers_between_indexes(client):
    create_docs(client, n=10)
    client.ft("docs2").create_index(
        [TextField("title")],
        definition=IndexDefinition(prefix=["new:"], index_type=IndexType.HASH),
    )
    client.hset("new:1", "title", "story of a dragon")
    live = client.ft("live")
    client.ft("docs").aliasadd("live")
    assert results(live.search(Query("dragon").paging(0, 0)))[0] == 4
    with pytest.raises(redis.ResponseError, match="Alias already exists"):
        client.ft("docs2").aliasadd("live")
    client.ft("docs2").aliasupdate("live")
    assert results(live.search(Query("dragon")))[1][0].id == "new:1"
    info = {decode(k): v for k, v in live.info().items()}
    assert decode(info["index_name"]) == "docs2"
    client.ft("docs2").aliasdel("live")
    with pytest.raises(redis.ResponseError, match="no such index"):
        live.search("*")
    with pytest.raises(redis.ResponseError, match="Alias does not exist"):
        client.ft("docs2").aliasdel("live")


def test_autocomplete_suggestions(client):
    ft = client.ft()
    assert ft.sugadd("ac", Suggestion("hello", 1.0), Suggestion("help", 3.0)) == 2
    assert ft.sugadd("ac", Suggestion("helpful", 3.0, payload="p1")) == 3
    assert ft.sugadd("ac", Suggestion("hello", 2.0), increment=True) == 3
    assert ft.suglen("ac") == 3
    got = ft.sugget("ac", "hel", with_scores=True, with_payloads=True)
    assert [(decode(s.string), round(s.score, 6)) for s in got] == [
        ("help", 2.12132),
        ("hello", 1.732051),
        ("helpful", 1.341641),
    ]
    assert decode(got[2].payload) == "p1"
    assert [decode(s.string) for s in ft.sugget("ac", "hep", fuzzy=True, num=1)] == ["help"]
    assert ft.sugdel("ac", "help") == 1
    assert ft.sugdel("ac", "help") == 0
    assert [decode(s.string) for s in ft.sugget("ac", "HEL")] == ["hello", "helpful"]
    assert decode(client.type("ac")) == "trietype0"


def test_missing_index_error_text(client):
    with pytest.raises(redis.ResponseError, match="Unknown index name"):
        client.ft("nope").info()
    with pytest.raises(redis.ResponseError, match="no such index"):
        client.ft("nope").search("*")


def aggregate_rows(res):
    """Rows of an FT.AGGREGATE reply as dicts of str, from either protocol (RESP3
    gives the raw map, keys as bytes)."""
    if isinstance(res, dict):
        res = {decode(k): v for k, v in res.items()}
        rows = []
        for r in res["results"]:
            r = {decode(k): v for k, v in r.items()}
            rows.append({decode(k): decode(v) for k, v in r["extra_attributes"].items()})
        return rows
    rows = []
    for row in res.rows:
        flat = [decode(x) for x in row]
        rows.append(dict(zip(flat[0::2], flat[1::2])))
    return rows


def test_aggregate_group_sort_and_apply(client):
    from redis.commands.search import reducers
    from redis.commands.search.aggregation import AggregateRequest, Desc

    create_docs(client, n=60)
    req = (
        AggregateRequest("*")
        .group_by(
            "@genre",
            reducers.count().alias("n"),
            reducers.max("@year").alias("last"),
            reducers.avg("@year").alias("mean"),
        )
        .sort_by(Desc("@last"))
    )
    rows = aggregate_rows(client.ft("docs").aggregate(req))
    assert rows == [
        {"genre": "fantasy", "n": "30", "last": "1959", "mean": "1930"},
        {"genre": "drama", "n": "30", "last": "1958", "mean": "1929"},
    ]
    req = (
        AggregateRequest("@year:[1900 1904]")
        .apply(decade="floor(@year / 10) * 10")
        .filter("@year % 2 == 0")
        .sort_by("@year")
    )
    rows = aggregate_rows(client.ft("docs").aggregate(req))
    assert [(r["year"], r["decade"]) for r in rows] == [
        ("1900", "1900"),
        ("1902", "1900"),
        ("1904", "1900"),
    ]


def profile_entries(info):
    """FT.PROFILE's profile as a dict, from RESP2's pairs or RESP3's map."""
    if isinstance(info, dict):
        return {k.decode() if isinstance(k, bytes) else k: v for k, v in info.items()}
    out = {}
    for entry in info:
        key = entry[0].decode() if isinstance(entry[0], bytes) else entry[0]
        out[key] = entry[1:]
    return out


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def test_profile_reports_iterators_and_steps(client):
    from redis.commands.search.aggregation import AggregateRequest

    create_docs(client, n=60)
    out = client.ft("docs").profile(Query("dragon @genre:{drama}").no_content())
    if isinstance(out, tuple):
        result, info = out
        total, profile = result.total, profile_entries(info.info)
    else:
        # RESP3: redis-py keeps RediSearch 2.10's map whole (results and profile).
        whole = {text(k): v for k, v in out.info.items()}
        total, profile = whole["total_results"], profile_entries(whole["profile"])
    # Documents 0, 6, 12, …: every sixth has both.
    assert total == 10
    iterators = profile["Iterators profile"]
    root = iterators[0] if isinstance(iterators, list) else iterators
    if isinstance(root, list):
        root = dict(zip(map(text, root[0::2]), root[1::2]))
    root = {text(k): v for k, v in root.items()}
    assert text(root["Type"]) == "INTERSECT"
    assert root["Counter"] == 10
    steps = profile["Result processors profile"]
    names = []
    for step in steps:
        if isinstance(step, dict):
            step = {text(k): v for k, v in step.items()}
        else:
            step = dict(zip(map(text, step[0::2]), step[1::2]))
        names.append(text(step["Type"]))
    assert names[0] == "Index"
    assert "Sorter" in names

    out = client.ft("docs").profile(AggregateRequest("@genre:{fantasy}").limit(0, 5))
    info = out[1].info if isinstance(out, tuple) else out.info
    flat = str(info)
    assert "Pager/Limiter" in flat and "Result processors profile" in flat
    with pytest.raises(redis.ResponseError, match="does not support cursor"):
        client.ft("docs").profile(AggregateRequest("*").cursor(10))


def test_aggregate_cursor_reads_every_row_once(client):
    from redis.commands.search.aggregation import AggregateRequest

    create_docs(client, n=45)
    req = AggregateRequest("*").load("@year").cursor(count=10)
    res = client.ft("docs").aggregate(req)
    years = []
    while True:
        if isinstance(res, list):
            # RESP3: [map, cursor id]
            years += [r["year"] for r in aggregate_rows(res[0])]
            cursor_id = res[1]
            if cursor_id == 0:
                break
            res = client.execute_command("FT.CURSOR", "READ", "docs", cursor_id)
            continue
        years += [r["year"] for r in aggregate_rows(res)]
        if res.cursor is None or res.cursor.cid == 0:
            break
        res = client.ft("docs").aggregate(res.cursor)
    assert sorted(int(y) for y in years) == list(range(1900, 1945))


def hybrid_rows(res):
    """(total, rows as dicts of str) from redis-py's hybrid result, either protocol."""
    if isinstance(res, dict):
        total, rows = res["total_results"], res["results"]
    else:
        total, rows = res.total_results, res.results
    return total, [{decode(k): decode(v) for k, v in r.items()} for r in rows]


@pytest.mark.filterwarnings("ignore:.*experimental")
def test_hybrid_search_rrf_and_linear(client):
    """redis-py's `hybrid_search` (FT.HYBRID): the fused ranking matches the fusion
    computed here from FT.SEARCH's own text ranking and the exact distances."""
    from redis.commands.search.hybrid_query import (
        CombinationMethods,
        CombineResultsMethod,
        HybridFilter,
        HybridPostProcessingConfig,
        HybridQuery,
        HybridSearchQuery,
        HybridVsimQuery,
        VectorSearchMethods,
    )

    vecs = create_docs(client, n=60)
    q = vecs[5] + 0.05
    ft = client.ft("docs")
    # Text ranking: FT.SEARCH by BM25STD (ties in document order), top 20.
    text = ft.search(
        Query("dragon").scorer("BM25STD").with_scores().no_content().paging(0, 20).dialect(2)
    )
    _, text_docs = results(text)
    text_rank = [d.id for d in text_docs]
    vec_rank = exact_knn(vecs, q, 10)
    rrf = {}
    for ranking in (text_rank, vec_rank):
        for r, key in enumerate(ranking):
            rrf[key] = rrf.get(key, 0.0) + 1.0 / (60 + r + 1)
    want = sorted(rrf, key=lambda k: -rrf[k])[:10]

    query = HybridQuery(
        HybridSearchQuery("dragon"),
        HybridVsimQuery(
            vector_field_name="@embedding",
            vector_data="$v",
            vsim_search_method=VectorSearchMethods.KNN,
            vsim_search_method_params={"K": 10},
        ),
    )
    res = ft.hybrid_search(query, params_substitution={"v": blob(q)})
    total, rows = hybrid_rows(res)
    assert total == len(rrf)
    got = [r["__key"] for r in rows]
    # Equal fused scores may order either way between this computation and the
    # server's (float sums); compare scores rank by rank.
    assert [round(rrf[k], 9) for k in got] == [round(rrf[k], 9) for k in want]
    assert all(abs(float(r["__score"]) - rrf[r["__key"]]) < 1e-9 for r in rows)

    # LINEAR, a vector pre-filter, yielded scores and post-processing.
    post = HybridPostProcessingConfig()
    post.load("@__key", "@year")
    post.apply(double_year="@year * 2")
    post.limit(0, 5)
    query = HybridQuery(
        HybridSearchQuery("river", scorer="BM25STD.TANH", yield_score_as="ts"),
        HybridVsimQuery(
            vector_field_name="@embedding",
            vector_data="$v",
            filter=HybridFilter("@genre:{fantasy}"),
            yield_score_as="vs",
        ),
    )
    combine = CombineResultsMethod(
        CombinationMethods.LINEAR, ALPHA=0.5, BETA=0.5, YIELD_SCORE_AS="fused"
    )
    res = ft.hybrid_search(
        query,
        combine_method=combine,
        post_processing=post,
        params_substitution={"v": blob(q)},
    )
    _, rows = hybrid_rows(res)
    assert len(rows) == 5
    fused = [float(r["fused"]) for r in rows]
    assert fused == sorted(fused, reverse=True)
    for r in rows:
        i = int(r["__key"].split(":")[1])
        assert int(r["double_year"]) == 2 * (1900 + i)
        ts = float(r.get("ts", 0.0))
        assert 0.0 <= ts < 1.0
        if "vs" in r:
            # Only fantasy documents (odd ids) pass the vector filter.
            assert i % 2 == 1
            d = float(((vecs[i] - q) ** 2).sum())
            assert abs(float(r["vs"]) - 1.0 / (1.0 + d)) < 1e-5
        assert abs(float(r["fused"]) - (0.5 * ts + 0.5 * float(r.get("vs", 0.0)))) < 1e-9
