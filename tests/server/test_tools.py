"""Tool calling through vt-server, as vLLM serves it: tool_choice "required"
and a named function constrain the output to calls; "auto" parses the
output in the syntax the chat template teaches (here Qwen 2.5's Hermes-style
template, given with --chat-template, with the output forced by a grammar so
that the parse is exercised on known text); "none" leaves it alone.
Streamed calls, assembled as a client does, equal the whole answer's."""
import json
import os
from pathlib import Path

import openai
import pytest

from conftest import Server

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is not installed (tests/run.sh pins it)")

WEATHER = {"type": "object",
           "properties": {"city": {"type": "string", "maxLength": 20},
                          "unit": {"enum": ["celsius", "fahrenheit"]}},
           "required": ["city", "unit"]}
TIME = {"type": "object", "properties": {"timezone": {"type": "string", "maxLength": 24}}, "required": ["timezone"]}
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
                                      "parameters": WEATHER}},
    {"type": "function", "function": {"name": "get_time", "description": "The time in a time zone.",
                                      "parameters": TIME}},
]
SCHEMAS = {"get_weather": WEATHER, "get_time": TIME}
ASK = [{"role": "user", "content": "What is the weather like in Paris today?"}]


def check_calls(calls):
    assert calls
    for call in calls:
        assert call.type == "function" and call.id.startswith("call_") and len(call.id) == 29
        assert call.function.name in SCHEMAS
        jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[call.function.name])


def assemble(chunks):
    """A streamed answer as the client sees it: content and calls by index."""
    content, calls, finish = "", {}, None
    for ch in chunks:
        if not ch.choices:
            continue
        d = ch.choices[0].delta
        content += d.content or ""
        for tc in d.tool_calls or []:
            c = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
            if tc.id:
                assert c["id"] is None, "a call's id comes once"
                c["id"] = tc.id
            if tc.function and tc.function.name:
                c["name"] += tc.function.name
            if tc.function and tc.function.arguments:
                c["arguments"] += tc.function.arguments
        finish = ch.choices[0].finish_reason or finish
    return content, [calls[i] for i in sorted(calls)], finish


def as_dicts(calls):
    return [{"name": c.function.name, "arguments": c.function.arguments} for c in calls]


def test_required(server, client):
    for seed in (1, 2):
        r = client.chat.completions.create(model=server.model, messages=ASK, tools=TOOLS, tool_choice="required",
                                           max_tokens=300, temperature=1.0, n=2, seed=seed)
        for c in r.choices:
            assert c.finish_reason == "tool_calls", c.message
            assert c.message.content is None
            check_calls(c.message.tool_calls)
    # parallel_tool_calls false: exactly one call.
    r = client.chat.completions.create(model=server.model, messages=ASK, tools=TOOLS, tool_choice="required",
                                       parallel_tool_calls=False, max_tokens=300, temperature=0)
    assert len(r.choices[0].message.tool_calls) == 1


def test_named_function(server, client):
    choice = {"type": "function", "function": {"name": "get_time"}}
    r = client.chat.completions.create(model=server.model, messages=ASK, tools=TOOLS, tool_choice=choice,
                                       max_tokens=200, temperature=1.0, n=3, seed=4)
    for c in r.choices:
        # As OpenAI and vLLM: a forced function ends with "stop".
        assert c.finish_reason == "stop" and c.message.content is None
        (call,) = c.message.tool_calls
        assert call.function.name == "get_time"
        check_calls([call])


@pytest.mark.parametrize("tool_choice", ["required", {"type": "function", "function": {"name": "get_weather"}}])
def test_stream_equals_whole(server, client, tool_choice):
    kw = dict(model=server.model, messages=ASK, tools=TOOLS, tool_choice=tool_choice, max_tokens=300, temperature=0)
    whole = client.chat.completions.create(**kw).choices[0]
    content, calls, finish = assemble(client.chat.completions.create(stream=True, **kw))
    assert content == (whole.message.content or "")
    assert [{"name": c["name"], "arguments": c["arguments"]} for c in calls] == as_dicts(whole.message.tool_calls)
    assert all(c["id"] and c["id"].startswith("call_") for c in calls)
    assert finish == whole.finish_reason


def test_two_turns(server, client):
    """call -> the tool's result -> an answer in words."""
    r = client.chat.completions.create(model=server.model, messages=ASK, tools=TOOLS,
                                       tool_choice={"type": "function", "function": {"name": "get_weather"}},
                                       max_tokens=200, temperature=0)
    msg = r.choices[0].message
    (call,) = msg.tool_calls
    history = ASK + [msg.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"temperature": 21})}]
    r2 = client.chat.completions.create(model=server.model, messages=history, tools=TOOLS, max_tokens=30,
                                        temperature=0)
    c = r2.choices[0]
    assert c.message.tool_calls is None and c.message.content
    assert c.finish_reason in ("stop", "length")


