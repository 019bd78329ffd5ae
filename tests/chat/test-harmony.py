#!/usr/bin/env python3
"""test-harmony - gpt-oss's harmony format in vt against its oracles.

1. Rendering: gpt-oss's own chat template (tests/chat/gpt-oss-template.py finds it in
   the llama-cpp-python 0.3.36 sdist; never copied here) rendered by vt (vt.ChatTemplate)
   equals transformers' render_jinja_template (jinja2), for system / developer / user /
   assistant-with-thinking / tool-call / tool-result conversations with tools,
   reasoning_effort, model_identity and builtin_tools, raise_exception included; where
   openai-harmony (PyPI) can state the conversation, its render_conversation* equals
   both.
2. Parsing: completions rendered by openai-harmony (fixed ones and sampled ones: random
   channels, recipients, content types and texts full of marker fragments), whole and
   cut at random tokens, are split by vt.parse_harmony exactly as openai-harmony's
   StreamableParser reads them (routed as vLLM serves gpt-oss: analysis -> reasoning,
   functions.NAME -> a call, the rest -> content). Streamed through vt.HarmonyParser in
   token pieces, after every piece what vt has shown is what the oracle has read, but
   for a possible marker it holds back (at most 9 bytes); in random character pieces
   the deltas add up to the same split.

openai-harmony reads o200k_base from TIKTOKEN_ENCODINGS_BASE, pointed at
../shared/data/tokenizers/tiktoken (never the network).

Exit 77 (skip) when vt, openai_harmony, transformers/jinja2, the vocabulary or the
template is missing; under CI=true that is a failure instead (as tests/run.sh).
"""
from __future__ import annotations

import datetime
import json
import os
import random
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("VT_SHARED_DATA", HERE.parents[2] / "shared" / "data"))
VOCAB_DIR = SHARED / "tokenizers" / "tiktoken"


def unavailable(why: str) -> None:
    if os.environ.get("CI") == "true":
        print(f"FAIL: {why}; CI needs it")
        sys.exit(1)
    print(f"SKIP: {why}")
    sys.exit(77)


if not (VOCAB_DIR / "o200k_base.tiktoken").is_file():
    unavailable(f"no {VOCAB_DIR}/o200k_base.tiktoken")
os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(VOCAB_DIR)
try:
    import vt
    import openai_harmony as oh
    from openai_harmony import (Author, Conversation, DeveloperContent, HarmonyEncodingName, Message,
                                ReasoningEffort, Role, StreamableParser, StreamState, SystemContent,
                                ToolDescription)
    from transformers.utils import chat_template_utils as ctu
except ImportError as e:
    unavailable(f"cannot import {e.name} (vt from the build; openai-harmony, transformers, jinja2 from PyPI)")

TEMPLATE_PATH = runpy.run_path(str(HERE / "gpt-oss-template.py"))["PATH"]
if not TEMPLATE_PATH.is_file():
    unavailable(f"no {TEMPLATE_PATH} (tests/chat/gpt-oss-template.py fetch)")
SOURCE = TEMPLATE_PATH.read_text(encoding="utf-8")
ENC = oh.load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
failures: list[str] = []


def check(ok: bool, what: str) -> None:
    if not ok:
        failures.append(what)
        print(f"FAIL: {what}")


# ---- 1. rendering ------------------------------------------------------------

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Gets the weather.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city."},
        "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}
# Every branch of the template's TypeScript rendering (render_typescript_type).
SEARCH = {"type": "function", "function": {
    "name": "search", "description": "Searches documents.",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string", "description": "What to find."},
        "tags": {"type": "array", "items": {"type": "string"}},
        "scores": {"type": "array", "items": {"type": "number"}, "nullable": True},
        "ids": {"type": "array", "items": {"type": "integer"}},
        "flags": {"type": "array", "items": {"type": "boolean"}},
        "filters": {"type": "array", "items": {"type": "object", "properties": {
            "field": {"type": "string"}, "value": {"type": "number"}}, "required": ["field"]}},
        "anything": {"type": "array"},
        "limit": {"type": "integer", "default": 10},
        "exact": {"type": "boolean", "default": False},
        "mode": {"type": "string", "enum": ["fast", "deep"], "default": "fast"},
        "either": {"oneOf": [{"type": "string", "description": "a name"}, {"type": "number", "default": 1}]},
        "union": {"type": ["string", "null"]},
        "opt": {"type": "string", "nullable": True},
        "meta": {"type": "object"},
        "untyped": {}},
        "required": ["query"]}}}
