"""redis-py's Pub/Sub API against pion-server: subscribe, psubscribe, get_message and
a listener thread, with the publisher on another connection."""

import threading
import time

import pytest

redis = pytest.importorskip("redis")


@pytest.fixture()
def client(pion_server):
    c = redis.Redis(port=pion_server.port, decode_responses=True)
    yield c
    c.close()


def _next(p, timeout=2.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = p.get_message(timeout=0.1)
        if m is not None:
            return m
    return None


def test_subscribe_and_get_message(client):
    p = client.pubsub()
    p.subscribe("news", "sports")
    assert _next(p) == {"type": "subscribe", "pattern": None, "channel": "news", "data": 1}
    assert _next(p) == {"type": "subscribe", "pattern": None, "channel": "sports", "data": 2}
    assert client.pubsub_numsub("news") == [("news", 1)]
    assert client.publish("news", "hello") == 1
    assert _next(p) == {"type": "message", "pattern": None, "channel": "news", "data": "hello"}
    p.unsubscribe("news")
    assert _next(p)["type"] == "unsubscribe"
    assert client.publish("news", "nobody") == 0
    p.close()


def test_psubscribe_receives_pmessage(client):
    p = client.pubsub(ignore_subscribe_messages=True)
    p.psubscribe("user:*")
    _next(p, timeout=0.3)
    assert client.pubsub_numpat() == 1
    assert client.publish("user:42", "joined") == 1
    m = _next(p)
    assert m == {"type": "pmessage", "pattern": "user:*", "channel": "user:42", "data": "joined"}
    p.close()


def test_listen_in_a_thread_keeps_publish_order(client):
    p = client.pubsub(ignore_subscribe_messages=True)
    received = []
    done = threading.Event()

    def on_message(message):
        received.append(message["data"])
        if len(received) == 100:
            done.set()

    p.subscribe(**{"orders": on_message})
    worker = p.run_in_thread(sleep_time=0.01, daemon=True)
    try:
        deadline = time.time() + 5
        while client.pubsub_numsub("orders")[0][1] == 0 and time.time() < deadline:
            time.sleep(0.01)
        for i in range(100):
            client.publish("orders", str(i))
        assert done.wait(10), f"only {len(received)} messages arrived"
        assert received == [str(i) for i in range(100)]
    finally:
        worker.stop()
        worker.join(timeout=5)
        p.close()


def test_keyspace_notifications(client):
    client.config_set("notify-keyspace-events", "KEA")
    try:
        assert client.config_get("notify-keyspace-events") == {"notify-keyspace-events": "AKE"}
        p = client.pubsub(ignore_subscribe_messages=True)
        p.psubscribe("__keyevent@0__:*")
        _next(p, timeout=0.3)
        client.set("watched", "1")
        m = _next(p)
        assert m["channel"] == "__keyevent@0__:set" and m["data"] == "watched"
        p.close()
    finally:
        client.config_set("notify-keyspace-events", "")
