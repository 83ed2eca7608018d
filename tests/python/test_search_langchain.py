"""LangChain's Redis integration (`langchain-redis`: `RedisVectorStore`, `RedisCache`,
`RedisSemanticCache`) against pion-server, unmodified.

`RedisVectorStore` builds its index with RedisVL (text content, a FLAT cosine vector,
`_index_name` and `_metadata_json` text fields, the metadata schema's tag and numeric
fields) and filters every search by `@_index_name:("<name>")`. Embeddings come from
a deterministic word-hashing model, so the expected neighbours are computed here. Run
with PION_CLIENT_TESTS_PORT=<port of a Redis 8 with RediSearch> to check the
expectations against Redis itself.
"""

import zlib

import numpy as np
import pytest
import redis
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_core.outputs import Generation
from langchain_redis import RedisCache, RedisConfig, RedisSemanticCache, RedisVectorStore
from redisvl.query.filter import Num, Tag

DIM = 16
WORDS = "river mountain forest desert ocean city village storm sun rain snow wind".split()


def embed_text(text):
    v = np.zeros(DIM)
    for w in text.lower().split():
        v += np.random.default_rng(zlib.crc32(w.encode())).standard_normal(DIM)
    if not v.any():
        v[0] = 1.0
    return v


class WordHashEmbeddings(Embeddings):
    """Each word adds a fixed pseudo-random vector: texts sharing words are close."""

    def embed_documents(self, texts):
        return [embed_text(t).tolist() for t in texts]

    def embed_query(self, text):
        return embed_text(text).tolist()


@pytest.fixture
def client(server_port):
    r = redis.Redis(port=server_port)
    r.flushall()
    yield r
    for name in r.execute_command("FT._LIST"):
        r.execute_command("FT.DROPINDEX", name, "DD")
    r.close()


def corpus(n=60, seed=4):
    rng = np.random.default_rng(seed)
    texts, metas = [], []
    for i in range(n):
        texts.append(" ".join(rng.choice(WORDS, size=3, replace=False)))
        metas.append({"genre": ["poem", "essay", "story"][i % 3], "year": 1990 + i, "n": i})
    return texts, metas


def store(client, **kw):
    texts, metas = corpus()
    vs = RedisVectorStore.from_texts(
        texts,
        WordHashEmbeddings(),
        metadatas=metas,
        index_name="lc-docs",
        redis_client=client,
        metadata_schema=[
            {"name": "genre", "type": "tag"},
            {"name": "year", "type": "numeric"},
        ],
        **kw,
    )
    return vs, texts, metas


def nearest(texts, metas, query, k, keep=lambda m: True):
    q = embed_text(query)
    vecs = np.stack([embed_text(t) for t in texts])
    d = 1 - vecs @ q / (np.linalg.norm(vecs, axis=1) * np.linalg.norm(q))
    order = [i for i in np.argsort(d, kind="stable") if keep(metas[i])][:k]
    return order, d


def test_from_texts_and_similarity_search(client):
    vs, texts, metas = store(client)
    assert client.execute_command("FT._LIST") == [b"lc-docs"]
    docs = vs.similarity_search("storm ocean", k=5)
    order, d = nearest(texts, metas, "storm ocean", 5)
    assert [round(float(d[texts.index(doc.page_content)]), 5) for doc in docs] == [
        round(float(d[i]), 5) for i in order
    ]
    assert docs[0].page_content == texts[order[0]]
    # Metadata comes back from the hash (numbers as stored text for numeric fields).
    first = metas[order[0]]
    assert docs[0].metadata["genre"] == first["genre"]
    assert float(docs[0].metadata["year"]) == first["year"]


def test_similarity_search_with_tag_and_numeric_filters(client):
    vs, texts, metas = store(client)
    cases = [
        (Tag("genre") == "essay", lambda m: m["genre"] == "essay"),
        (Num("year") >= 2020, lambda m: m["year"] >= 2020),
        (
            (Tag("genre") == ["poem", "story"]) & (Num("year") < 2010),
            lambda m: m["genre"] in ("poem", "story") and m["year"] < 2010,
        ),
    ]
    for expr, keep in cases:
        docs = vs.similarity_search("rain forest village", k=4, filter=expr)
        order, d = nearest(texts, metas, "rain forest village", 4, keep)
        assert len(docs) == len(order), str(expr)
        assert [round(float(d[texts.index(x.page_content)]), 5) for x in docs] == [
            round(float(d[i]), 5) for i in order
        ], str(expr)
        assert all(keep({"genre": x.metadata["genre"], "year": float(x.metadata["year"])}) for x in docs)