NO_ARGS = {"type": "function", "function": {"name": "now", "description": "The time.", "parameters": {}}}


def transformers_render(messages, add_generation_prompt, **kwargs):
    tools = kwargs.pop("tools", None)
    try:
        out, _ = ctu.render_jinja_template(conversations=[messages], tools=tools, chat_template=SOURCE,
                                           add_generation_prompt=add_generation_prompt, **kwargs)
        return "ok", out[0]
    except Exception as e:  # noqa: BLE001 - the template's raise_exception
        return "error", str(e)


def vt_render(messages, add_generation_prompt, **kwargs):
    try:
        return "ok", vt.ChatTemplate(SOURCE).apply(messages, add_generation_prompt, **kwargs)
    except vt.VtError as e:
        return "error", str(e)


def today() -> str:
    return datetime.date.today().isoformat()


def harmony_system(effort=ReasoningEffort.MEDIUM, identity=None):
    s = SystemContent.new().with_reasoning_effort(effort).with_conversation_start_date(today())
    return Message.from_role_and_content(Role.SYSTEM, s if identity is None else s.with_model_identity(identity))


def harmony_tools(*tools):
    return [ToolDescription.new(t["function"]["name"], t["function"]["description"],
                                parameters=t["function"]["parameters"]) for t in tools]


def am(text, channel, recipient=None, content_type=None):
    m = Message.from_role_and_content(Role.ASSISTANT, text).with_channel(channel)
    if recipient:
        m = m.with_recipient(recipient)
    if content_type:
        m = m.with_content_type(content_type)
    return m


