"""Fixtures of the vt-server tests: servers on free ports, clients, metrics.

VT_SERVER      build/examples/server/vt-server (set by meson test).
VT_TEST_MODEL  the default model (SmolLM2-135M-Instruct Q4_1); set by
               tests/run.sh. Every test skips without it, or without the
               `openai` package (tests/run.sh pins it into .venv).
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

openai = pytest.importorskip("openai", reason="the openai client is not installed (tests/run.sh pins it)")

# Compute threads per server: the test machines have two cores.
THREADS = "2"


def _env_file(name, why):
    p = os.environ.get(name, "")
    if not p or not Path(p).exists():
        pytest.skip(f"{name} is unset or missing: {why}")
    return p


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_metrics(text):
    """Prometheus text -> {'name{labels}': value} (and 'name' for unlabelled)."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})?) (\S+)$", line)
        assert m, f"malformed metrics line: {line!r}"
        out[m.group(1)] = float(m.group(3))
    return out


class Server:
    """One vt-server subprocess. Its stderr goes to a file shown on failure."""

    def __init__(self, binary, model, *args, api_key=None):
        self.port = free_port()
        self.api_key = api_key
        self.log = tempfile.NamedTemporaryFile(prefix="vt-server-", suffix=".log", delete=False)
        cmd = [binary, "-m", model, "--port", str(self.port), "-t", THREADS, *args]
        if api_key:
            cmd += ["--api-key", api_key]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"vt-server exited with {self.proc.returncode}:\n{self.stderr()}")
            try:
                if self.get("/health")[0] == 200:
                    break
            except OSError:
                pass
            if time.time() > deadline:
                self.kill()
                raise RuntimeError(f"vt-server did not come up:\n{self.stderr()}")
            time.sleep(0.1)
        self.model = self.get_json("/v1/models")["data"][0]["id"]

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}/v1"

    def client(self, api_key=None, **kw):
        return openai.OpenAI(base_url=self.base_url, api_key=api_key or self.api_key or "none",
                             max_retries=0, timeout=120, **kw)

    def stderr(self):
        return Path(self.log.name).read_text(errors="replace")

    def request(self, method, path, body=None, headers=None, timeout=60):
        h = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        h.update(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            h.setdefault("Content-Type", "application/json")
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=h)
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def get(self, path):
        return self.request("GET", path)

    def get_json(self, path):
        status, body = self.get(path)
        assert status == 200, body
        return json.loads(body)

    def metrics(self):
        status, body = self.get("/metrics")
        assert status == 200
        return parse_metrics(body.decode())

    def wait_idle(self, timeout=20):
        """Waits until no request runs or waits and no KV block is held."""
        deadline = time.time() + timeout
        while True:
            m = self.metrics()
            if (m["vt_num_requests_running"] == 0 and m["vt_num_requests_waiting"] == 0
                    and m["vt_kv_blocks_used"] == 0):
                return m
            if time.time() > deadline:
                raise AssertionError(f"the server did not go idle: {m}")
            time.sleep(0.05)

    def rss_kib(self):
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def terminate(self, timeout=60):
        """SIGTERM, then the exit status."""
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="session")
def server_bin():
    return _env_file("VT_SERVER", "vt-server is not built (run through meson test)")


@pytest.fixture(scope="session")
def model_path():
    return _env_file("VT_TEST_MODEL", "run tests/run.sh, which fetches the model with "
                                      "examples/models/vt_models.py")


# The guards of the main server; the tests check them at these values.
MAX_BODY = 1 << 20
MAX_PROMPT_CHARS = 4000
MAX_NEW_TOKENS = 2048


@pytest.fixture(scope="session")
def server(server_bin, model_path):
    s = Server(server_bin, model_path, "--kv-cache-memory", "256MiB", "--max-body-bytes", str(MAX_BODY),
               "--max-prompt-chars", str(MAX_PROMPT_CHARS), "--max-new-tokens", str(MAX_NEW_TOKENS))
    yield s
    code = s.terminate()
    assert code == 0, s.stderr()


@pytest.fixture
def client(server):
    return server.client()


@pytest.fixture
def start_server(server_bin, model_path):
    """Starts extra servers for one test; kills what is left at its end."""
    started = []

    def start(*args, api_key=None):
        s = Server(server_bin, model_path, *args, api_key=api_key)
        started.append(s)
        return s

    yield start
    for s in started:
        s.kill()