def test_similarity_search_with_score_and_by_vector(client):
    vs, texts, metas = store(client)
    scored = vs.similarity_search_with_score("sun snow wind", k=3)
    order, d = nearest(texts, metas, "sun snow wind", 3)
    assert [round(s, 5) for _, s in scored] == [round(float(d[i]), 5) for i in order]
    scores = [s for _, s in scored]
    assert scores == sorted(scores)
    by_vec = vs.similarity_search_by_vector(embed_text("sun snow wind").tolist(), k=3)
    assert [x.page_content for x in by_vec] == [x.page_content for x, _ in scored]
    # Range: only documents within the distance.
    close = vs.similarity_search("sun snow wind", k=60, distance_threshold=0.3)
    assert {x.page_content for x in close} == {t for i, t in enumerate(texts) if d[i] <= 0.3}
    # With the stored vectors returned.
    with_vecs = vs.similarity_search_with_score("sun snow wind", k=2, with_vectors=True)
    assert len(with_vecs[0]) == 3
    assert np.allclose(with_vecs[0][2], embed_text(with_vecs[0][0].page_content), atol=1e-5)


def test_similarity_search_return_all_and_get_by_ids(client):
    vs, texts, metas = store(client)
    scored = vs.similarity_search_with_score("city river", k=2, return_all=True)
    assert len(scored) == 2
    assert scored[0][0].metadata["genre"] in ("poem", "essay", "story")
    got = vs.get_by_ids(["nope"] + [d.metadata.get("id", "") for d, _ in scored])
    assert len(got) <= 2


def test_add_get_delete_and_mmr(client):
    vs, texts, metas = store(client)
    ids = vs.add_texts(
        ["ocean ocean ocean", "desert sun"],
        metadatas=[{"genre": "poem", "year": 3000}, {"genre": "essay", "year": 3001}],
        ids=["x1", "x2"],
    )
    assert [i.split(":")[-1] for i in ids] == ["x1", "x2"]
    assert vs.similarity_search("ocean", k=1, filter=Num("year") > 2999)[0].page_content == "ocean ocean ocean"
    mmr = vs.max_marginal_relevance_search("ocean storm", k=3, fetch_k=10)
    assert len(mmr) == 3 and len({m.page_content for m in mmr}) == 3
    assert vs.delete(ids=["x1", "x2"])
    assert vs.similarity_search("ocean", k=1, filter=Num("year") > 2999) == []
    retriever = vs.as_retriever(search_kwargs={"k": 2})
    assert len(retriever.invoke("river city")) == 2


def test_from_existing_index_and_documents(client):
    vs, texts, metas = store(client)
    again = RedisVectorStore(
        WordHashEmbeddings(),
        config=RedisConfig(index_name="lc-docs", redis_client=client, from_existing=True),
    )
    assert again.similarity_search("storm ocean", k=2) == vs.similarity_search("storm ocean", k=2)
    more = RedisVectorStore.from_documents(
        [Document(page_content="snow snow mountain", metadata={"genre": "poem", "year": 1})],
        WordHashEmbeddings(),
        index_name="lc-other",
        redis_client=client,
        metadata_schema=[{"name": "genre", "type": "tag"}, {"name": "year", "type": "numeric"}],
    )
    # Each store sees only its own index (the `_index_name` text filter).
    assert [d.page_content for d in more.similarity_search("snow", k=5)] == ["snow snow mountain"]
    assert "snow snow mountain" not in [d.page_content for d in vs.similarity_search("snow", k=60)]


def test_fake_embeddings_store(client):
    """LangChain's own DeterministicFakeEmbedding: the same text, the same vector."""
    emb = DeterministicFakeEmbedding(size=32)
    texts = [f"document number {i}" for i in range(20)]
    vs = RedisVectorStore.from_texts(
        texts,
        emb,
        metadatas=[{"kind": "even" if i % 2 == 0 else "odd"} for i in range(20)],
        index_name="fake",
        redis_client=client,
        metadata_schema=[{"name": "kind", "type": "tag"}],
        distance_metric="L2",
        indexing_algorithm="HNSW",
    )
    docs = vs.similarity_search_with_score("document number 7", k=1)
    assert docs[0][0].page_content == "document number 7" and docs[0][1] < 1e-4
    docs = vs.similarity_search("document number 7", k=3, filter=Tag("kind") == "even")
    assert all(int(d.page_content.split()[-1]) % 2 == 0 for d in docs)


def test_redis_cache(client):
    cache = RedisCache(redis_client=client, ttl=60)
    cache.update("prompt", "llm", [Generation(text="answer")])
    assert cache.lookup("prompt", "llm")[0].text == "answer"
    assert cache.lookup("prompt", "other-llm") is None
    cache.clear()
    assert cache.lookup("prompt", "llm") is None


def test_semantic_cache(client):
    sem = RedisSemanticCache(embeddings=WordHashEmbeddings(), redis_client=client, distance_threshold=0.05)
    sem.update("storm over the ocean", "llm", [Generation(text="wet")])
    assert sem.lookup("storm over the ocean", "llm")[0].text == "wet"
    assert sem.lookup("storm over the ocean", "other-llm") is None
    assert sem.lookup("desert sun", "llm") is None
    sem.clear()
    assert sem.lookup("storm over the ocean", "llm") is None
