#!/usr/bin/env python3
"""make-goldens - renders real chat templates with transformers' own
chat-template code and writes tests/chat/goldens/<name>.json, which
tests/unit/test-jinja.cpp renders again with vt's Jinja and compares byte for
byte.

Run with the project venv (transformers and jinja2 installed):
    .venv/bin/python tests/chat/make-goldens.py

Templates come only from files (never typed from memory):
  - SmolLM2-135M-Instruct: tokenizer.chat_template of the GGUF that
    examples/models/vt_models.py fetches ("smollm2").
  - Gemma 3: the GGUF that vt_models.py fetches ("gemma3-270m") carries no
    chat template, so tests/chat/templates/gemma-3.jinja holds the value of
    _CHAT_TEMPLATE in huggingface/transformers @ c1a83acdb3fd77f2e897215d94a5ceaf05c885f1 :
    src/transformers/models/gemma3/convert_gemma3_weights.py (the template the
    converter writes into Gemma 3 tokenizer configs).
  - Phi-3: tokenizer.chat_template of ../shared/data/tokenizers/llama.cpp-vocab/ggml-vocab-phi-3.gguf.
  - Others: llama.cpp's models/templates/*.jinja (copies of the models' Hub
    templates) and models/ggml-vocab-*.gguf, from the llama.cpp tree vendored
    in the llama_cpp_python 0.3.36 sdist, unpacked under ~/.cache/vt/llama.cpp-src.
A template whose file is absent is skipped (its old golden stays).

Each case records the exact variables the template sees (what transformers'
render_jinja_template passes to Template.render: messages after its
normalisation, tools, documents, add_generation_prompt and extra kwargs such
as bos_token), the clock strftime_now reads, and the output or the error.
"""
from __future__ import annotations

import copy
import datetime as real_datetime
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "tests" / "chat" / "goldens"
SHARED = REPO.parent / "shared" / "data" / "tokenizers"
LLAMA_CPP = Path.home() / ".cache" / "vt" / "llama.cpp-src" / "llama_cpp_python-0.3.36" / "vendor" / "llama.cpp"
LLAMA_CPP_SOURCE = "llama.cpp as vendored in the llama_cpp_python 0.3.36 sdist (PyPI)"

sys.path.insert(0, str(REPO / "examples" / "models"))

from transformers.utils import chat_template_utils as ctu  # noqa: E402

# strftime_now reads datetime.now() from this module; pin it so goldens are stable.
FIXED_NOW = real_datetime.datetime(2025, 2, 3, 14, 5, 9)


