#!/usr/bin/env python3
"""Writes a seed corpus of small valid GGUF files for tests/fuzz/fuzz-gguf
into DIR (created if missing) and, if given, a libFuzzer dictionary to DICT.
Standard library only.

usage: gguf-seeds.py DIR [DICT]
"""
import os
import struct
import sys

# GGUF value type ids
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
SCALAR_FMT = {U8: '<B', I8: '<b', U16: '<H', I16: '<h', U32: '<I', I32: '<i', F32: '<f',
              BOOL: '<B', U64: '<Q', I64: '<q', F64: '<d'}
# ggml type id -> (block elements, block bytes), a subset vt supports
DTYPES = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 8: (32, 34), 12: (256, 144),
          14: (256, 210), 30: (1, 2)}


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack('<Q', len(b)) + b


def value(t, v):
    if t == STR:
        return gstr(v)
    if t == ARR:
        et, items = v
        out = struct.pack('<IQ', et, len(items))
        return out + b''.join(value(et, x) for x in items)
    return struct.pack(SCALAR_FMT[t], v)


def gguf(kvs, tensors=(), version=3, alignment=32):
    """kvs: [(key, type, value)]; tensors: [(name, ne list, ggml type)]."""
    out = b'GGUF' + struct.pack('<IQQ', version, len(tensors), len(kvs))
    for k, t, v in kvs:
        out += gstr(k) + struct.pack('<I', t) + value(t, v)
    offset, blobs = 0, []
    for name, ne, ty in tensors:
        be, bb = DTYPES[ty]
        n = 1
        for d in ne:
            n *= d
        nbytes = n // be * bb
        out += gstr(name) + struct.pack('<I', len(ne)) + b''.join(struct.pack('<Q', d) for d in ne)
        out += struct.pack('<IQ', ty, offset)
        blobs.append((offset, bytes((i * 31 + 7) & 0xff for i in range(nbytes))))
        offset += (nbytes + alignment - 1) // alignment * alignment
    if tensors:
        out += b'\0' * (-len(out) % alignment)
        data = bytearray(offset)
        for off, blob in blobs:
            data[off:off + len(blob)] = blob
        out += bytes(data)
    return out


def seeds():
    every_type = [
        ('general.architecture', STR, 'llama'), ('k.u8', U8, 200), ('k.i8', I8, -5),
        ('k.u16', U16, 65535), ('k.i16', I16, -300), ('k.u32', U32, 4000000000),
        ('k.i32', I32, -70000), ('k.f32', F32, 0.1), ('k.bool', BOOL, 1),
        ('k.u64', U64, 2**64 - 1), ('k.i64', I64, -2**63), ('k.f64', F64, -2.5),
        ('k.str', STR, 'tab\there "q"\n\x01'), ('k.arr_i32', ARR, (I32, [1, -2, 3])),
        ('k.arr_str', ARR, (STR, ['a', 'b"', ''])), ('k.arr_f32', ARR, (F32, [1.5, float('nan')])),
        ('k.arr_bool', ARR, (BOOL, [1, 0])), ('k.arr_u64', ARR, (U64, [])),
        ('general.alignment', U32, 64),
    ]
    yield 'every-type.gguf', gguf(every_type, [('tok.weight', [32, 3], 8), ('norm.weight', [5], 0),
                                               ('out.weight', [4, 2, 2], 1)], alignment=64)
    yield 'header-only-v2.gguf', gguf([], version=2)
    yield 'one-f32-v2.gguf', gguf([('general.name', STR, 'x')], [('t', [8], 0)], version=2)
    vocab = [f'tok{i}' for i in range(20)] + ['Ġhello', '<s>', '\u00e9']
    yield 'vocab.gguf', gguf([
        ('tokenizer.ggml.model', STR, 'gpt2'),
        ('tokenizer.ggml.tokens', ARR, (STR, vocab)),
        ('tokenizer.ggml.scores', ARR, (F32, [float(-i) for i in range(len(vocab))])),
        ('tokenizer.ggml.token_type', ARR, (I32, [1] * len(vocab))),
        ('tokenizer.ggml.merges', ARR, (STR, ['t o', 'to k'])),
        ('tokenizer.ggml.bos_token_id', U32, 21),
        ('tokenizer.ggml.add_bos_token', BOOL, 1),
    ])
    yield 'quant-types.gguf', gguf([('general.architecture', STR, 'llama'), ('llama.block_count', U32, 1)],
                                   [('q4_0', [32, 2], 2), ('q4_1', [64], 3), ('q8_0', [32], 8),
                                    ('q4_k', [256], 12), ('q6_k', [256], 14), ('bf16', [3, 1, 1, 2], 30)])


DICT = ['GGUF', 'general.alignment', 'general.architecture', 'tokenizer.ggml.tokens',
        '\\x03\\x00\\x00\\x00', '\\x02\\x00\\x00\\x00', '\\x09\\x00\\x00\\x00', '\\x08\\x00\\x00\\x00',
        '\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00', '\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff',
        '\\x20\\x00\\x00\\x00', '\\x40\\x00\\x00\\x00\\x00\\x00\\x00\\x00']


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, data in seeds():
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)
    if len(sys.argv) == 3:
        with open(sys.argv[2], 'w') as f:
            f.writelines(f'"{w}"\n' for w in DICT)


if __name__ == '__main__':
    main()
