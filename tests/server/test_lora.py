"""LoRA adapters in vt-server, as vLLM serves them: --lora NAME=PATH, the
request's "model" choosing an adapter, /v1/models listing them with the base
as parent, POST /v1/load_lora_adapter and /v1/unload_lora_adapter.

On the tiny Llama (tests/models/tiny/llama.gguf) with its rank-4 adapter
twice, as a PEFT folder ("a") and as its GGUF conversion ("g"), and the
rank-16 rsLoRA one loaded at run time ("b"). Greedy tokens are checked
against PEFT's (the fixtures' JSON: tests/models/make-tiny-loras.py), with
test-lora-tiny's allowance: a first difference only where PEFT's top two
logits are within TIE_MARGIN. Every test skips when the fixtures are absent
(they come from tests/models/tiny-lora/).
"""
import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai
import pytest

from conftest import THREADS, Server, free_port

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests/models/tiny/llama.gguf"
TINY_JSON = ROOT / "tests/models/tiny/llama.json"
TOKENIZER = ROOT / "tests/models/tiny/llama/tokenizer.json"
LORAS = ROOT / "tests/models/tiny-lora"
R4, R4_GGUF, R4_JSON = LORAS / "llama_r4", LORAS / "llama_r4.gguf", LORAS / "llama_r4.json"
R16, R16_JSON = LORAS / "llama_r16_rslora", LORAS / "llama_r16_rslora.json"
BASE = TINY.name  # the served name: the model file's name

# test-lora-tiny's: twice its logit tolerance against PEFT.
TIE_MARGIN = 0.02


@pytest.fixture(scope="module")
def fixtures():
    need = [TINY, TINY_JSON, TOKENIZER, R4, R4_GGUF, R4_JSON, R16, R16_JSON]
    missing = [str(p.relative_to(ROOT)) for p in need if not p.exists()]
    if missing:
        pytest.skip("LoRA fixtures missing: " + ", ".join(missing))
    return {"r4": json.loads(R4_JSON.read_text()), "r16": json.loads(R16_JSON.read_text()),
            "base": json.loads(TINY_JSON.read_text())}


@pytest.fixture(scope="module")
def srv(server_bin, fixtures):
    s = Server(server_bin, str(TINY), "--kv-cache-memory", "16MiB", "--lora", f"a={R4}", "--lora", f"g={R4_GGUF}")
    yield s
    code = s.terminate()
    assert code == 0, s.stderr()


@pytest.fixture(scope="module")
def pieces():
    """Token id -> its text as vt-server shows it in logprobs.tokens: the
    byte-level BPE bytes, invalid UTF-8 replaced by U+FFFD."""
    tok = json.loads(TOKENIZER.read_text())
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("\u00a1"), ord("\u00ac") + 1),
                 *range(ord("\u00ae"), ord("\u00ff") + 1)]
    byte_of, n = {chr(b): b for b in printable}, 0
    for b in range(256):
        if b not in printable:
            byte_of[chr(256 + n)] = b
            n += 1
    out = {i: bytes(byte_of[c] for c in s).decode("utf-8", "replace") for s, i in tok["model"]["vocab"].items()}
    out.update({t["id"]: t["content"] for t in tok.get("added_tokens", [])})
    return out


def greedy(client, model, prompt, n, stream=False, **extra):
    """(token pieces, text, finish_reason) of a greedy completion that runs
    n tokens; every response must echo `model`."""
    kw = dict(model=model, prompt=prompt, max_tokens=n, temperature=0, logprobs=0,
              extra_body={"ignore_eos": True, **extra})
    if not stream:
        r = client.completions.create(**kw)
        assert r.model == model
        c = r.choices[0]
        return c.logprobs.tokens, c.text, c.finish_reason
    tokens, text, finish = [], "", None
    for ch in client.completions.create(stream=True, **kw):
        assert ch.model == model
        c = ch.choices[0]
        text += c.text
        tokens += c.logprobs.tokens if c.logprobs else []
        finish = c.finish_reason or finish
    return tokens, text, finish


