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
    can SIGKILL and start again.

    Both ports (RESP and the binary lane) are picked free just before the start; a
    port another process grabbed in between (an outgoing connection's ephemeral port
    can be any free port) makes the server exit with "Address already in use", and
    the start is then retried on fresh ports. Any other early exit fails with the
    server's own log."""

    def __init__(self, data, *extra_args):
        self.binary = os.environ.get("PION_SERVER_BIN", "target/debug/pion-server")
        self.data, self.extra_args = data, list(extra_args)
        self.port = self.lane = None
        self.proc = None

    def start(self):
        log_path = f"{self.data}.log"
        for _ in range(5):
            self.port, self.lane = _free_port(), _free_port()
            with open(log_path, "wb") as log:
                self.proc = subprocess.Popen(
                    [self.binary, "--port", str(self.port), "--kvcache-port", str(self.lane),
                     "--dir", str(self.data), *self.extra_args],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            if self._wait_ready():
                return self
            with open(log_path, encoding="utf-8", errors="replace") as log:
                text = log.read()
            if "Address already in use" not in text:
                raise RuntimeError("pion-server did not start:\n" + text)
        raise RuntimeError("pion-server found no free ports in 5 tries:\n" + text)

    def _wait_ready(self):
        deadline = time.time() + 20
        while self.proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return True
            except OSError:
                if time.time() > deadline:
                    self.proc.kill()
                    self.proc.wait()
                    return False
                time.sleep(0.05)
        return False

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self):
        """SIGTERM, and the exit status (0 when pion-server shut down cleanly)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            return self.proc.wait(timeout=10)
        return self.proc.returncode if self.proc is not None else 0


@pytest.fixture(scope="module")
def pion_server(tmp_path_factory):
    """A durable pion-server for the module (``.port``, ``.lane``, ``.kill9()``, ``.start()``)."""
    server = PionServerProcess(tmp_path_factory.mktemp("pion-data"))
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
