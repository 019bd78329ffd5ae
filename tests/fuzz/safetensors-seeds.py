#!/usr/bin/env python3
"""Seed corpus and dictionary for fuzz-safetensors: small valid files (one or
several tensors of each dtype, metadata, empty header) and a few broken ones.
Usage: safetensors-seeds.py CORPUS_DIR DICT_FILE"""
import json
import os
import struct
import sys


def file(header: dict, data: bytes) -> bytes:
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data


def main() -> None:
    corpus, dict_path = sys.argv[1], sys.argv[2]
    os.makedirs(corpus, exist_ok=True)
    seeds = {
        "one-f32": file({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}, bytes(24)),
        "mixed": file({"__metadata__": {"format": "pt"},
                       "a": {"dtype": "F16", "shape": [4], "data_offsets": [0, 8]},
                       "b": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [8, 16]},
                       "c": {"dtype": "F32", "shape": [1, 1, 2, 1], "data_offsets": [16, 24]}}, bytes(24)),
        "empty": file({}, b""),
        "short": b"\x10\x00\x00",
        "bad-offsets": file({"w": {"dtype": "F32", "shape": [4], "data_offsets": [8, 4]}}, bytes(16)),
    }
    for name, data in seeds.items():
        with open(os.path.join(corpus, name), "wb") as f:
            f.write(data)
    words = ['"dtype"', '"shape"', '"data_offsets"', '"__metadata__"', '"F32"', '"F16"', '"BF16"', '"I64"',
             "[", "]", "{", "}", ":", ",", "0", "18446744073709551615", "-1", "1e309"]
    with open(dict_path, "w") as f:
        for i, w in enumerate(words):
            f.write(f"kw{i}={json.dumps(w)}\n")


if __name__ == "__main__":
    main()
