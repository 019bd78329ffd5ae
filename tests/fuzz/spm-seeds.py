#!/usr/bin/env python3
"""Writes a seed corpus of small valid SentencePiece ModelProto files for
tests/fuzz/fuzz-spm into DIR (created if missing) and, if given, a libFuzzer
dictionary to DICT. Standard library only: the wire format is written by hand.

usage: spm-seeds.py DIR [DICT]
"""
import os
import struct
import sys


def varint(n):
    n &= (1 << 64) - 1
    out = b''
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(number, wire, payload):
    key = varint(number << 3 | wire)
    if wire == 0:
        return key + varint(payload)
    if wire == 5:
        return key + struct.pack('<f', payload)
    return key + varint(len(payload)) + payload


def piece(text, score, ptype):
    return field(1, 2, field(1, 2, text.encode()) + field(2, 5, score) + field(3, 0, ptype))


def model(pieces, model_type, byte_fallback=False, charsmap=b'', add_dummy_prefix=True,
          remove_extra_ws=True, unk_id=0):
    trainer = field(3, 0, model_type) + field(35, 0, int(byte_fallback)) + field(40, 0, unk_id) + \
        field(45, 2, b'<unk>')
    norm = field(1, 2, b'nmt_nfkc') + field(3, 0, int(add_dummy_prefix)) + field(4, 0, int(remove_extra_ws)) + \
        field(5, 0, 1)
    if charsmap:
        norm += field(2, 2, charsmap)
    return b''.join(piece(*p) for p in pieces) + field(2, 2, trainer) + field(3, 2, norm)


SPECIALS = [('<unk>', 0.0, 2), ('<s>', 0.0, 3), ('</s>', 0.0, 3)]
WORDS = [('\u2581', -1.0, 1), ('a', -2.0, 1), ('b', -3.0, 1), ('\u2581a', -1.5, 1), ('ab', -2.5, 1),
         ('\u2581ab', -0.5, 1), ('\u3042', -4.0, 1)]
BYTES = [('<0x%02X>' % b, 0.0, 6) for b in range(256)]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seeds = {
        'unigram': model(SPECIALS + WORDS, 1),
        'unigram-charsmap': model(SPECIALS + WORDS, 1, charsmap=bytes(range(64))),
        'bpe-byte-fallback': model(SPECIALS + BYTES + WORDS, 2, byte_fallback=True, remove_extra_ws=False),
        'bpe-user-defined': model(SPECIALS + WORDS + [('[DOC]', 0.0, 4), ('<x>', 0.0, 4)], 2),
        'bpe-no-prefix': model(SPECIALS + WORDS, 2, add_dummy_prefix=False),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name + '.model'), 'wb') as f:
            f.write(data)
    if len(sys.argv) > 2:
        with open(sys.argv[2], 'w') as f:
            for i, tok in enumerate([b'\x0a', b'\x12', b'\x1a', b'\x15', b'\x18', b'\x98\x02', b'\xc0\x02',
                                     b'\xe2\x96\x81', b'<unk>', b'\xff\xff\xff\xff\x0f']):
                f.write('kw%d="%s"\n' % (i, ''.join('\\x%02x' % c for c in tok)))


if __name__ == '__main__':
    main()
