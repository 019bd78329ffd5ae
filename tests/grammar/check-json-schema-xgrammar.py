#!/usr/bin/env python3
"""Compares vt's JSON Schema -> GBNF converter with xgrammar 0.2.9.

For each schema below, the language of vt's GBNF (parsed by xgrammar's own
GBNF reader) must equal the one xgrammar builds with
Grammar.from_json_schema(schema) (any_whitespace=True, strict_mode=True):
random walks on either grammar compare the two token masks at every step
(one token per character, plus an end token), and the listed strings and
mutations of the walks must be accepted, rejected or left open alike. The
schemas vt refuses must be refused with the listed status; the script also
prints what xgrammar does with them.

Usage: check-json-schema-xgrammar.py TOOL [--seed N] [--walks N] [-k SUBSTR]
TOOL prints the GBNF of the JSON Schema in the file given as its argument,
or "ERROR <status> <message>" on stdout with exit status 2 when the schema is
refused; `TOOL --any` prints the any-JSON grammar (VT_GRAMMAR_JSON), compared
with xgrammar's builtin_json_grammar. Needs xgrammar 0.2.9 and torch; exits
77 (a skip) without them. Such a tool is a few lines around the converter:

    std::ifstream f(argv[1]);
    std::stringstream ss;
    ss << f.rdbuf();
    try {
        std::cout << (arg == "--any" ? vt::grammar::any_json_gbnf()
                                     : vt::grammar::json_schema_to_gbnf(ss.str()));
    } catch (const vt::Error &e) {
        std::cout << "ERROR " << e.status() << " " << e.what() << "\n";
        return 2;
    }
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

try:
    import xgrammar as xgr
except ImportError as e:  # pragma: no cover
    print(f"skip: {e}")
    sys.exit(77)

INVALID, UNSUPPORTED = -1, -4  # vt_status

# (schema, strings to try) -- each string is checked for equal status.
SAME = [
    ({}, ['1', '"a"', '{"a":[1,{}]}', ' 1', 'nul']),
    (True, ['1', '[]']),
    ({"type": "string"}, ['"a"', '"\\u00e9\\n"', '"a\tb"', '"\x7f"', '"\\x"', '"é😀"']),
    ({"type": "integer"}, ['0', '-0', '01', '-12', '1.0', '1e3']),
    ({"type": "number"}, ['0', '-0', '01', '-0.5', '1e3', '1E+3', '.5', '1.', '-']),
    ({"type": "boolean"}, ['true', 'false', 'True']),
    ({"type": "null"}, ['null']),
    ({"type": "object"}, ['{}', '{"a":1}', '{ "a" : [ ] , "b":{}}']),
    ({"type": "array"}, ['[]', '[1,"a",{}]', '[ ]']),
    ({"type": "array", "maxItems": 3}, ['[]', '[1]']),
    ({"type": "object", "$id": "x"}, ['{}', '{"a":1}']),
    ({"type": "object", "title": "t", "description": "d"}, ['{}', '{"a":1}']),
    ({"type": "object", "properties": {}}, ['{}', '{"a":1}']),
    ({"type": "object", "additionalProperties": False}, ['{}', '{"a":1}']),
    ({"type": "object", "additionalProperties": True}, ['{}', '{"a":1}']),
    ({"type": "object", "additionalProperties": {"type": "integer"}}, ['{"a":1,"b":2}', '{"a":"x"}']),
    ({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"},
                                       "c": {"type": "boolean"}}, "required": ["b"]},
     ['{"b":1}', '{"a":"x","b":1,"c":true}', '{"b":1,"a":"x"}', '{"a":"x"}', '{}']),
    ({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
      "required": ["a", "b"]}, ['{"a":"","b":0}', '{"b":0,"a":""}']),
    ({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}},
     ['{}', '{"b":1}', '{"a":"x"}']),
    ({"properties": {"a": {"type": "integer"}}}, ['{}', '{"a":1}', '1']),
    ({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"},
                                       "c": {"type": "boolean"}},
      "required": ["c"], "additionalProperties": True},
     ['{"c":true}', '{"c":true,"d":1}', '{"d":1,"c":true}', '{"a":"","c":false,"a":1}']),
    ({"type": "object", "properties": {"ab": {}, "ac": {}, "b": {}}, "additionalProperties": True},
     ['{"ab":1,"x":2}', '{"a":1}', '{"abc":1}', '{"x":1,"y":2}', '{"\\u0061b":1}']),
    ({"type": "object", "properties": {"a]b-^[c": {}, "a": {}}, "additionalProperties": True},
     ['{"a]b-^[c":1}', '{"a]b":1}', '{"a]b-^[cd":1}']),
    ({"type": "object", "properties": {"a": {"type": "string"}},
      "additionalProperties": {"type": "null"}}, ['{"a":"x","b":null}', '{"b":null}', '{"b":null,"a":"x"}']),
    ({"type": "object", "properties": {"é/\"": {"type": "integer"}, "a\u007f": {}}},
     ['{"é/\\"":1}', '{"a\\u007f":1}']),
    ({"type": "object", "properties": {"x": {"type": "object"}, "y": {"type": "array"}},
      "required": ["x", "y"]}, ['{"x":{"a":1},"y":[1]}']),
    ({"type": "object", "properties": {"x": {"type": "object", "title": "t"},
                                       "y": {"type": "array", "$id": "u"}}}, ['{"x":{"a":1}}', '{"y":[1]}']),
    ({"type": "array", "items": {"type": "integer"}}, ['[]', '[1,2]', '[1,"a"]']),
    ({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
     ['[]', '[1]', '[1,2,3]', '[1,2,3,4]']),
    ({"type": "array", "items": {"type": "integer"}, "minItems": 2}, ['[1]', '[1,2]']),
    ({"type": "array", "items": True, "maxItems": 2}, ['[1,"a"]', '[1,2,3]']),
    ({"type": "array", "items": {}}, ['[1,"a"]']),
    ({"type": "array", "items": False}, ['[]', '[1]']),
    ({"type": "array", "items": {"type": "string"}, "maxItems": 0}, ['[]', '["a"]']),
    ({"prefixItems": [{"type": "integer"}, {"type": "string"}]}, ['[]', '[1]', '[1,"a"]', '[1,"a",2]']),
    ({"prefixItems": [{"type": "integer"}, {"type": "string"}], "items": {"type": "boolean"}},
     ['[1,"a",true,false]', '[1,true]']),
    ({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
      "items": {"type": "boolean"}, "minItems": 1, "maxItems": 4}, ['[]', '[1]', '[1,"a",true,true]', '[1,"a",true,true,true]']),
    ({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}, {"type": "null"}],
      "minItems": 2}, ['[1]', '[1,"a"]', '[1,"a",null]']),
    ({"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "null"}, "minItems": 3},
     ['[1,null]', '[1,null,null]']),
    ({"type": "string", "minLength": 2}, ['"a"', '"ab"', '"a\\"b"', '"a\tb"', '"\x01\x02"']),
    ({"type": "string", "maxLength": 3}, ['""', '"abc"', '"abcd"', '"é😀"']),
    ({"type": "string", "minLength": 2, "maxLength": 4}, ['"ab"', '"abcde"']),
    ({"type": "string", "minLength": 0}, ['""', '"\\n"']),
    ({"type": "string", "maxLength": 0}, ['""', '"a"']),
    ({"type": "string", "maxLength": 3000000000}, ['"\\n"']),
    ({"type": "integer", "minimum": -3, "maximum": 12}, ['-3', '-4', '0', '-0', '12', '13', '012', '5']),
    ({"type": "integer", "exclusiveMinimum": -3, "exclusiveMaximum": 12}, ['-3', '-2', '11', '12']),
    ({"type": "integer", "minimum": 0}, ['0', '7', '-1', '123456789012345678901']),
    ({"type": "integer", "minimum": 1}, ['0', '1', '10']),
    ({"type": "integer", "minimum": 37}, ['36', '37', '99', '100', '1000']),
    ({"type": "integer", "maximum": -37}, ['-36', '-37', '-100', '0']),
    ({"type": "integer", "maximum": 0}, ['0', '-5', '5']),
    ({"type": "integer", "maximum": 250}, ['250', '251', '-9999', '99']),
    ({"type": "integer", "minimum": -250}, ['-250', '-251', '9999']),
    ({"type": "integer", "minimum": 1000, "maximum": 1000}, ['1000', '100']),
    ({"type": "integer", "minimum": 19, "maximum": 2031}, ['19', '20', '199', '2031', '2032', '1999']),
    ({"type": "integer", "minimum": -9223372036854775808, "maximum": 9223372036854775807},
     ['-9223372036854775808', '9223372036854775807', '9223372036854775808']),
    ({"type": "integer", "minimum": 5.0, "maximum": 1e2}, ['5', '100', '101']),
    ({"const": "a/b"}, ['"a/b"', '"a\\/b"']),
    ({"const": "a\u007fb\u00e9\n\u0001"}, ['"a\\u007fbé\\n\\u0001"']),
    ({"const": {"b": 1, "a": [1, 2.5, None, True]}}, ['{"b":1,"a":[1,2.5,null,true]}', '{"b": 1,"a":[1,2.5,null,true]}']),
    ({"const": 0.1}, ['0.1']),
    ({"const": 1e5}, ['100000', '1e5']),
    ({"const": -0.0}, ['-0', '0']),
    ({"const": 1e300}, ['1e+300']),
    ({"const": 12345678901234567890}, ['1.2345678901234567e+19']),
    ({"const": None, "type": "null"}, ['null']),
    ({"enum": ["a", 1, None, [1, "x"], {"k": "v"}, 1.5e-7, 5e-324]}, ['"a"', '1', '[1,"x"]', '{"k":"v"}', '1.5e-07']),
    ({"type": "string", "enum": ["x", "y"]}, ['"x"', '"z"']),
    ({"type": "string", "const": "x", "enum": ["x"], "title": "L"}, ['"x"', '"y"']),
    ({"const": 1.0, "enum": [1, 2]}, ['1', '1.0', '2']),
    ({"type": ["string", "null"]}, ['"a"', 'null', '1']),
    ({"type": ["integer", "string"], "minimum": 3, "minLength": 2}, ['3', '2', '"ab"', '"a"']),
    ({"type": ["object", "array"]}, ['{"a":1}', '[1]']),
    ({"type": ["object", "null"], "properties": {"a": {"type": "integer"}}, "required": ["a"]},
     ['{"a":1}', 'null', '{}']),
    ({"type": ["string", "null"], "enum": ["a", None]}, ['"a"', 'null', '"b"']),
    # Rule sharing through cache keys, seen through a $ref to {"type":"object"}
    # (after which a new {"type":"object"} is strict): c shares T's rule, made
    # before, when their keys agree (annotations dropped, top-level keys
    # sorted), not when property names, their order or const values differ.
    ({"type": "object", "properties": {
        "t": {"$ref": "#/$defs/T"}, "o": {"$ref": "#/$defs/O"},
        "c": {"properties": {"q": {"type": "object", "description": "d"}, "r": {"const": {"b": 1, "a": 2}}},
              "type": "object", "title": "c"},
        "d": {"type": "object", "properties": {"q": {"type": "object"}, "r": {"const": {"b": 1, "a": 2}},
                                               "title": {}}},
        "e": {"type": "object", "properties": {"r": {"const": {"b": 1, "a": 2}}, "q": {"type": "object"}}},
        "f": {"type": "object", "properties": {"q": {"type": "object"}, "r": {"const": {"a": 2, "b": 1}}}}},
      "$defs": {"O": {"type": "object"},
                "T": {"type": "object", "properties": {"q": {"type": "object"}, "r": {"const": {"b": 1, "a": 2}}}}}},
     ['{"c":{"q":{"z":1}}}', '{"d":{"q":{"z":1}}}', '{"e":{"q":{"z":1}}}', '{"f":{"q":{"z":1}}}']),
    ({"type": ["object", "array"], "maxItems": 3}, ['{"a":1}', '[1]', '[]', '{}']),
    ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, ['1', '"a"', 'null']),
    ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, ['1', '1.5']),
    ({"anyOf": [{"type": "object"}, {"type": "array"}]}, ['{"x":1}', '[1]']),
    ({"allOf": [{"type": "integer"}]}, ['1']),
    ({"allOf": [{"type": "object"}]}, ['{}', '{"x":1}']),
    ({"$ref": "#/definitions/A", "definitions": {"A": {"type": "integer"}}}, ['1']),
    ({"$ref": "#/$defs/a~1b", "$defs": {"a/b": {"type": "integer"}}}, ['1']),
    ({"$ref": "#/$defs/a%20b", "$defs": {"a b": {"type": "integer"}}}, ['1']),
    ({"$ref": "#/$defs/o/properties/x", "$defs": {"o": {"properties": {"x": {"type": "integer"}}}}}, ['1']),
    ({"$ref": "#/$defs/L/prefixItems/0", "$defs": {"L": {"prefixItems": [{"type": "integer"}]}}}, ['1']),
    ({"type": "object", "properties": {"a": {"$ref": "#"}}}, ['{}', '{"a":{}}', '{"a":{"a":{}}}', '{"b":1}']),
    ({"$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"},
                                                       "v": {"type": "integer"}}}}, "$ref": "#/$defs/N"},
     ['{}', '{"next":{"v":1},"v":2}']),
    ({"$defs": {"O": {"type": "object"}}, "type": "object",
      "properties": {"b": {"type": "object"}, "a": {"$ref": "#/$defs/O"}, "c": {"type": "object"}},
      "required": ["a", "b", "c"]},
     ['{"b":{"x":1},"a":{},"c":{}}', '{"b":{},"a":{"x":1},"c":{}}', '{"b":{},"a":{},"c":{"x":1}}']),
    ({"type": "array", "items": {"$ref": "#/$defs/O"}, "$defs": {"O": {"type": "object"}}}, ['[{}]', '[{"x":1}]']),
    ({"$defs": {"T": {"anyOf": [{"type": "string"},
                                {"type": "array", "items": {"$ref": "#/$defs/T"}}]}},
      "$ref": "#/$defs/T"}, ['"a"', '["a",["b",[]]]']),
    ({"type": "object", "properties": {
        "name": {"type": "string", "description": "n"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "email": {"type": "string", "format": "email"},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 3},
        "address": {"type": "object", "properties": {"city": {"type": "string"},
                                                     "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                    "required": ["city"]},
        "kind": {"enum": ["a", "b"]},
        "score": {"anyOf": [{"type": "number"}, {"type": "null"}], "default": None}},
      "required": ["name", "age"]},
     ['{"name":"x","age":3}', '{"name":"x","age":151}', '{"name":"x","age":3,"email":"a@b"}',
      '{"name":"x","age":3,"address":{"city":"c","zip":"12345"}}']),
    # A pydantic 2.14 model's schema ($defs, Optional, Literal, Tuple, Dict, formats).
    (json.loads(r'''{"$defs": {"Addr": {"properties": {"street": {"title": "Street", "type": "string"}, "city": {"description": "City name", "title": "City", "type": "string"}, "zip": {"anyOf": [{"pattern": "^\\d{5}$", "type": "string"}, {"type": "null"}], "default": null, "title": "Zip"}}, "required": ["street", "city"], "title": "Addr", "type": "object"}, "Color": {"enum": ["red", "green"], "title": "Color", "type": "string"}, "Item": {"properties": {"kind": {"const": "item", "default": "item", "title": "Kind", "type": "string"}, "name": {"maxLength": 20, "minLength": 1, "title": "Name", "type": "string"}, "qty": {"maximum": 1000, "minimum": 0, "title": "Qty", "type": "integer"}, "tags": {"default": [], "items": {"type": "string"}, "title": "Tags", "type": "array"}, "color": {"anyOf": [{"$ref": "#/$defs/Color"}, {"type": "null"}], "default": null}}, "required": ["name", "qty"], "title": "Item", "type": "object"}, "Note": {"properties": {"kind": {"const": "note", "title": "Kind", "type": "string"}, "text": {"title": "Text", "type": "string"}}, "required": ["kind", "text"], "title": "Note", "type": "object"}}, "properties": {"id": {"format": "uuid", "title": "Id", "type": "string"}, "when": {"format": "date-time", "title": "When", "type": "string"}, "day": {"format": "date", "title": "Day", "type": "string"}, "items": {"items": {"$ref": "#/$defs/Item"}, "title": "Items", "type": "array"}, "ship_to": {"$ref": "#/$defs/Addr"}, "bill_to": {"anyOf": [{"$ref": "#/$defs/Addr"}, {"type": "null"}], "default": null}, "extra": {"additionalProperties": {"type": "integer"}, "default": {}, "title": "Extra", "type": "object"}, "pair": {"maxItems": 2, "minItems": 2, "prefixItems": [{"type": "integer"}, {"type": "string"}], "title": "Pair", "type": "array"}, "entries": {"items": {"anyOf": [{"$ref": "#/$defs/Item"}, {"$ref": "#/$defs/Note"}]}, "title": "Entries", "type": "array"}, "flag": {"default": false, "title": "Flag", "type": "boolean"}, "ratio": {"title": "Ratio", "type": "number"}}, "required": ["id", "when", "day", "items", "ship_to", "pair", "ratio"], "title": "Order", "type": "object"}'''),
     ['{"id":"123e4567-e89b-12d3-a456-426614174000","when":"2024-05-01T10:00:00Z","day":"2024-05-01","items":[{"kind":"item","name":"x","qty":3,"tags":["a"],"color":"red"}],"ship_to":{"street":"s","city":"c","zip":"12345"},"extra":{"k":1},"pair":[1,"a"],"entries":[{"kind":"note","text":"t"}],"flag":true,"ratio":0.5}', '{\n "id": "123e4567-e89b-12d3-a456-426614174000",\n "when": "2024-05-01T10:00:00Z",\n "day": "2024-05-01",\n "items": [\n  {\n   "kind": "item",\n   "name": "x",\n   "qty": 3,\n   "tags": [\n    "a"\n   ],\n   "color": "red"\n  }\n ],\n "ship_to": {\n  "street": "s",\n  "city": "c",\n  "zip": "12345"\n },\n "extra": {\n  "k": 1\n },\n "pair": [\n  1,\n  "a"\n ],\n "entries": [\n  {\n   "kind": "note",\n   "text": "t"\n  }\n ],\n "flag": true,\n "ratio": 0.5\n}']),
    ({"type": "string", "format": "date"}, ['"2020-01-31"', '"2020-13-01"']),
    ({"type": "string", "format": "time"}, ['"12:00:00Z"', '"12:00:00.5+01:00"', '"12:00:00"']),
    ({"type": "string", "format": "date-time"}, ['"2020-01-01T12:00:00Z"']),
    ({"type": "string", "format": "duration"}, ['"P1D"', '"PT1H"', '"P1W"', '"P"']),
    ({"type": "string", "format": "email"}, ['"a@b"', '"\\"a\\"@b"', '"a.b@c.d"', '"a.b@cc.dd"']),
    ({"type": "string", "format": "ipv4"}, ['"1.2.3.4"', '"256.1.1.1"', '"01.1.1.1"']),
    ({"type": "string", "format": "ipv6"}, ['"::1"', '"1:2:3:4:5:6:7:8"', '"::ffff:1.2.3.4"']),
    ({"type": "string", "format": "hostname"}, ['"a.b"', '"A.b"', '"a-.b"']),
    ({"type": "string", "format": "uuid"}, ['"123e4567-e89b-12d3-a456-426614174000"']),
    ({"type": "string", "format": "uri"}, ['"http://a.b/c?d#e"', '"a:"']),
    ({"type": "string", "format": "uri-reference"}, ['""', '"a/b"', '"//x"']),
    ({"type": "string", "format": "uri-template"}, ['"a{b}"', '"http://x/{+y,z:3}"']),
    ({"type": "string", "format": "json-pointer"}, ['""', '"/a~0"', '"/\\u0001"', '"/é"', '"/\\\\"']),
    ({"type": "string", "format": "relative-json-pointer"}, ['"0"', '"1/a"', '"0#"']),
    ({"type": "string", "format": "int32"}, ['"x"']),
    ({"type": "integer", "format": "int32"}, ['1']),
    ({"type": "string", "pattern": "^[a-z]+$"}, ['"abc"', '""', '"aB"']),
    ({"type": "string", "pattern": "a.c"}, ['"abc"', '"a\\"c"', '"a"c"', '"a\nc"', '"aéc"']),
    ({"type": "string", "pattern": "^(a|\\\\)$"}, ['"a"', '"\\"']),
    ({"type": "string", "pattern": "^(a|\")$"}, ['"a"', '"""']),
    ({"type": "string", "pattern": "^a\"?$"}, ['"a"', '"a""']),
    ({"type": "string", "pattern": "a\"c"}, ['"a"c"', '"a\\"c"']),
    ({"type": "string", "pattern": "^\\t$"}, ['"\t"']),
    ({"type": "string", "pattern": "^[\\s\\S]*$"}, ['"ab"', '"a\\"b"']),
    ({"type": "string", "pattern": "^é.$"}, ['"éa"', '"é""', '"é\n"']),
    ({"type": "string", "pattern": "\\S+@\\S+"}, ['"a@b"', '"a b@c"']),
    ({"type": "string", "pattern": "^\\d{3}-\\d{4}$"}, ['"555-1234"']),
    ({"type": "string", "pattern": "[^x]\\W\\D\\w"}, ['"ab1c"', '"a-bc"']),
    ({"type": "string", "pattern": r'^[\]\-^x-z\\"]+$'}, ['"]-^xz"', r'"\"', '"""']),
    ({"type": "string", "pattern": "\\u00e9|\\x7f|\\u{1F600}"}, ['"é"', '"\x7f"', '"😀"']),
    ({"type": "string", "pattern": "\t."}, ['"\ta"', '"\t""', '"\t\\"']),
    ({"type": "string", "pattern": "\\S{128}|x"}, ['"x"', '"""', '"ax"']),
    ({"type": "string", "pattern": "(.{100}){40}|x"}, ['"x"', '"""', '"ax"']),
    ({"type": "string", "pattern": "c*[a-z]{3,128}"}, ['"ccab"', '"cab"']),
    ({"type": "string", "pattern": "\t.{200}|x"}, ['"\tax"', '"x"']),
]

