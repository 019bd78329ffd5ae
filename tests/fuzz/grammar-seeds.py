#!/usr/bin/env python3
"""Writes a seed corpus for tests/fuzz/fuzz-grammar into DIR (created if
missing) and a libFuzzer dictionary to DICT: GBNF grammars (llama.cpp's
syntax), JSON Schemas and regular expressions, each as the target reads them
(a kind byte: 0 GBNF, 1 JSON Schema, 2 any JSON, 3 regex; the source; a NUL;
bytes to match), typed here from the formats' documented shapes. Standard
library only.

usage: grammar-seeds.py DIR [DICT]
"""
import json
import os
import sys

GBNF = [
    ('root ::= "yes" | "no"', "yes"),
    ('root ::= [a-z]+ ("," [a-z]+)*', "ab,cd"),
    ('root ::= item{2,4}\nitem ::= [0-9] " "?', "1 2 3"),
    ('root ::= obj\nobj ::= "{" ws (pair ("," ws pair)*)? "}"\npair ::= str ":" ws str\n'
     'str ::= "\\"" [^"\\\\]* "\\""\nws ::= [ \\t\\n]*', '{"a": "b"}'),
    ('root ::= "\\u00e9" [\\u0100-\\u017f]* "\\x41"', "\u00e9\u0101A"),
    ('root ::= (expr "=" term "\\n")+\nexpr ::= term ([-+*/] term)*\nterm ::= [0-9]+', "1+2=3\n"),
    ('root ::= [^\\n]{0,10} "."', "abc."),
]
SCHEMAS = [
    ({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
      "required": ["name"]}, '{"name": "a", "age": 3}'),
    ({"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 3}, "[1, 2.5]"),
    ({"enum": ["red", "green", 3, None]}, '"red"'),
    ({"anyOf": [{"type": "string", "pattern": "^[a-z]{2,3}$"}, {"type": "boolean"}]}, '"ab"'),
    ({"$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}}, "$ref": "#/$defs/n"},
     '{"next": {}}'),
    ({"type": "object", "additionalProperties": {"type": "integer"}}, '{"x": 1}'),
    ({"type": "string", "format": "date-time"}, '"2026-12-07T10:00:00Z"'),
    ({"type": "array", "prefixItems": [{"const": 1}, {"type": "string", "maxLength": 4}]}, '[1, "ab"]'),
    ({"allOf": [{"type": "integer", "minimum": -5, "maximum": 500}]}, "42"),
]
REGEX = [
    (r"[a-z]+@[a-z]+\.(com|org)", "ab@cd.com"),
    (r"\d{3}-\d{4}", "555-1234"),
    (r"(ab|cd)*e?[^x]{1,3}", "abcde12"),
    (r"\p{L}+|\s+", "abc"),
    (r"[\u0400-\u04ff]+\.", "\u0430\u0431."),
]
TOKENS = ["::=", "|", "(", ")", "[", "]", "[^", "*", "+", "?", "{", "}", "root", '"', "\\n", "\\u", "\\x",
          '"type"', '"object"', '"array"', '"string"', '"integer"', '"number"', '"boolean"', '"null"',
          '"properties"', '"required"', '"items"', '"prefixItems"', '"anyOf"', '"oneOf"', '"allOf"', '"$ref"',
          '"$defs"', '"enum"', '"const"', '"pattern"', '"format"', '"minLength"', '"maxLength"', '"minimum"',
          '"maximum"', '"minItems"', '"maxItems"', '"additionalProperties"', "\\d", "\\w", "\\s", "\\p{", "(?:"]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seeds = ([(0, g, t) for g, t in GBNF] + [(1, json.dumps(s), t) for s, t in SCHEMAS] + [(2, "", '{"a": [1]}')]
             + [(3, r, t) for r, t in REGEX])
    for i, (kind, src, text) in enumerate(seeds):
        with open(os.path.join(out, f"seed-{i:02d}"), "wb") as f:
            f.write(bytes([kind]) + src.encode() + b"\0" + text.encode())
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            for t in TOKENS:
                f.write('"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"\n')


if __name__ == "__main__":
    main()
