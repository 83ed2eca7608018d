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
