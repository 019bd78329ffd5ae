#!/usr/bin/env python3
"""Developer check (not run by meson: a TSan server is slow): vt-server built
with a sanitizer, under concurrent streaming clients of which some leave
midway, must report nothing. See the README, "Sanitizers".

    meson setup build-tsan -Db_sanitize=thread -Db_lundef=false -Dpython=disabled -Dvulkan=disabled
    ninja -C build-tsan examples/server/vt-server
    tests/server/tsan-streaming-check.py build-tsan/examples/server/vt-server MODEL.gguf

Each round sends --clients requests at once over raw sockets (chat and
completions, streamed; a few not streamed): a third read a few chunks and
close the socket, a third close right after sending, the rest read to the
end. Then the server must go idle (no request running or waiting, no KV
block held), answer a last request, and exit 0 on SIGTERM, and its output
must hold no sanitizer report ("WARNING: ThreadSanitizer", "ERROR:
AddressSanitizer", "runtime error:"). Exit status 0 when all holds.
"""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

MODEL = {"id": ""}  # the id the server serves, from /v1/models
REPORT = re.compile(r"WARNING: ThreadSanitizer|ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(port, method, path, body=None, timeout=300):
    """(status, body bytes) of one request over a fresh connection."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def raw_request(port, i, stream):
    chat = i % 2 == 0
    body = {"model": MODEL["id"], "max_tokens": 24 + i % 17, "stream": stream, "temperature": 0.7, "seed": i}
    if chat:
        body["messages"] = [{"role": "user", "content": f"Tell me story number {i}."}]
        path = "/v1/chat/completions"
    else:
        body["prompt"] = f"Once upon a time, number {i},"
        path = "/v1/completions"
    data = json.dumps(body).encode()
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n").encode()
    return head + data


def client(port, i, outcome):
    mode = i % 3  # 0: reads to the end, 1: leaves after a few chunks, 2: leaves at once
    stream = i % 5 != 4
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=300) as s:
            s.sendall(raw_request(port, i, stream))
            if mode == 2:
                s.shutdown(socket.SHUT_RDWR)
                outcome[i] = "left at once"
                return
            got = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
                if mode == 1 and got.count(b"data: ") >= 3:
                    outcome[i] = "left midway"
                    return  # closes the socket with the stream still running
            status = int(got.split(b" ", 2)[1])
            ok = status == 200 and (b"[DONE]" in got if stream else b'"finish_reason"' in got)
            outcome[i] = "complete" if ok else f"bad answer: {got[:300]!r}"
    except OSError as e:
        outcome[i] = f"socket error: {e}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("server")
    ap.add_argument("model")
    ap.add_argument("--clients", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="2")
    args = ap.parse_args()

    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="vt-server-sanitized-", suffix=".log", delete=False)
    env = dict(os.environ)
    # Keep going after a report, so that one run shows them all; exit 66 then.
    env.setdefault("TSAN_OPTIONS", "halt_on_error=0 exitcode=66 second_deadlock_stack=1")
    proc = subprocess.Popen([args.server, "-m", args.model, "--port", str(port), "-t", args.threads,
                             "--kv-cache-memory", "64MiB"], stdout=log, stderr=subprocess.STDOUT, env=env)
    failures = []
    try:
        deadline = time.time() + 600
        while True:
            if proc.poll() is not None:
                sys.exit(f"vt-server exited with {proc.returncode}; log: {log.name}")
            try:
                if http(port, "GET", "/health", timeout=5)[0] == 200:
                    break
            except OSError:
                pass
            if time.time() > deadline:
                sys.exit(f"vt-server did not come up; log: {log.name}")
            time.sleep(0.5)
        MODEL["id"] = json.loads(http(port, "GET", "/v1/models")[1])["data"][0]["id"]

        for r in range(args.rounds):
            outcome = {}
            ts = [threading.Thread(target=client, args=(port, r * args.clients + i, outcome))
                  for i in range(args.clients)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            counts = {}
            for v in outcome.values():
                key = v if v in ("complete", "left midway", "left at once") else "failed"
                counts[key] = counts.get(key, 0) + 1
                if key == "failed":
                    failures.append(v)
            print(f"round {r + 1}: {counts}", flush=True)

        # Idle: the requests of the clients that left were cancelled.
        deadline = time.time() + 300
        while True:
            _, text = http(port, "GET", "/metrics")
            m = dict(re.findall(r"^(vt_[a-z_]+) (\S+)$", text.decode(), re.M))
            if (float(m["vt_num_requests_running"]) == 0 and float(m["vt_num_requests_waiting"]) == 0
                    and float(m["vt_kv_blocks_used"]) == 0):
                break
            if time.time() > deadline:
                failures.append(f"the server did not go idle: {m}")
                break
            time.sleep(0.5)
        status, _ = http(port, "POST", "/v1/completions",
                         {"model": MODEL["id"], "prompt": "The end", "max_tokens": 4, "temperature": 0})
        if status != 200:
            failures.append(f"the last request got {status}")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=300)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = "killed after 300 s"
    text = open(log.name, errors="replace").read()
    reports = REPORT.findall(text)
    print(f"vt-server exit: {code}; sanitizer reports: {len(reports)}; log: {log.name}")
    if code != 0:
        failures.append(f"vt-server exited with {code}")
    if reports:
        failures.append(f"{len(reports)} sanitizer reports (see {log.name})")
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