# (schema, vt status) -- refused by vt; xgrammar's behaviour is printed.
REFUSED = [
    ('{"type":', INVALID),
    ('[1]', INVALID),
    (False, UNSUPPORTED),
    ({"type": "strin"}, INVALID),
    ({"type": []}, INVALID),
    ({"enum": []}, INVALID),
    ({"anyOf": []}, INVALID),
    ({"$ref": "#/$defs/Missing"}, INVALID),
    ({"$ref": "http://x/y"}, UNSUPPORTED),
    ({"$ref": "#/$defs/A", "$defs": {"A": {"$ref": "#/$defs/A"}}}, INVALID),
    ({"$ref": "#/$defs/A", "type": "string", "$defs": {"A": {"type": "integer"}}}, UNSUPPORTED),
    ({"not": {"type": "string"}}, UNSUPPORTED),
    ({"type": "string", "nullable": True}, UNSUPPORTED),
    ({"type": "integer", "multipleOf": 3}, UNSUPPORTED),
    ({"type": "number", "minimum": 0}, UNSUPPORTED),
    ({"type": "integer", "minimum": 1.5}, UNSUPPORTED),
    ({"type": "integer", "minimum": 5, "maximum": 4}, INVALID),
    ({"type": "string", "format": "date", "pattern": "^x$"}, UNSUPPORTED),
    ({"type": "string", "format": "uri", "maxLength": 2083}, UNSUPPORTED),
    ({"type": "string", "pattern": "^x+$", "maxLength": 2}, UNSUPPORTED),
    ({"type": "string", "format": "iri"}, UNSUPPORTED),
    # xgrammar falls back to the plain regex (raw quotes and controls) when its
    # json_string automaton outgrows a limit; vt refuses such sizes.
    ({"type": "string", "pattern": "(.{100}){91}|x"}, UNSUPPORTED),
    ({"type": "string", "pattern": "(\\S{100}){27}|x"}, UNSUPPORTED),
    # Past 128 repetitions xgrammar's json_string automaton takes strings the
    # pattern does not match ("ax" here); vt refuses the count.
    ({"type": "string", "pattern": "a{0,200}|x"}, UNSUPPORTED),
    ({"type": "string", "pattern": "c*[a-z]{3,129}"}, UNSUPPORTED),
    # xgrammar's json_string automaton takes these, its regex converter (and
    # vt's) does not.
    ({"type": "string", "pattern": "(?i)ab"}, UNSUPPORTED),
    ({"type": "string", "pattern": "a(?=b)b"}, UNSUPPORTED),
    ({"type": "string", "minLength": 3, "maxLength": 2}, INVALID),
    ({"type": "object", "required": ["a"]}, UNSUPPORTED),
    ({"type": "object", "properties": {"b": {}}, "required": ["a"]}, UNSUPPORTED),
    ({"required": ["a"]}, UNSUPPORTED),
    ({"minLength": 3}, UNSUPPORTED),
    ({"type": "object", "properties": {"a": {}}, "minProperties": 1}, UNSUPPORTED),
    ({"type": "object", "patternProperties": {"^a": {}}}, UNSUPPORTED),
    ({"type": "object", "properties": {"a": {}}, "unevaluatedProperties": False}, UNSUPPORTED),
    ({"type": "object", "properties": {"é": {}}, "additionalProperties": True}, UNSUPPORTED),
    ({"type": "object", "properties": {"a": False}}, UNSUPPORTED),
    ({"allOf": [{"type": "integer"}, {"minimum": 1}]}, UNSUPPORTED),
    ({"anyOf": [{"type": "integer"}], "type": "integer"}, UNSUPPORTED),
    ({"type": "array", "uniqueItems": True}, UNSUPPORTED),
    ({"type": "array", "items": [{"type": "integer"}]}, INVALID),
    ({"type": "array", "minItems": 1}, INVALID),
    ({"type": "array", "prefixItems": [{}, {}], "maxItems": 1}, UNSUPPORTED),
    ({"type": "string", "enum": ["a", 1]}, UNSUPPORTED),
    ({"const": 1, "enum": [2]}, INVALID),
]