class _FixedDatetime(real_datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return FIXED_NOW


ctu.datetime = _FixedDatetime


def gguf_template(path: Path, key: str = "tokenizer.chat_template") -> str | None:
    if not path.is_file():
        return None
    import gguf
    reader = gguf.GGUFReader(str(path))
    field = reader.fields.get(key)
    if field is None:
        return None
    return bytes(field.parts[field.data[0]]).decode("utf-8")


def file_template(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None


def smollm2_template() -> str | None:
    try:
        import vt_models
        return gguf_template(vt_models.model_path("smollm2", fetch_if_missing=False))
    except Exception as e:  # noqa: BLE001 - a missing model only skips this template
        print(f"smollm2: {e}", file=sys.stderr)
        return None


# name -> (source description, loader, bos, eos)
TEMPLATES = {
    "smollm2": ("tokenizer.chat_template of SmolLM2-135M-Instruct.Q4_1.gguf (examples/models/vt_models.py: smollm2)",
                smollm2_template, "<|im_start|>", "<|im_end|>"),
    "gemma-3": ("huggingface/transformers @ c1a83acdb3fd77f2e897215d94a5ceaf05c885f1 : "
                "src/transformers/models/gemma3/convert_gemma3_weights.py (_CHAT_TEMPLATE), "
                "copied to tests/chat/templates/gemma-3.jinja",
                lambda: file_template(REPO / "tests" / "chat" / "templates" / "gemma-3.jinja"), "<bos>", "<eos>"),
    "phi-3": ("tokenizer.chat_template of ../shared/data/tokenizers/llama.cpp-vocab/ggml-vocab-phi-3.gguf",
              lambda: gguf_template(SHARED / "llama.cpp-vocab" / "ggml-vocab-phi-3.gguf"), "<s>", "<|endoftext|>"),
    "qwen2-vocab": (f"tokenizer.chat_template of models/ggml-vocab-qwen2.gguf, {LLAMA_CPP_SOURCE}",
                    lambda: gguf_template(LLAMA_CPP / "models" / "ggml-vocab-qwen2.gguf"), "", "<|endoftext|>"),
    "command-r": (f"tokenizer.chat_template of models/ggml-vocab-command-r.gguf, {LLAMA_CPP_SOURCE}",
                  lambda: gguf_template(LLAMA_CPP / "models" / "ggml-vocab-command-r.gguf"), "<BOS_TOKEN>",
                  "<|END_OF_TURN_TOKEN|>"),
    "command-r-tool-use": (f"tokenizer.chat_template.tool_use of models/ggml-vocab-command-r.gguf, {LLAMA_CPP_SOURCE}",
                           lambda: gguf_template(LLAMA_CPP / "models" / "ggml-vocab-command-r.gguf",
                                                 "tokenizer.chat_template.tool_use"),
                           "<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"),
    "gemma-4": (f"tokenizer.chat_template of models/ggml-vocab-gemma-4.gguf, {LLAMA_CPP_SOURCE}",
                lambda: gguf_template(LLAMA_CPP / "models" / "ggml-vocab-gemma-4.gguf"), "<bos>", "<eos>"),
}
for _name, _bos, _eos in (
        ("meta-llama-Llama-3.1-8B-Instruct", "<|begin_of_text|>", "<|eot_id|>"),
        ("meta-llama-Llama-3.2-3B-Instruct", "<|begin_of_text|>", "<|eot_id|>"),
        ("Qwen-Qwen2.5-7B-Instruct", "", "<|im_end|>"),
        ("Qwen-Qwen3-0.6B", "", "<|im_end|>"),
        ("mistralai-Mistral-Nemo-Instruct-2407", "<s>", "</s>"),
        ("microsoft-Phi-3.5-mini-instruct", "<s>", "<|endoftext|>"),
        ("google-gemma-2-2b-it", "<bos>", "<eos>"),
        ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
        ("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", "<|begin_of_text|>", "<|im_end|>"),
        ("HuggingFaceTB-SmolLM3-3B", "", "<|im_end|>"),
        ("ibm-granite-granite-3.3-2B-Instruct", "", "<|end_of_text|>"),
        ("CohereForAI-c4ai-command-r-plus-tool_use", "<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"),
):
    TEMPLATES[_name] = (f"models/templates/{_name}.jinja, {LLAMA_CPP_SOURCE}",
                        (lambda n=_name: file_template(LLAMA_CPP / "models" / "templates" / f"{n}.jinja")), _bos, _eos)

TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City name, e.g. \"Paris\""},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["location"],
        },
    },
}]

# Cohere's tool-use templates read their own flat tool format.
COHERE_TOOLS = [{
    "name": "get_weather",
    "description": "Get the current weather in a city",
    "parameter_definitions": {
        "location": {"description": "City name", "type": "str", "required": True},
        "unit": {"description": "celsius or fahrenheit", "type": "str", "required": False},
    },
}]

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
CONVERSATIONS = {
    "single": [{"role": "user", "content": "Hello!"}],
    "system": [SYSTEM, {"role": "user", "content": "What is 2+2?"}],
    "multi": [SYSTEM,
              {"role": "user", "content": "Hi there"},
              {"role": "assistant", "content": "Hello! How can I help?"},
              {"role": "user", "content": "Tell me a joke."}],
    "multi-no-system": [{"role": "user", "content": "Hi there"},
                        {"role": "assistant", "content": "Hello! How can I help?"},
                        {"role": "user", "content": "Tell me a joke."},
                        {"role": "assistant", "content": "Why did the chicken cross the road?"}],
    "unicode": [{"role": "user", "content": "  Grüße, 世界! 🦙 \"quotes\" and 'apostrophes' \\ back\\slash\n\ttabbed  \n"},
                {"role": "assistant", "content": "\nÇa va? — «ok» ✓ \u2028 end\n\n"},
                {"role": "user", "content": "{{ not a template }} {% neither %}"}],
    "bad-order": [{"role": "assistant", "content": "I speak first"}, {"role": "user", "content": "Hi"}],
}
TOOL_CONVERSATION = [
    {"role": "user", "content": "What's the weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [{
        "id": "call12345", "type": "function",
        "function": {"name": "get_weather", "arguments": {"location": "Paris", "unit": "celsius"}}}]},
    {"role": "tool", "tool_call_id": "call12345", "name": "get_weather", "content": "{\"temperature\": 22, \"sky\": \"sunny\"}"},
    {"role": "assistant", "content": "It is 22 °C and sunny in Paris."},
    {"role": "user", "content": "Thanks!"},
]
REASONING_CONVERSATION = [
    {"role": "user", "content": "Is 17 prime?"},
    {"role": "assistant", "reasoning_content": "Check divisors up to 4: none divide 17.", "content": "Yes, 17 is prime."},
    {"role": "user", "content": "And 21?"},
]


