"""gpt-oss's harmony format through vt-server, as vLLM serves gpt-oss: the
analysis channel comes back as message.reasoning_content, the final channel
as message.content, messages to functions.NAME as message.tool_calls; the
same split streamed as reasoning_content / content / tool_calls deltas.

The server runs the default model with gpt-oss's own chat template
(--chat-template; tests/chat/gpt-oss-template.py finds it in the
llama-cpp-python sdist), which selects the harmony parser, and a grammar
forces the output to harmony text that we know. (SmolLM2's vocabulary has no
harmony control tokens, so the markers are generated as plain text: the
parser reads text and cannot tell; the control-token side, render_special
and the <|return|>/<|call|> stops, is tested in tests/abi/test-abi-engine.)
"""
import json
import os
import runpy
from pathlib import Path

import pytest

from conftest import Server

ROOT = Path(os.environ.get("VT_SOURCE_ROOT", Path(__file__).resolve().parents[2]))
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
ASK = [{"role": "user", "content": "What is the weather like in Paris today?"}]
# Short: the markers are many tokens of plain text here, and the test
# machines are slow.
CALL = ('<|channel|>analysis<|message|>Need it.<|end|><|start|>assistant<|channel|>commentary '
        'to=functions.get_weather json<|message|>{"city":"Paris"}')
ANSWER = '<|channel|>analysis<|message|>Told.<|end|><|start|>assistant<|channel|>final<|message|>Sunny.'


def gbnf_literal(text):
    return "root ::= " + json.dumps(text)


@pytest.fixture(scope="module")
def harmony_server(server_bin, model_path):
    path = runpy.run_path(str(ROOT / "tests" / "chat" / "gpt-oss-template.py"))["PATH"]
    if not path.is_file():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{path} is missing (tests/run.sh fetches it)")
        pytest.skip(f"{path} is missing (tests/chat/gpt-oss-template.py fetch)")
    s = Server(server_bin, model_path, "--kv-cache-memory", "128MiB", "--chat-template", str(path))
    yield s
    s.kill()


def assemble(chunks):
    """A streamed answer as a client sees it."""
    reasoning, content, calls, finish = "", "", {}, None
    for ch in chunks:
        if not ch.choices:
            continue
        d = ch.choices[0].delta
        content += d.content or ""
        reasoning += getattr(d, "reasoning_content", None) or ""
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
    return reasoning, content, [calls[i] for i in sorted(calls)], finish


def test_call_split_whole_and_streamed(harmony_server):
    client = harmony_server.client()
    kw = dict(model=harmony_server.model, messages=ASK, tools=[WEATHER], max_tokens=120, temperature=0,
              extra_body={"structured_outputs": {"grammar": gbnf_literal(CALL)}})
    c = client.chat.completions.create(**kw).choices[0]
    assert c.finish_reason == "tool_calls"
    assert c.message.content is None
    assert c.message.reasoning_content == "Need it."
    (call,) = c.message.tool_calls
    assert call.function.name == "get_weather" and call.id.startswith("call_")
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    chunks = list(client.chat.completions.create(stream=True, **kw))
    reasoning, content, calls, finish = assemble(chunks)
    assert (reasoning, content, finish) == ("Need it.", "", "tool_calls")
    assert [(x["name"], x["arguments"]) for x in calls] == [("get_weather", call.function.arguments)]
    assert calls[0]["id"].startswith("call_")
    # Nothing of the markup reaches the client, and reasoning comes in pieces as generated.
    deltas = [ch.choices[0].delta for ch in chunks if ch.choices]
    assert not any("<|" in (d.content or "") + (getattr(d, "reasoning_content", None) or "") for d in deltas)
    assert sum(1 for d in deltas if getattr(d, "reasoning_content", None)) > 1
    # The answer goes back through the template (reasoning_content, the call, its result).
    history = ASK + [c.message.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 degrees"}]
    kw2 = dict(model=harmony_server.model, messages=history, tools=[WEATHER], max_tokens=120, temperature=0,
               reasoning_effort="low", extra_body={"structured_outputs": {"grammar": gbnf_literal(ANSWER)}})
    r = client.chat.completions.create(**kw2).choices[0]
    assert r.message.content == "Sunny."
    assert r.message.reasoning_content == "Told."
    assert r.message.tool_calls is None and r.finish_reason == "stop"


def test_answer_without_tools(harmony_server):
    # No tools: the reasoning is still split out, whole and streamed.
    client = harmony_server.client()
    kw = dict(model=harmony_server.model, messages=ASK, max_tokens=120, temperature=0,
              extra_body={"structured_outputs": {"grammar": gbnf_literal(ANSWER)}})
    c = client.chat.completions.create(**kw).choices[0]
    assert (c.message.content, c.message.reasoning_content) == ("Sunny.", "Told.")
    assert c.finish_reason == "stop" and c.message.tool_calls is None
    reasoning, content, calls, finish = assemble(client.chat.completions.create(stream=True, **kw))
    assert (reasoning, content, calls, finish) == ("Told.", "Sunny.", [], "stop")


def test_not_harmony_text_is_content(harmony_server):
    # Output that is not harmony (a grammar forced JSON): all content, nothing lost.
    client = harmony_server.client()
    kw = dict(model=harmony_server.model, messages=ASK, max_tokens=40, temperature=0,
              extra_body={"structured_outputs": {"grammar": gbnf_literal('{"a": 1}')}})
    c = client.chat.completions.create(**kw).choices[0]
    assert c.message.content == '{"a": 1}' and c.message.reasoning_content is None
    reasoning, content, calls, finish = assemble(client.chat.completions.create(stream=True, **kw))
    assert (reasoning, content, calls, finish) == ("", '{"a": 1}', [], "stop")
    # Cut off by max_tokens inside the answer: what came is kept.
    kw = dict(model=harmony_server.model, messages=ASK, max_tokens=12, temperature=0,
              extra_body={"structured_outputs": {"grammar": gbnf_literal(ANSWER)}})
    c = client.chat.completions.create(**kw).choices[0]
    assert c.finish_reason == "length"
    assert "Told.".startswith(c.message.reasoning_content or "")
    assert "<|" not in (c.message.content or "") + (c.message.reasoning_content or "")