def test_none_and_auto_without_syntax(server, client):
    """SmolLM2's template knows no tool syntax: auto answers in words, as none does."""
    for tool_choice in ("none", "auto"):
        r = client.chat.completions.create(model=server.model, messages=ASK, tools=TOOLS, tool_choice=tool_choice,
                                           max_tokens=8, temperature=0)
        c = r.choices[0]
        assert c.message.tool_calls is None and c.message.content and c.finish_reason in ("stop", "length")


@pytest.mark.parametrize("extra", [
    {"tool_choice": "required"},                                                      # no tools
    {"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "nope"}}},
    {"tools": TOOLS, "tool_choice": "sometimes"},
    {"tools": TOOLS, "tool_choice": {"type": "function"}},
    {"tools": [{"type": "function", "function": {"description": "no name"}}]},
    {"tools": [{"type": "function", "function": {"name": "f", "parameters": "x"}}]},
    {"tools": TOOLS, "tool_choice": "required", "response_format": {"type": "json_object"}},
    {"tools": [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"type": "string", "not": {"const": "x"}}}}}}], "tool_choice": "required"},
])
def test_bad_tool_requests(server, extra):
    status, raw = server.request("POST", "/v1/chat/completions",
                                 {"model": server.model, "messages": ASK, "max_tokens": 5, **extra})
    assert status == 400, raw
    assert json.loads(raw)["error"]["message"]


# ---- "auto" with a template that teaches a syntax ---------------------------

QWEN_CALL = ('Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": '
             '{"city": "Paris", "unit": "celsius"}}\n</tool_call>')


def gbnf_literal(text):
    return "root ::= " + json.dumps(text)


@pytest.fixture(scope="module")
def hermes_server(server_bin, model_path, tmp_path_factory):
    root = Path(os.environ.get("VT_SOURCE_ROOT", Path(__file__).resolve().parents[2]))
    golden = root / "tests" / "chat" / "goldens" / "Qwen-Qwen2.5-7B-Instruct.json"
    if not golden.exists():
        pytest.skip(f"{golden} is missing")
    tmpl = tmp_path_factory.mktemp("tmpl") / "qwen2.5.jinja"
    tmpl.write_text(json.loads(golden.read_text())["template"])
    s = Server(server_bin, model_path, "--kv-cache-memory", "128MiB", "--chat-template", str(tmpl))
    yield s
    s.kill()


def test_auto_parses_hermes_calls(hermes_server):
    client = hermes_server.client()
    kw = dict(model=hermes_server.model, messages=ASK, tools=TOOLS, max_tokens=100, temperature=0,
              extra_body={"structured_outputs": {"grammar": gbnf_literal(QWEN_CALL)}})
    c = client.chat.completions.create(**kw).choices[0]
    assert c.finish_reason == "tool_calls"
    assert c.message.content == "Let me check."
    (call,) = c.message.tool_calls
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris", "unit": "celsius"}
    # Streamed: the content before the call, nothing of the markup, then the call.
    chunks = list(client.chat.completions.create(stream=True, **kw))
    content, calls, finish = assemble(chunks)
    assert content == "Let me check." and finish == "tool_calls"
    assert [{"name": x["name"], "arguments": x["arguments"]} for x in calls] == as_dicts(c.message.tool_calls)
    assert not any("<tool" in (ch.choices[0].delta.content or "") for ch in chunks if ch.choices)
    # The conversation goes back through the template with the call in it.
    history = ASK + [c.message.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": call.id, "content": "21 degrees"}]
    r2 = client.chat.completions.create(model=hermes_server.model, messages=history, tools=TOOLS, max_tokens=20,
                                        temperature=0)
    assert r2.choices[0].message.content is not None


def test_auto_malformed_call_is_content(hermes_server):
    client = hermes_server.client()
    text = "<tool_call>\n{\"name\": get_weather}\n</tool_call>"
    kw = dict(model=hermes_server.model, messages=ASK, tools=TOOLS, max_tokens=100, temperature=0,
              extra_body={"structured_outputs": {"grammar": gbnf_literal(text)}})
    c = client.chat.completions.create(**kw).choices[0]
    assert c.message.tool_calls is None and c.message.content == text and c.finish_reason == "stop"
    content, calls, finish = assemble(client.chat.completions.create(stream=True, **kw))
    assert content == text and calls == [] and finish == "stop"
    # tool_choice none: not parsed at all.
    kw["extra_body"] = {"structured_outputs": {"grammar": gbnf_literal(QWEN_CALL)}}
    c = client.chat.completions.create(tool_choice="none", **kw).choices[0]
    assert c.message.tool_calls is None and c.message.content == QWEN_CALL
