"""redis-py's `json()` API (RedisJSON) against pion-server, unmodified, over RESP2 and
RESP3.

redis-py decodes JSON.GET's text itself, turns JSONPath replies into lists, and
parses JSON.RESP, JSON.TYPE and JSON.NUMINCRBY shapes differently per protocol: a
reply shape it cannot read fails here. Run with PION_CLIENT_TESTS_PORT=<port of a
Redis with RedisJSON> to check the expectations against RedisJSON itself.
"""

import pytest
import redis
from redis.commands.json.path import Path

KEYS = ("j:doc", "j:arr", "j:m1", "j:m2", "j:str")


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def r(request, server_port):
    client = redis.Redis(port=server_port, protocol=request.param, decode_responses=True)
    client.delete(*KEYS)
    yield client
    client.delete(*KEYS)
    client.close()


DOC = {"name": "pion", "n": 1, "f": 2.5, "tags": ["a", "b"], "meta": {"on": True, "x": None}}


def test_set_get_and_paths(r):
    j = r.json()
    assert j.set("j:doc", Path.root_path(), DOC) is True
    assert j.get("j:doc") == DOC
    assert j.get("j:doc", "$.name") == ["pion"]
    assert j.get("j:doc", ".name") == "pion"
    assert j.get("j:doc", "$..on") == [True]
    assert j.get("j:doc", "$.tags[-1]") == ["b"]
    assert j.get("j:nokey") is None
    assert j.set("j:doc", "$.n", 5, nx=True) is None
    assert j.set("j:doc", "$.new", {"k": [1]}, xx=False) is True
    assert j.get("j:doc", "$.new.k[0]") == [1]
    got = j.get("j:doc", "$.name", "$.n")
    assert got == {"$.name": ["pion"], "$.n": [1]}
    assert r.type("j:doc") == "ReJSON-RL"


def test_numbers_strings_booleans(r):
    j = r.json()
    j.set("j:doc", "$", DOC)
    assert j.numincrby("j:doc", "$.n", 2) == [3]
    assert j.nummultby("j:doc", "$.f", 2) == [5.0]
    assert j.strappend("j:doc", "!", "$.name") == [5]
    assert j.strlen("j:doc", "$.name") == [5]
    assert j.toggle("j:doc", "$.meta.on") == [0]
    assert j.type("j:doc", "$.tags") in (["array"], [["array"]])
    assert j.clear("j:doc", "$.tags") == 1
    assert j.get("j:doc", "$.tags") == [[]]


def test_arrays_objects_and_delete(r):
    j = r.json()
    j.set("j:arr", "$", {"a": [1, 2, 3], "o": {"k": "v"}})
    assert j.arrappend("j:arr", "$.a", 4, 5) == [5]
    assert j.arrinsert("j:arr", "$.a", 0, 0) == [6]
    assert j.arrindex("j:arr", "$.a", 3) == [3]
    assert j.arrlen("j:arr", "$.a") == [6]
    assert j.arrpop("j:arr", "$.a") in ([5], ["5"])
    assert j.arrtrim("j:arr", "$.a", 1, 2) == [2]
    assert j.get("j:arr", "$.a") == [[1, 2]]
    assert j.objkeys("j:arr", "$.o") == [["k"]]
    assert j.objlen("j:arr", "$.o") == [1]
    assert j.delete("j:arr", "$.o") == 1
    assert j.forget("j:arr", "$.zz") == 0
    assert j.get("j:arr") == {"a": [1, 2]}


def test_merge_mset_mget_resp(r):
    j = r.json()
    j.set("j:m1", "$", {"a": {"b": 1, "c": 2}})
    assert j.merge("j:m1", "$", {"a": {"b": None, "d": 3}}) is True
    assert j.get("j:m1") == {"a": {"c": 2, "d": 3}}
    assert j.mset([("j:m1", "$", {"x": 1}), ("j:m2", "$", [1, 2])]) is True
    assert j.mget(["j:m1", "j:m2", "j:nokey"], "$") == [[{"x": 1}], [[1, 2]], None]
    resp = j.resp("j:m2", "$")
    assert resp in ([["[", 1, 2]], ["[", 1, 2])
    assert isinstance(j.debug("MEMORY", "j:m2"), int)


def test_errors_are_redisjson_texts(r):
    j = r.json()
    r.set("j:str", "x")
    with pytest.raises(redis.ResponseError, match="wrong Redis type"):
        j.get("j:str")
    with pytest.raises(redis.ResponseError, match="new objects must be created at the root"):
        j.set("j:nokey", "$.a", 1)
    j.set("j:doc", "$", DOC)
    with pytest.raises(redis.ResponseError, match="does not exist"):
        j.get("j:doc", ".missing")