def assert_like_reference(got, golden, pieces, what):
    """got (pieces) equals the golden greedy tokens up to the first
    difference, which may only come where PEFT's margin is a near tie."""
    want = [pieces[i] for i in golden["greedy"]]
    assert len(got) == len(want), what
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            margin = golden["greedy_margins"][i]
            assert margin < TIE_MARGIN, f"{what}: step {i}: vt {g!r}, PEFT {w!r} (margin {margin})"
            return


def error_of(status_body, status):
    got, body = status_body
    assert got == status, body
    return json.loads(body)["error"]


def test_models_lists_base_and_adapters(srv):
    data = srv.get_json("/v1/models")["data"]
    assert [m["id"] for m in data] == [BASE, "a", "g"]
    base, a, g = data
    assert base["parent"] is None and base["root"] == str(TINY)
    assert (a["parent"], a["root"]) == (BASE, str(R4))
    assert (g["parent"], g["root"]) == (BASE, str(R4_GGUF))
    assert all(m["object"] == "model" and m["max_model_len"] > 0 for m in data)
    client = srv.client()
    assert [m.id for m in client.models.list().data] == [BASE, "a", "g"]
    assert client.models.retrieve("g").id == "g"
    assert srv.get_json("/v1/models/a") == a
    error_of(srv.get("/v1/models/nope"), 404)


def test_adapter_tokens(srv, fixtures, pieces):
    """"a" and "g" (one adapter, two formats) give PEFT's tokens, streamed or
    not, and not the base model's; the base (named or not) gives its own."""
    golden = fixtures["r4"]
    prompt, n = golden["prompts"][-1]["ids"], len(golden["greedy"])
    client = srv.client()
    # The base first: its prompt blocks are then cached, and the adapters
    # must not reuse them (the prefix cache is keyed by adapter).
    base = greedy(client, BASE, prompt, n)
    assert_like_reference(base[0], fixtures["base"], pieces, "base")
    status, body = srv.request("POST", "/v1/completions", {"prompt": prompt, "max_tokens": n, "temperature": 0,
                                                           "logprobs": 0, "ignore_eos": True})
    assert status == 200, body
    unnamed = json.loads(body)
    assert unnamed["model"] == BASE and unnamed["choices"][0]["text"] == base[1]
    a = greedy(client, "a", prompt, n)
    assert a[2] == "length" and len(a[0]) == n
    assert_like_reference(a[0], golden, pieces, "a (PEFT folder)")
    assert a[0] != base[0]
    assert greedy(client, "g", prompt, n) == a
    assert greedy(client, "a", prompt, n, stream=True) == a
    assert greedy(client, "g", prompt, n, stream=True) == a
    assert greedy(client, "a", prompt, n) == a  # its own blocks cached now
    assert greedy(client, BASE, prompt, n, stream=True) == base


def test_lora_scale(srv, fixtures):
    prompt = fixtures["r4"]["prompts"][0]["ids"]
    client = srv.client()
    base = greedy(client, BASE, prompt, 16)
    full = greedy(client, "a", prompt, 16)
    assert full != base
    assert greedy(client, "a", prompt, 16, lora_scale=1.0) == full
    assert greedy(client, "g", prompt, 16, lora_scale=0) == base  # scale 0: the base model, bit for bit
    for bad in ["x", [1], True, 1e39]:
        body = {"model": "a", "prompt": "Hi", "max_tokens": 1, "lora_scale": bad}
        assert error_of(srv.request("POST", "/v1/completions", body), 400)["param"] == "lora_scale"
    # No adapter to scale (the base model, named or not): refused rather than ignored.
    for body in [{"model": BASE}, {}]:
        body.update({"prompt": "Hi", "max_tokens": 1, "lora_scale": 0.5})
        assert error_of(srv.request("POST", "/v1/completions", body), 400)["param"] == "lora_scale"


def test_unknown_model(srv):
    client = srv.client()
    with pytest.raises(openai.NotFoundError) as e:
        client.completions.create(model="nope", prompt="Hi", max_tokens=1)
    assert e.value.code == "model_not_found"
    with pytest.raises(openai.NotFoundError):
        client.completions.create(model="nope", prompt="Hi", max_tokens=1, stream=True)
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="nope", messages=[{"role": "user", "content": "Hi"}], max_tokens=1)
    # The tiny model has no chat template: an adapter is found, then the
    # template refuses (400), where an unknown name answers 404.
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="a", messages=[{"role": "user", "content": "Hi"}], max_tokens=1)
    assert "template" in str(e.value)


