"""vt-server's guards: body size, prompt size, max_tokens, malformed input,
unknown model, API key. Each answers an OpenAI error object."""
import json
import socket
import threading
import time

import openai
import pytest

from conftest import MAX_BODY, MAX_NEW_TOKENS, MAX_PROMPT_CHARS

CHAT = [{"role": "user", "content": "Hi"}]


def error_of(status_body, status):
    got, body = status_body
    assert got == status, body
    err = json.loads(body)["error"]
    assert isinstance(err["message"], str) and err["message"]
    assert set(err) >= {"message", "type", "param", "code"}
    return err


def read_response(sock):
    sock.settimeout(30)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v)
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return status, rest[:length]


def test_huge_body_refused_without_buffering(server):
    """A 100 MB body (declared and sent) gets 413 while the server's memory
    stays put: it is read into nothing, never buffered."""
    rss_before = server.rss_kib()
    size = 100 * 1000 * 1000
    s = socket.create_connection(("127.0.0.1", server.port))
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(size).encode() + b"\r\n\r\n")
    peak = [rss_before]
    done = threading.Event()

    def watch():
        while not done.is_set():
            peak[0] = max(peak[0], server.rss_kib())
            time.sleep(0.01)

    w = threading.Thread(target=watch)
    w.start()
    block = b'{"prompt": "' + b"a" * (1 << 20)
    sent = 0
    try:
        while sent < size:
            n = min(len(block), size - sent)
            s.sendall(block[:n])
            sent += n
        result = read_response(s)
    finally:
        done.set()
        w.join()
        s.close()
    err = error_of(result, 413)
    assert err["code"] == "request_too_large"
    growth_mib = (peak[0] - rss_before) / 1024
    assert growth_mib < 16, f"RSS grew by {growth_mib:.1f} MiB"


