"""Shared test helpers for the Python tests."""

import os
import signal
import socket
import subprocess
import time

import pytest


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def free_port():
    """A function returning a free TCP port on 127.0.0.1."""
    return _free_port


class PionServerProcess:
    """A real pion-server process on its own ports and data directory, which a test
    can SIGKILL and start again."""

    def __init__(self, data, port, lane):
        self.binary = os.environ.get("PION_SERVER_BIN", "target/debug/pion-server")
        self.data, self.port, self.lane = data, port, lane
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--kvcache-port", str(self.lane), "--dir", str(self.data)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.time() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                if time.time() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("pion-server did not start")
                time.sleep(0.05)

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def pion_server(tmp_path_factory):
    """A durable pion-server for the module (``.port``, ``.lane``, ``.kill9()``, ``.start()``)."""
    server = PionServerProcess(tmp_path_factory.mktemp("pion-data"), _free_port(), _free_port())
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def server_port(request):
    """The port the client-library tests talk to: the module's pion-server, or, with
    PION_CLIENT_TESTS_PORT set, a server already running there (Redis 8 with
    RediSearch, to check that a test expects what Redis does)."""
    port = os.environ.get("PION_CLIENT_TESTS_PORT")
    if port:
        return int(port)
    return request.getfixturevalue("pion_server").port