def run_tool(tool, schema_text):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(schema_text)
        path = f.name
    try:
        p = subprocess.run([tool, path], capture_output=True, text=True)
    finally:
        os.unlink(path)
    if p.returncode == 2 and p.stdout.startswith("ERROR "):
        _, status, msg = p.stdout.split(" ", 2)
        return None, (int(status), msg.strip())
    if p.returncode != 0:
        raise RuntimeError(f"{tool} failed: {p.stderr}")
    return p.stdout, None


class Checker:
    def __init__(self, seed, walks):
        chars = [chr(c) for c in range(128)] + list("é😀中\u2028\u00a0\u0085\ufeff")
        self.chars = chars
        self.eos = len(chars)
        vocab = [c.encode() for c in chars] + [b"</s>"]
        info = xgr.TokenizerInfo(vocab, xgr.VocabType.RAW, stop_token_ids=[self.eos])
        self.compiler = xgr.GrammarCompiler(info, cache_enabled=False)
        self.rng = random.Random(seed)
        self.walks = walks
        self.weights = [0.2 if c in " \n\r\t" else 3.0 if c in '"{}[],:' else 1.0 for c in chars] + [1.0]

    def matcher(self, compiled):
        return xgr.GrammarMatcher(compiled, terminate_without_stop_token=False)

    def mask(self, m):
        bm = xgr.allocate_token_bitmask(1, self.eos + 1)
        m.fill_next_token_bitmask(bm)
        words = bm[0].tolist()
        return frozenset(t for t in range(self.eos + 1) if (words[t // 32] >> (t % 32)) & 1)

    def status(self, compiled, text):
        m = self.matcher(compiled)
        if not m.accept_string(text.encode()):
            return -1
        return 1 if self.eos in self.mask(m) else 0

    def walk(self, lead, other):
        """A random walk on `lead`; returns (prefix, difference) at the first mask mismatch."""
        a, b = self.matcher(lead), self.matcher(other)
        text = ""
        for _ in range(160):
            ma, mb = self.mask(a), self.mask(b)
            if ma != mb:
                return text, sorted((ma ^ mb))
            choices = sorted(ma)
            if not choices:
                break
            if self.eos in ma and self.rng.random() < 0.25:
                break
            t = self.rng.choices(choices, [self.weights[c] for c in choices])[0]
            if t == self.eos:
                break
            assert a.accept_token(t) and b.accept_token(t)
            text += self.chars[t]
        return text, None

    def mutations(self, s):
        out = set()
        for _ in range(6):
            if not s:
                break
            i = self.rng.randrange(len(s) + 1)
            c = self.rng.choice(self.chars[32:127] + ["é", "\n", "\t", "\x01"])
            out.add(s[:i] + c + s[i:])
            j = self.rng.randrange(len(s))
            out.add(s[:j] + s[j + 1:])
            out.add(s[:j] + c + s[j + 1:])
        return out

    def compare(self, xg, vt, samples):
        problems = []
        walked = []
        for i in range(self.walks):
            lead, other = (xg, vt) if i % 2 == 0 else (vt, xg)
            text, diff = self.walk(lead, other)
            walked.append(text)
            if diff is not None:
                problems.append(f"masks differ after {text!r}: tokens {[self.describe(t) for t in diff][:8]}")
                break
        strings = set(samples)
        for s in walked:
            strings |= self.mutations(s)
        for s in sorted(strings):
            sx, sv = self.status(xg, s), self.status(vt, s)
            if sx != sv:
                problems.append(f"{s!r}: xgrammar {sx}, vt {sv}")
        return problems

    def describe(self, t):
        return "EOS" if t == self.eos else repr(self.chars[t])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tool")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--walks", type=int, default=24)
    ap.add_argument("-k", default="", help="only schemas whose JSON contains this")
    args = ap.parse_args()
    ck = Checker(args.seed, args.walks)
    failures = 0

    # VT_GRAMMAR_JSON: xgrammar's builtin JSON grammar (an object or an array).
    if args.k in "--any":
        text = subprocess.run([args.tool, "--any"], capture_output=True, text=True, check=True).stdout
        problems = ck.compare(ck.compiler.compile_builtin_json_grammar(),
                              ck.compiler.compile_grammar(xgr.Grammar.from_ebnf(text)),
                              ['{}', '[]', '1', '"a"', ' {}', '{} ', '{"a":[1,-0,0.5e-3,"\\u00e9"]}'])
        failures += bool(problems)
        print(("FAIL" if problems else "ok  ") + " any JSON", *problems[:5], sep="\n    ")

    for schema, samples in SAME:
        text = schema if isinstance(schema, str) else json.dumps(schema)
        if args.k not in text:
            continue
        gbnf, err = run_tool(args.tool, text)
        if err:
            failures += 1
            print(f"FAIL {text}\n    vt refused: {err}")
            continue
        try:
            vt = ck.compiler.compile_grammar(xgr.Grammar.from_ebnf(gbnf))
        except Exception as e:  # noqa: BLE001 - report and go on
            failures += 1
            print(f"FAIL {text}\n    xgrammar cannot read vt's GBNF: {str(e)[:300]}\n{gbnf}")
            continue
        # vt keeps raw control characters out of length-bounded strings
        # (xgrammar lets them in: invalid JSON); patch xgrammar's class alike.
        ebnf = str(xgr.Grammar.from_json_schema(text))
        ebnf = ebnf.replace('[^\\"\\\\\\r\\n]', '[^\\"\\\\\\0-\\x1f]')
        xg = ck.compiler.compile_grammar(xgr.Grammar.from_ebnf(ebnf))
        problems = ck.compare(xg, vt, samples)
        failures += bool(problems)
        print(("FAIL " if problems else "ok   ") + text, *problems[:5], sep="\n    ")

    for schema, status in REFUSED:
        text = schema if isinstance(schema, str) else json.dumps(schema)
        if args.k not in text:
            continue
        gbnf, err = run_tool(args.tool, text)
        try:
            xgr.Grammar.from_json_schema(text)
            xg = "accepts"
        except Exception as e:  # noqa: BLE001
            xg = "errors: " + str(e).strip().splitlines()[-1][:120]
        if err is None or err[0] != status:
            failures += 1
            print(f"FAIL {text}\n    vt: {err or 'accepted'}, expected status {status}")
        else:
            print(f"ok   {text}\n    vt: {err[1][:120]}\n    xgrammar {xg}")

    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