def test_chunked_body_over_limit_refused(server):
    s = socket.create_connection(("127.0.0.1", server.port))
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
    piece = b"a" * 65536
    for _ in range(MAX_BODY // len(piece) + 2):
        s.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
    s.sendall(b"0\r\n\r\n")
    err = error_of(read_response(s), 413)
    assert "max-body-bytes" in err["message"]
    s.close()


def test_expect_continue_refused_early(server):
    status, body = server.request("POST", "/v1/completions", body=b"",
                                  headers={"Content-Length": str(MAX_BODY + 1), "Expect": "100-continue"})
    error_of((status, body), 413)


def test_prompt_chars_limit(server, client):
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model=server.model, prompt="a" * (MAX_PROMPT_CHARS + 1), max_tokens=1)
    assert e.value.status_code == 400 and "max-prompt-chars" in e.value.message
    long_chat = [{"role": "user", "content": "é" * (MAX_PROMPT_CHARS // 2 + 1)},
                 {"role": "user", "content": "b" * (MAX_PROMPT_CHARS // 2)}]
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model=server.model, messages=long_chat, max_tokens=1)
    # At the limit it is fine (characters, not bytes: é is two bytes).
    ok = client.completions.create(model=server.model, prompt="é" * 50, max_tokens=1)
    assert ok.choices[0].finish_reason == "length"


def test_max_tokens_limit(server, client):
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model=server.model, prompt="Hi", max_tokens=MAX_NEW_TOKENS + 1)
    assert e.value.body["param"] == "max_tokens"
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=server.model, messages=CHAT, max_completion_tokens=MAX_NEW_TOKENS + 1)
    assert e.value.body["param"] == "max_completion_tokens"
    for bad in (0, -1, 2.5, "10"):
        error_of(server.request("POST", "/v1/completions",
                                {"model": server.model, "prompt": "Hi", "max_tokens": bad}), 400)


def test_context_length_exceeded(server, client):
    max_len = server.get_json("/v1/models")["data"][0]["max_model_len"]
    with pytest.raises(openai.BadRequestError) as e:  # the prompt fits, prompt + max_tokens does not
        client.completions.create(model=server.model, prompt=[7] * (max_len - 5), max_tokens=10)
    assert e.value.code == "context_length_exceeded"
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model=server.model, prompt=[7] * (max_len + 1), max_tokens=1)
    assert e.value.code == "context_length_exceeded"


@pytest.mark.parametrize("body", [
    b"{bad json",
    b"",
    b"[1, 2]",
    b'{"prompt": "caf\xc3"}',                      # invalid UTF-8
    b'{"prompt": "\\ud800"}',                      # a lone surrogate
    b'{"prompt": 5}',
    b'{"prompt": []}',
    b'{"prompt": [1, "a"]}',
    b'{"prompt": [999999999]}',                    # outside the vocabulary
    b'{"prompt": "Hi", "temperature": "hot"}',
    b'{"prompt": "Hi", "temperature": 9}',
    b'{"prompt": "Hi", "top_p": 0}',
    b'{"prompt": "Hi", "n": 0}',
    b'{"prompt": "Hi", "stop": 5}',
    b'{"prompt": "Hi", "stream": "yes"}',
    b'{"prompt": "Hi", "seed": "x"}',
    b'{"prompt": "Hi", "logprobs": 21}',
    b'{"prompt": "Hi", "model": 3}',
    b'{"prompt": "Hi", "logit_bias": {"x": 5}}',
    b'{"prompt": "Hi", "max_tokens": 0}',
    b'{"prompt": "Hi", "response_format": {"type": "yaml"}}',
])
def test_malformed_completions(server, body):
    error_of(server.request("POST", "/v1/completions", body=body, headers={"Content-Type": "application/json"}),
             400)


@pytest.mark.parametrize("body", [
    {"messages": 5},
    {"messages": []},
    {"messages": [5]},
    {"messages": [{"content": "no role"}]},
    {"messages": [{"role": "user", "content": 5}]},
    {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
    {"messages": [{"role": "user", "content": "Hi"}], "temperature": "hot"},
    {"messages": [{"role": "user", "content": "Hi"}], "top_logprobs": 3},
    {"messages": [{"role": "user", "content": "Hi"}], "logprobs": True, "top_logprobs": 21},
    {"messages": [{"role": "user", "content": "Hi"}], "chat_template_kwargs": 1},
])
def test_malformed_chat(server, body):
    error_of(server.request("POST", "/v1/chat/completions", body), 400)


def test_unknown_model_and_route(server, client):
    with pytest.raises(openai.NotFoundError) as e:
        client.chat.completions.create(model="no-such-model", messages=CHAT, max_tokens=1)
    assert e.value.code == "model_not_found"
    error_of(server.request("GET", "/v1/models/no-such-model"), 404)
    error_of(server.request("GET", "/v1/nothing-here"), 404)


def test_api_key(start_server):
    srv = start_server("--kv-cache-memory", "32MiB", api_key="sekret")
    with pytest.raises(openai.AuthenticationError):
        srv.client(api_key="wrong").models.list()
    status, body = srv.request("GET", "/v1/models", headers={"Authorization": ""})
    assert error_of((status, body), 401)["code"] == "invalid_api_key"
    assert [m.id for m in srv.client(api_key="sekret").models.list().data] == [srv.model]
    r = srv.client(api_key="sekret").completions.create(model=srv.model, prompt="Hi", max_tokens=2)
    assert r.choices[0].text is not None
    # /health and /metrics stay open.
    assert srv.request("GET", "/health", headers={"Authorization": ""})[0] == 200
    assert srv.request("GET", "/metrics", headers={"Authorization": ""})[0] == 200
    assert srv.terminate() == 0


def test_guard_responses_counted(server):
    """The refusals above show in /metrics by status."""
    error_of(server.request("POST", "/v1/completions", body=b"{"), 400)
    m = server.metrics()
    assert m['vt_requests_total{status="400"}'] >= 1
    assert m['vt_requests_total{status="413"}'] >= 1
    assert m['vt_requests_total{status="404"}'] >= 1