def test_load_use_unload(srv, fixtures, pieces):
    golden = fixtures["r16"]
    prompt, n = golden["prompts"][-1]["ids"], len(golden["greedy"])
    client = srv.client()
    error_of(srv.get("/v1/models/b"), 404)
    status, body = srv.request("POST", "/v1/load_lora_adapter", {"lora_name": "b", "lora_path": str(R16)})
    assert status == 200 and b"'b'" in body, body
    data = srv.get_json("/v1/models")["data"]
    assert [m["id"] for m in data] == [BASE, "a", "g", "b"]
    assert (data[-1]["parent"], data[-1]["root"]) == (BASE, str(R16))
    b = greedy(client, "b", prompt, n)
    assert_like_reference(b[0], golden, pieces, "b (loaded at run time)")
    assert b != greedy(client, "a", prompt, n)

    # Refused loads change nothing.
    for body, param in [({"lora_name": "b", "lora_path": str(R4)}, "lora_name"),    # taken
                        ({"lora_name": "a", "lora_path": str(R16)}, "lora_name"),
                        ({"lora_name": BASE, "lora_path": str(R4)}, "lora_name"),   # the base's
                        ({"lora_name": "x=y", "lora_path": str(R4)}, "lora_name"),
                        ({"lora_name": "", "lora_path": str(R4)}, "lora_name"),
                        ({"lora_name": "c"}, "lora_path"),
                        ({"lora_name": "c", "lora_path": 5}, "lora_path"),
                        ({"lora_name": "c", "lora_path": str(LORAS / "no-such")}, "lora_path"),
                        ({"lora_name": "c", "lora_path": str(TINY)}, "lora_path")]:  # a model, no adapter
        err = error_of(srv.request("POST", "/v1/load_lora_adapter", body), 400)
        assert err["param"] == param, (body, err)
    err = error_of(srv.request("POST", "/v1/load_lora_adapter", {"lora_name": "c", "lora_path": str(TINY)}), 400)
    assert "c" in err["message"] and str(TINY) in err["message"]
    error_of(srv.request("POST", "/v1/load_lora_adapter", b"{"), 400)
    assert [m["id"] for m in srv.get_json("/v1/models")["data"]] == [BASE, "a", "g", "b"]

    # Unloaded while its requests run (32 choices of 440 tokens: long
    # enough to be running still): they finish with the adapter, each as it
    # would alone; new requests no longer find it.
    long_n, n_choices = 440, 32
    alone = greedy(client, "b", prompt, long_n)[0]
    chunks = iter(client.completions.create(model="b", prompt=prompt, max_tokens=long_n, n=n_choices, temperature=0,
                                            logprobs=0, stream=True, extra_body={"ignore_eos": True}))
    tokens, finish = {i: [] for i in range(n_choices)}, {}

    def take(chunk):
        for c in chunk.choices:
            tokens[c.index] += c.logprobs.tokens if c.logprobs else []
            if c.finish_reason:
                finish[c.index] = c.finish_reason

    take(next(chunks))
    status, body = srv.request("POST", "/v1/unload_lora_adapter", {"lora_name": "b"})
    assert status == 200 and b"'b'" in body, body
    assert srv.metrics()["vt_num_requests_running"] > 0  # the unload came while they ran
    for chunk in chunks:
        take(chunk)
    assert finish == {i: "length" for i in range(n_choices)}
    assert all(t == alone for t in tokens.values())
    with pytest.raises(openai.NotFoundError):
        greedy(client, "b", prompt, 1)
    error_of(srv.get("/v1/models/b"), 404)
    assert [m["id"] for m in srv.get_json("/v1/models")["data"]] == [BASE, "a", "g"]
    assert error_of(srv.request("POST", "/v1/unload_lora_adapter", {"lora_name": "b"}), 404)["param"] == "lora_name"
    error_of(srv.request("POST", "/v1/unload_lora_adapter", {"lora_name": "nope"}), 404)
    error_of(srv.request("POST", "/v1/unload_lora_adapter", {}), 400)

    # The name is free again; the adapter computes as before.
    assert srv.request("POST", "/v1/load_lora_adapter", {"lora_name": "b", "lora_path": str(R16)})[0] == 200
    assert greedy(client, "b", prompt, n) == b
    assert srv.request("POST", "/v1/unload_lora_adapter", {"lora_name": "b"})[0] == 200
    srv.wait_idle()


