#!/usr/bin/env python3
"""Seed corpus and dictionary for fuzz-chat-template: the real chat templates
of tests/chat/goldens (each with one of its golden contexts), and small
templates for every construct the renderer supports, hostile ones included.
An input is a template, then optionally a NUL byte and a JSON object of
context keys (see fuzz-chat-template.cpp).
Usage: chat-template-seeds.py CORPUS_DIR DICT_FILE"""
import glob
import json
import os
import sys

corpus, dict_path = sys.argv[1], sys.argv[2]
os.makedirs(corpus, exist_ok=True)
here = os.path.dirname(os.path.abspath(__file__))
seeds = []
for path in sorted(glob.glob(os.path.join(here, "..", "chat", "goldens", "*.json"))):
    with open(path, encoding="utf-8") as f:
        golden = json.load(f)
    cases = golden.get("cases") or [{}]
    ctx = cases[-1].get("context") or {}
    seeds.append(golden["template"].encode() + b"\0" + json.dumps(ctx).encode())

small = [
    "{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m['content'] }}{{ eos_token }}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}",
    "{%- for m in messages if m.role != 'system' -%}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}"
    "{{ loop.previtem is defined }}{{ loop.cycle('a', 'b') }}{%- else -%}none{%- endfor %}",
    "{% set ns = namespace(n=0, s='') %}{% for i in range(5) %}{% set ns.n = ns.n + i %}{% if i > 2 %}{% break %}"
    "{% endif %}{% endfor %}{{ ns.n }}",
    "{% macro f(a, b=2) %}{{ a ~ b }}{% if a < 3 %}{{ f(a + 1) }}{% endif %}{% endmacro %}{{ f(0) }}",
    "{% macro w() %}[{{ caller() }}]{% endmacro %}{% call w() %}inner{% endcall %}",
    "{% filter upper %}abc{% endfilter %}{% raw %}{{ x }}{% endraw %}{# comment #}",
    "{% set x %}block {{ 1 + 2 * 3 // 2 % 5 - -1 }}{% endset %}{{ x | trim | replace('b', 'B') | length }}",
    "{{ messages | tojson(indent=2) }}{{ tools | map(attribute='function') | map(attribute='name') | join(',') }}",
    "{{ 'a,b,c'.split(',') | reverse | list | first }}{{ 'Hi'.upper() + 'x'.lower() * 3 }}{{ 'abc'[::-1] }}"
    "{{ 'xyz'[1:] }}{{ [1, 2, 3][-1] }}{{ {'k': 1}.items() | list }}{{ 'a' in 'abc' }}",
    "{{ raise_exception('bad role') if messages[0].role == 'x' }}{{ strftime_now('%Y-%m-%d') }}",
    "{{ dict(a=1, b=[1, 2]) | dictsort }}{{ [3, 1, 2] | sort | unique | list }}{{ x is none }}{{ 1 is odd }}"
    "{{ 'a' is string }}{{ messages is iterable }}{{ 2.5 | round | int }}{{ '%s-%d' % ('a', 3) }}",
    "{{ '  x  ' | trim }}{{ 'hello world' | title }}{{ 'x' | center(9) }}{{ 'a\nb' | indent(2, true) }}"
    "{{ [1, 2, 3] | sum }}{{ [1, 2] | max }}{{ 'abc' | wordcount }}{{ ['a', 'b'] | batch(1) | list }}",
    "{% for k, v in {'a': 1, 'b': 2} | items %}{{ k }}={{ v }}{% endfor %}"
    "{% for a, b in [[1, 2], [3, 4]] %}{{ a * b }}{% endfor %}",
    "{% generation %}{{ messages[-1].content }}{% endgeneration %}{% if true %}{% elif false %}{% else %}{% endif %}",
    "{{ messages[0]['content'].startswith('Be') }}{{ 'abc'.replace('b', 'x', 1) }}{{ 'a-b'.rsplit('-', 1) }}"
    "{{ 'x'.ljust(4, '.') }}{{ 'Ab'.swapcase() }}{{ '{}'.format(1) }}{{ [1, 2].index(2) }}",
    # hostile: the bounds must refuse these quickly
    "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
    "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}",
    "{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}",
    "{{ 'x' * 100000000 }}{{ [1] * 100000000 }}",
    "(" * 300 + "1" + ")" * 300,
    "{{ " + "[" * 300 + "]" * 300 + " }}",
    "{% if 1 %}" * 250 + "{% endif %}" * 250,
]
seeds += [s.encode() for s in small]
seeds.append(small[0].encode() + b"\0" + json.dumps(
    {"messages": [{"role": "user", "content": None}, {"role": 5}, {}, [], "s"], "bos_token": 3,
     "add_generation_prompt": "yes", "tools": {"a": [1, {"b": None}]}}).encode())
seeds.append(small[7].encode() + b"\0" + json.dumps({"messages": [[[[[[[]]]]]]], "tools": []}).encode())
for i, s in enumerate(seeds):
    with open(os.path.join(corpus, f"seed-{i:02d}"), "wb") as f:
        f.write(s)

words = ["{{", "}}", "{%", "%}", "{#", "#}", "{%-", "-%}", "{{-", "-}}", "for", "endfor", "in", "if", "elif", "else",
         "endif", "set", "endset", "macro", "endmacro", "call", "endcall", "caller()", "filter", "endfilter", "raw",
         "endraw", "generation", "endgeneration", "break", "continue", "namespace(", "range(", "loop.index",
         "loop.cycle(", "not", "and", "or", "is", "defined", "none", "true", "false", "None", "True", "False",
         "messages", "message", "role", "content", "tools", "tool_calls", "add_generation_prompt", "bos_token",
         "eos_token", "raise_exception(", "strftime_now(", "dict(", "|tojson", "|join", "|map(", "|select(",
         "|selectattr(", "|rejectattr(", "|trim", "|upper", "|lower", "|length", "|list", "|items", "|dictsort",
         "|sort", "|unique", "|first", "|last", "|reverse", "|replace(", "|indent(", "|center(", "|format(",
         "|default(", "|int", "|float", "|string", "|safe", "|escape", "|batch(", "|slice(", "|sum", "|max",
         "|min", "|round", "|abs", "|wordcount", "|title", "|capitalize", ".split(", ".strip(", ".startswith(",
         ".endswith(", ".items()", ".keys()", ".values()", ".get(", ".append(", ".format(", ".replace(",
         "[::-1]", "~", "**", "//", "%", "==", "!=", "<=", ">="] 
with open(dict_path, "w") as f:
    for w in words:
        f.write(json.dumps(w) + "\n")
    f.write('"\\x00{"\n')  # the template / context separator (libFuzzer's escape, not JSON's)