def cases_for(name: str, template: str):
    tools = COHERE_TOOLS if "parameter_definitions" in template else TOOLS
    # Tool-use variants iterate over `tools` unconditionally.
    always = tools if "tool_use" in name or "tool-use" in name else None
    for case, conv in CONVERSATIONS.items():
        yield case, conv, always, {}, True
        if case in ("multi", "multi-no-system"):
            yield case + "-no-gen", conv, always, {}, False
    if "tools" in template:
        yield "tools", TOOL_CONVERSATION, tools, {}, True
        yield "tools-defined-empty", CONVERSATIONS["system"], None, {}, True
    if "reasoning_content" in template or "thinking" in template:
        yield "reasoning", REASONING_CONVERSATION, None, {}, True
    if "enable_thinking" in template:
        yield "no-thinking", CONVERSATIONS["system"], None, {"enable_thinking": False}, True
    if "date_string" in template:
        yield "date-string", CONVERSATIONS["system"], None, {"date_string": "05 Mar 2025"}, True


def render_case(template: str, conv, tools, extra, agp, bos, eos):
    kwargs = {"bos_token": bos, "eos_token": eos, **extra}
    messages = ctu._normalize_chat_messages(copy.deepcopy(conv))
    try:
        rendered, _ = ctu.render_jinja_template(
            conversations=[messages], tools=tools, chat_template=template,
            add_generation_prompt=agp, **copy.deepcopy(kwargs))
        expected, error = rendered[0], None
    except Exception as e:  # noqa: BLE001 - the template raised: the golden records that
        expected, error = None, f"{type(e).__name__}: {e}"
    # The variables render_jinja_template hands to Template.render, in its order.
    context = {
        "messages": ctu._alias_reasoning_fields(ctu._plain_template_data(messages)),
        "tools": ctu._plain_template_data(tools),
        "documents": None,
        "add_generation_prompt": agp,
        **ctu._plain_template_data(kwargs),
    }
    if expected is not None:  # the recorded context reproduces transformers' output
        direct = ctu._compile_jinja_template(template).render(**copy.deepcopy(context))
        assert direct == expected, "recorded context does not reproduce the output"
    return context, expected, error


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    written = 0
    for name, (source, load, bos, eos) in TEMPLATES.items():
        template = load()
        if template is None:
            print(f"skip {name}: source not found", file=sys.stderr)
            continue
        cases = []
        for case_name, conv, tools, extra, agp in cases_for(name, template):
            context, expected, error = render_case(template, conv, tools, extra, agp, bos, eos)
            case = {"name": case_name, "now": FIXED_NOW.strftime("%Y-%m-%d %H:%M:%S"), "context": context}
            if error is None:
                case["expected"] = expected
            else:
                case["error"] = error
            cases.append(case)
        golden = {"name": name, "source": source, "template": template, "cases": cases}
        path = OUT / f"{name}.json"
        path.write_text(json.dumps(golden, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        ok = sum("expected" in c for c in cases)
        print(f"{name}: {ok} rendered, {len(cases) - ok} raised -> {path.relative_to(REPO)}")
        written += 1
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