def test_concurrent_requests_over_adapters(srv, fixtures):
    """Requests over a, g, the base and a scaled adapter, all at once, give
    each the tokens it gets alone."""
    prompts = [fixtures["r4"]["prompts"][0]["ids"], fixtures["r4"]["prompts"][-1]["ids"], "The quick brown fox",
               "Once upon a time"]
    jobs = [(model, p, extra) for model, extra in [("a", {}), ("g", {}), (BASE, {}), ("a", {"lora_scale": 0.5})]
            for p in prompts]
    client = srv.client()
    alone = [greedy(client, model, p, 24, **extra) for model, p, extra in jobs]

    def run(i):
        model, p, extra = jobs[i]
        return greedy(srv.client(), model, p, 24, stream=i % 2 == 0, **extra)

    with ThreadPoolExecutor(len(jobs)) as pool:
        together = list(pool.map(run, range(len(jobs))))
    for job, want, got in zip(jobs, alone, together):
        assert got == want, job
    # The same adapter in two formats, the same tokens; the scale matters.
    assert alone[0:4] == alone[4:8]
    assert alone[0:4] != alone[8:12]
    srv.wait_idle()


def test_api_key_guards_the_adapter_routes(server_bin, fixtures):
    s = Server(server_bin, str(TINY), "--kv-cache-memory", "16MiB", "--lora", f"a={R4}", api_key="sekret")
    try:
        load = {"lora_name": "b", "lora_path": str(R16)}
        for auth in ["", "Bearer wrong"]:
            h = {"Authorization": auth}
            assert error_of(s.request("POST", "/v1/load_lora_adapter", load, headers=h), 401)["code"] == \
                "invalid_api_key"
            error_of(s.request("POST", "/v1/unload_lora_adapter", {"lora_name": "a"}, headers=h), 401)
            error_of(s.request("POST", "/v1/completions", {"model": "a", "prompt": "Hi", "max_tokens": 1},
                               headers=h), 401)
            error_of(s.request("GET", "/v1/models/a", headers=h), 401)
        # Nothing changed without the key; with it, both routes work.
        assert [m["id"] for m in s.get_json("/v1/models")["data"]] == [BASE, "a"]
        assert s.request("POST", "/v1/load_lora_adapter", load)[0] == 200
        r = s.client().completions.create(model="b", prompt="Hi", max_tokens=2, temperature=0)
        assert r.model == "b"
        assert s.request("POST", "/v1/unload_lora_adapter", {"lora_name": "b"})[0] == 200
        assert s.request("POST", "/v1/unload_lora_adapter", {"lora_name": "a"})[0] == 200
        assert [m["id"] for m in s.get_json("/v1/models")["data"]] == [BASE]
        assert s.terminate() == 0, s.stderr()
    finally:
        s.kill()


@pytest.mark.parametrize("flags, says", [
    (["--lora", "a=/no/such/adapter"], "a=/no/such/adapter"),
    (["--lora", f"a={R4}", "--lora", f"a={R4_GGUF}"], "already been loaded"),
    (["--lora", f"{BASE}={R4}"], "base model"),
    (["--lora", f"a={TINY}"], str(TINY)),
    (["--lora", "a"], "NAME=PATH"),
    (["--lora", f"={R4}"], "NAME=PATH"),
    (["--lora", "a="], "NAME=PATH"),
])
def test_bad_lora_flag_ends_the_start(server_bin, fixtures, flags, says):
    cmd = [server_bin, "-m", str(TINY), "--port", str(free_port()), "-t", THREADS, "--kv-cache-memory", "16MiB",
           *flags]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode != 0
    assert says in p.stderr + p.stdout, p.stderr
    assert "serving" not in p.stderr