CALL = {"role": "assistant", "reasoning_content": "Need the weather.",
        "tool_calls": [{"id": "call_1", "type": "function",
                        "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}
# (name, messages, add_generation_prompt, kwargs, openai-harmony's conversation or None, how it renders)
CASES = [
    ("user only", [{"role": "user", "content": "Hi"}], True, {},
     [harmony_system(), Message.from_role_and_content(Role.USER, "Hi")], "completion"),
    ("system, past turn with thinking, tools, low effort",
     [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"},
      {"role": "assistant", "content": "Hi!", "thinking": "Greet back."}, {"role": "user", "content": "Weather?"}],
     True, {"tools": [WEATHER], "reasoning_effort": "low"},
     [harmony_system(ReasoningEffort.LOW),
      Message.from_role_and_content(Role.DEVELOPER, DeveloperContent.new().with_instructions("Be brief.")
                                    .with_function_tools(harmony_tools(WEATHER))),
      Message.from_role_and_content(Role.USER, "Hello"), am("Hi!", "final"),
      Message.from_role_and_content(Role.USER, "Weather?")], "completion"),
    ("developer, a call with reasoning_content (aliased to thinking), its result",
     [{"role": "developer", "content": "Use tools."}, {"role": "user", "content": "Weather in Paris?"}, CALL,
      {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 C"}],
     True, {"tools": [WEATHER], "reasoning_effort": "high"},
     [harmony_system(ReasoningEffort.HIGH),
      Message.from_role_and_content(Role.DEVELOPER, DeveloperContent.new().with_instructions("Use tools.")
                                    .with_function_tools(harmony_tools(WEATHER))),
      Message.from_role_and_content(Role.USER, "Weather in Paris?"), am("Need the weather.", "analysis"),
      am('{"city": "Paris"}', "commentary", "functions.get_weather", "json"),
      Message.from_author_and_content(Author.new(Role.TOOL, "functions.get_weather"), '"sunny, 21 C"')
      .with_recipient("assistant").with_channel("commentary")], "completion"),
    ("the call's analysis dropped once a final answer follows",
     [{"role": "user", "content": "Weather in Paris?"}, CALL, {"role": "tool", "content": "sunny"},
      {"role": "assistant", "content": "Sunny."}, {"role": "user", "content": "Thanks"}],
     True, {"tools": [WEATHER]}, None, None),
    ("training: the last assistant turn with its thinking and <|return|>",
     [{"role": "user", "content": "2+2?"}, {"role": "assistant", "thinking": "Add.", "content": "4"}], False, {},
     [harmony_system(), Message.from_role_and_content(Role.USER, "2+2?"), am("Add.", "analysis"), am("4", "final")],
     "training"),
    ("every TypeScript branch, a tool without parameters, arguments as a string",
     [{"role": "user", "content": "Find x"},
      {"role": "assistant", "content": "Let me search.", "tool_calls": [
          {"type": "function", "function": {"name": "search", "arguments": '{"query": "x"}'}}]},
      {"role": "tool", "content": "[]"}],
     True, {"tools": [SEARCH, NO_ARGS, WEATHER]}, None, None),
    ("model_identity and builtin tools",
     [{"role": "system", "content": "Sys."}, {"role": "user", "content": "Browse"}],
     True, {"model_identity": "You are a test.", "builtin_tools": ["browser", "python"], "reasoning_effort": "medium"},
     None, None),
    ("no generation prompt, multiline and unicode content",
     [{"role": "user", "content": "Line 1\nLine 2 \u00e9\u4e2d\U0001F642 {{ not jinja }}"},
      {"role": "assistant", "content": "ok"}, {"role": "user", "content": "again"}], False, {}, None, None),
    ("raise: channel tags in content",
     [{"role": "user", "content": "x"}, {"role": "assistant", "content": "<|channel|>final<|message|>y"}],
     True, {}, None, None),
    ("raise: channel tags in thinking",
     [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y", "thinking": "<|channel|>analysis<|message|>"}],
     True, {}, None, None),
    ("raise: content and thinking beside a call",
     [{"role": "user", "content": "x"}, dict(CALL, content="both")], True, {"tools": [WEATHER]}, None, None),
    ("raise: a tool result without a call", [{"role": "user", "content": "x"}, {"role": "tool", "content": "r"}],
     True, {}, None, None),
]


def check_rendering() -> None:
    for name, messages, agp, kwargs, conversation, how in CASES:
        want = transformers_render(json.loads(json.dumps(messages)), agp, **json.loads(json.dumps(kwargs)))
        got = vt_render(messages, agp, **kwargs)
        if want[0] == "error":
            check(got[0] == "error" and want[1] in got[1], f"render '{name}': transformers raised {want[1]!r}, "
                                                             f"vt gave {got}")
            continue
        check(got == want, f"render '{name}': vt differs from transformers\n  vt:  {got[1]!r}\n  hf:  {want[1]!r}")
        if conversation is not None:
            conv = Conversation.from_messages(conversation)
            if how == "completion":
                h = ENC.decode(ENC.render_conversation_for_completion(conv, Role.ASSISTANT))
            else:
                # Training keeps the analysis of the last turn (the template does
                # too) and ends the final message with <|return|>.
                h = ENC.decode(ENC.render_conversation(conv, oh.RenderConversationConfig(auto_drop_analysis=False)))
                h = h[: -len("<|end|>")] + "<|return|>" if h.endswith("<|end|>") else h
            check(h == got[1], f"render '{name}': vt differs from openai-harmony\n  vt:  {got[1]!r}\n  oh:  {h!r}")
    # The template is recognised as harmony, so vt-server and LLM.chat parse its outputs.
    check(vt.ChatTemplate(SOURCE).tool_call_format == "harmony", "the template is not detected as harmony")


# ---- 2. parsing --------------------------------------------------------------

END_MARKERS = ("<|end|>", "<|return|>", "<|call|>")
FRAGMENTS = ["Hello", " world", ".", "\u00e9", "\u4e2d\u6587", "\U0001F642", "\n", " ", "<", "|", ">", "<|", "|>",
             "<|en", "<|ret", "<|cal", "<|e", "to=", "json", "{", "}", '"', "a<b", "<|channel|>", "<|start|>",
             "<|message|>", "<|constrain|>", "functions.", "analysis", "final"]
FUNCTIONS = ["get_weather", "search", "f", "lookup_2"]


def random_text(rng: random.Random) -> str:
    while True:
        text = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 12)))
        if not any(m in text for m in END_MARKERS):
            return text


def random_message(rng: random.Random) -> Message:
    kind = rng.choice(["analysis", "final", "call", "call", "commentary", "builtin"])
    if kind == "call":
        args = json.dumps({"q": random_text(rng), "n": rng.randint(0, 99)}, ensure_ascii=rng.random() < 0.5)
        return am(args, "commentary", "functions." + rng.choice(FUNCTIONS), rng.choice(["json", "<|constrain|>json", None]))
    if kind == "builtin":
        return am(random_text(rng), "analysis", rng.choice(["browser.search", "python"]), rng.choice(["code", None]))
    return am(random_text(rng), kind)


def completion_tokens(messages: list[Message], drop_last_end: bool) -> list[int]:
    """openai-harmony's rendering of the messages as the model writes them after a
    prompt ending in <|start|>assistant; the stop token (<|return|>, <|call|>)
    that ends generation is not in the text the engine shows."""
    text = "".join(ENC.decode(ENC.render(m)) for m in messages)
    assert text.startswith("<|start|>assistant"), text
    text = text[len("<|start|>assistant"):]
    if drop_last_end:
        for marker in END_MARKERS:
            if text.endswith(marker):
                text = text[: -len(marker)]
                break
    return ENC.encode(text, allowed_special="all")


class Split:
    """content / reasoning_content / tool_calls as vLLM routes harmony messages."""

    def __init__(self) -> None:
        self.content: str | None = None
        self.reasoning: str | None = None
        self.calls: list[list[str]] = []

    def add(self, channel, recipient, text) -> None:
        if recipient and recipient.startswith("functions."):
            self.calls.append([recipient[len("functions."):], text])
        elif channel == "analysis" or recipient:
            self.reasoning = (self.reasoning or "") + text
        else:
            self.content = (self.content or "") + text

    def as_dict(self) -> dict:
        return {"content": self.content, "reasoning_content": self.reasoning,
                "tool_calls": [{"name": n, "arguments": a} for n, a in self.calls]}


def message_text(m: Message) -> str:
    return "".join(c.text for c in m.content)


def oracle_snapshot(p: StreamableParser) -> Split:
    s = Split()
    for m in p.messages:
        s.add(m.channel, m.recipient, message_text(m))
    if p.state == StreamState.CONTENT:
        s.add(p.current_channel, p.current_recipient, p.current_content)
    return s


def oracle_final(tokens: list[int]) -> dict:
    p = StreamableParser(ENC, Role.ASSISTANT)
    for t in tokens:
        p.process(t)
    try:
        p.process_eos()
    except oh.HarmonyError:
        pass  # a header cut off: the messages before it stand
    s = Split()
    for m in p.messages:
        s.add(m.channel, m.recipient, message_text(m))
    return s.as_dict()


class Deltas:
    def __init__(self) -> None:
        self.content = ""
        self.reasoning = ""
        self.calls: list[list[str]] = []

    def add(self, deltas: list[dict]) -> None:
        for d in deltas:
            if "content" in d:
                self.content += d["content"]
            elif "reasoning_content" in d:
                self.reasoning += d["reasoning_content"]
            else:
                c = d["tool_call"]
                if "name" in c:
                    assert c["index"] == len(self.calls), d
                    self.calls.append([c["name"], ""])
                else:
                    assert c["index"] == len(self.calls) - 1, d
                    self.calls[-1][1] += c["arguments"]


def held_ok(shown: str, read: str) -> bool:
    # What vt shows is what the oracle read, but for a held-back possible marker.
    return read.startswith(shown) and len(read) - len(shown) <= 9 and (read == shown or "<" in read[len(shown):])


def utf8_text(tokens: list[int]) -> str | None:
    """The tokens' text, None when it ends inside a UTF-8 character."""
    try:
        return ENC.decode_utf8(tokens)
    except oh.HarmonyError:
        return None


def check_completion(tokens: list[int], rng: random.Random, label: str) -> None:
    text = utf8_text(tokens)
    want = oracle_final(tokens)
    got = vt.parse_harmony(text)
    if got != want:
        check(False, f"parse {label}: {text!r}\n  vt:     {got}\n  oracle: {want}")
        return
    # Token by token, as a server streams (pieces that end inside a UTF-8
    # character wait for the next token, as the engine holds them).
    p = StreamableParser(ENC, Role.ASSISTANT)
    hp = vt.HarmonyParser()
    acc = Deltas()
    shown = ""
    for i, t in enumerate(tokens):
        p.process(t)
        so_far = utf8_text(tokens[: i + 1])
        if so_far is None:
            continue
        piece, shown = so_far[len(shown):], so_far
        acc.add(hp.push(piece))
        read = oracle_snapshot(p)
        ok = (held_ok(acc.content, read.content or "") and held_ok(acc.reasoning, read.reasoning or "")
              and len(acc.calls) == len(read.calls)
              and all(a[0] == b[0] and held_ok(a[1], b[1]) for a, b in zip(acc.calls, read.calls)))
        if not ok:
            check(False, f"stream {label}: after {piece!r} of {text!r}\n  vt shown: {vars(acc)}\n"
                         f"  oracle read: {read.as_dict()}")
            return
    acc.add(hp.push("", end=True))
    streamed = {"content": acc.content, "reasoning_content": acc.reasoning,
                "tool_calls": [{"name": n, "arguments": a} for n, a in acc.calls]}
    flat = dict(want, content=want["content"] or "", reasoning_content=want["reasoning_content"] or "")
    check(streamed == flat and hp.result() == want, f"stream {label}: deltas {streamed} != {flat}")
    # Random character pieces.
    hp = vt.HarmonyParser()
    acc = Deltas()
    i = 0
    while i < len(text):
        n = rng.randint(1, 12)
        acc.add(hp.push(text[i:i + n]))
        i += n
    acc.add(hp.push("", end=True))
    check(acc.content == flat["content"] and acc.reasoning == flat["reasoning_content"]
          and acc.calls == [[c["name"], c["arguments"]] for c in want["tool_calls"]],
          f"chunked {label}: {text!r}")


FIXED = [
    [am("The user wants the weather. Use get_weather.", "analysis"),
     am('{"city":"Paris"}', "commentary", "functions.get_weather", "<|constrain|>json")],
    [am("Simple.", "analysis"), am("Hello! How can I help?", "final")],
    [am("Checking the weather now.", "commentary"), am('{"city":"Oslo"}', "commentary", "functions.get_weather", "json")],
    [am("Search first.", "analysis"), am('{"query":"q"}', "analysis", "browser.search", "code"),
     am("Found it.", "final")],
    [am("", "final")],
    [am("a", "commentary", "functions.f", "json"), am("b", "commentary", "functions.search", "json")],
]


def check_parsing(n_sampled: int) -> None:
    rng = random.Random(20251206)
    cases = [(msgs, drop) for msgs in FIXED for drop in (True, False)]
    cases += [([random_message(rng) for _ in range(rng.randint(1, 4))], rng.random() < 0.5) for _ in range(n_sampled)]
    for i, (msgs, drop) in enumerate(cases):
        tokens = completion_tokens(msgs, drop)
        check_completion(tokens, rng, f"case {i}")
        for j in range(3):  # cut at a random token (where the text is whole UTF-8)
            k = rng.randint(0, len(tokens))
            while utf8_text(tokens[:k]) is None:
                k -= 1
            check_completion(tokens[:k], rng, f"case {i} cut {j}")
        if len(failures) > 20:
            break
    print(f"parsed {len(cases)} completions, each whole and cut 3 times, streamed by token and by random pieces")


# ---- 3. LLM.chat ---------------------------------------------------------------

def check_llm_chat() -> None:
    """LLM.chat with a harmony template on the tiny random-weight model, its
    output forced by a grammar to known harmony text (the tiny vocabulary has
    no harmony control tokens, so the markers are plain text there). The
    template is a short one of the same markers: gpt-oss's own prompt is
    longer than the tiny model's 256-token context."""
    writer = os.environ.get("VT_WRITE_TINY_MODEL")
    if not writer or not Path(writer).exists():
        unavailable("VT_WRITE_TINY_MODEL is unset (run through meson test)")
    import subprocess
    import tempfile
    short = ("{% for m in messages %}<|start|>{{ m.role }}<|message|>{{ m.content }}<|end|>{% endfor %}"
             "<|start|>assistant{# answers on a <|channel|> #}")
    check(vt.ChatTemplate(short).tool_call_format == "harmony", "the short template is not harmony")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tiny.gguf"
        subprocess.run([writer, str(path)], check=True)
        llm = vt.LLM(str(path), kv_cache_memory="16MiB")
        call = ('<|channel|>analysis<|message|>Hm.<|end|><|start|>assistant<|channel|>commentary '
                'to=functions.f json<|message|>{"a":1}')
        answer = '<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>Hi.'
        for text, want in [(call, ("", "Hm.", [{"name": "f", "arguments": '{"a":1}'}], "tool_calls")),
                           (answer, ("Hi.", "Easy.", [], "stop"))]:
            params = vt.SamplingParams(temperature=0, max_tokens=180, grammar="root ::= " + json.dumps(text))
            out = llm.chat([{"role": "user", "content": "Hi?"}], params, chat_template=short)[0]
            got = (out.text, out.reasoning_content, out.tool_calls, out.finish_reason)
            check(got == want, f"LLM.chat: {got} != {want}")


def main() -> int:
    check_llm_chat()
    print("LLM.chat splits harmony answers")
    check_rendering()
    print(f"rendered {len(CASES)} conversations (vt, transformers, openai-harmony)")
    check_parsing(int(os.environ.get("VT_HARMONY_SAMPLES", "300")))
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
