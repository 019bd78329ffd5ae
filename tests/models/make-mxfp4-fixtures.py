#!/usr/bin/env python3
"""MXFP4 GGUF fixtures, quantized by ggml itself, and llama.cpp's logits on them.

From the float32 GGUF conversions in tests/models/tiny/ (make-tiny-models.py):

- tests/models/tiny/quantized/llama-mxfp4.gguf: every matmul weight (2-D, but
  the token embedding) in MXFP4, what `llama-quantize --pure
  --token-embedding-type f32 llama.gguf OUT MXFP4_MOE` writes (its pure
  default type is MXFP4); test-quantize-at-load.cpp requires vt's
  quantization at load (VT_QUANT_MXFP4) of the folder to give logits equal,
  bit for bit, to vt's on this file.
- tests/models/tiny/qwen3_moe_mxfp4.gguf: only the experts (ffn_*_exps) in
  MXFP4, everything else as converted, as llama.cpp's converter writes
  gpt-oss; and tests/models/tiny/qwen3_moe_mxfp4.json, the golden
  test-tiny-models.cpp reads (tiny-qwen3_moe_mxfp4-gguf*): qwen3_moe.json's
  prompts with llama.cpp's logits on this file and its 32 greedy tokens
  (llama.cpp as the oracle: transformers has no MXFP4 kernels on a CPU).

The bytes come from ggml_quantize_chunk (libggml-base, quantize_row_mxfp4_ref);
the logits from the tiny-logits driver of tests/models/llama-cpp-tiny-logits.py
(build it by running that script once).

    /work/oracle-venv/bin/python tests/models/make-mxfp4-fixtures.py \
        --ggml-base ~/.cache/vt/llama.cpp-build-tiny/bin/libggml-base.so \
        --driver ~/.cache/vt/llama.cpp-build-tiny/tiny-logits \
        --gguf-py /work/llama-sdist/vendor/llama.cpp/gguf-py
"""
import argparse
import ctypes
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

TINY = Path(__file__).resolve().parent / "tiny"
MXFP4 = 39


def quantizer(lib_path: Path):
    lib = ctypes.CDLL(str(lib_path))
    f = lib.ggml_quantize_chunk
    f.restype = ctypes.c_size_t
    f.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                  ctypes.c_void_p]

    def q(x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x, dtype=np.float32)
        n_per_row = x.shape[-1]
        n_rows = x.size // n_per_row
        assert n_per_row % 32 == 0
        dst = np.zeros(n_rows * n_per_row // 32 * 17, dtype=np.uint8)
        got = f(MXFP4, x.ctypes.data, dst.ctypes.data, 0, n_rows, n_per_row, None)
        assert got == dst.size
        return dst.reshape(*x.shape[:-1], n_per_row // 32 * 17)
    return q


def rewrite(gguf, src: Path, dst: Path, pick, q) -> None:
    r = gguf.GGUFReader(str(src))
    arch = r.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(str(dst), arch)
    for name, field in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        vtype = field.types[0]
        sub = field.types[1] if vtype == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(name, field.contents(), vtype, sub)
    n_q = 0
    for t in r.tensors:
        data = np.array(t.data)
        shape = [int(d) for d in reversed(t.shape)]  # numpy order
        if pick(t.name, len(t.shape)) and t.tensor_type == gguf.GGMLQuantizationType.F32:
            w.add_tensor(t.name, q(data.reshape(shape)), raw_dtype=gguf.GGMLQuantizationType.MXFP4)  # byte shape
            n_q += 1
        else:
            w.add_tensor(t.name, data.reshape(shape), raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{dst}: {n_q} tensors in MXFP4, {dst.stat().st_size} bytes")


# vt and llama.cpp both quantize the experts' inputs to Q8_0; float noise
# in those inputs flips roundings, which move logits by whole Q8_0 steps.
# Measured: vt vs llama.cpp on this file 0.0091 (AVX-512), 0.0091 (AVX2),
# 0.0093 (lavapipe) max |diff|; on llama.cpp's own Q8_0 tiny llama
# (quantized/llama-q8_0.gguf, the same kind of arithmetic) 0.041. Against
# that, the MXFP4 file moves logits 0.44 from transformers' float32
# model: a wrong code, scale or nibble order lands far outside.
MXFP4_TOL = 0.05
MXFP4_TOL_WHY = ("llama.cpp on MXFP4 experts with Q8_0 activations: noise measured 0.009 here, 0.041 on "
                 "the Q8_0 tiny llama; MXFP4 itself moves logits 0.44 from float32")
MXFP4_GENERATOR = ("llama.cpp 0.3.36 (tests/models/make-mxfp4-fixtures.py: tiny-logits driver, f32 KV, no flash "
                   "attention) on qwen3_moe_mxfp4.gguf, qwen3_moe.json's prompts")


def llama_cpp_golden(driver: Path, gguf_path: Path, base_golden: Path, out: Path, tol: float = MXFP4_TOL,
                     tol_why: str = MXFP4_TOL_WHY, generator: str = MXFP4_GENERATOR) -> None:
    g = json.loads(base_golden.read_text(encoding="utf-8"))
    prompts = g["prompts"]
    n_gen = len(g["greedy"])
    lines = [f"{n_gen if i == len(prompts) - 1 else 0} " + " ".join(map(str, p["ids"])) for i, p in enumerate(prompts)]
    r = subprocess.run([str(driver), str(gguf_path), "2"], input="\n".join(lines) + "\n", capture_output=True,
                       text=True)
    if r.returncode != 0:
        sys.exit(f"llama.cpp failed on {gguf_path}: {r.stderr[-2000:]}")
    rows, greedy, margins = [], [], []
    for l in r.stdout.splitlines():
        if l.startswith("L "):
            rows.append([float(x) for x in l.split()[2:]])
        elif l.startswith("G "):
            _, tok, m = l.split()
            greedy.append(int(tok))
            margins.append(float(m))
    at = 0
    for p in prompts:
        n = len(p["ids"])
        p["logits"] = rows[at:at + n]
        at += n
    assert at == len(rows) and len(greedy) == n_gen
    g["greedy"], g["greedy_margins"] = greedy, margins
    g["tol_logit"], g["tol_logit_why"], g["generator"] = tol, tol_why, generator
    out.write_text(json.dumps(g), encoding="utf-8")
    print(f"{out}: {len(rows)} logit rows, {n_gen} greedy tokens")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ggml-base", required=True, type=Path)
    ap.add_argument("--driver", required=True, type=Path)
    ap.add_argument("--gguf-py", required=True, type=Path)
    a = ap.parse_args()
    sys.path.insert(0, str(a.gguf_py))
    import gguf  # noqa: E402
    q = quantizer(a.ggml_base)
    rewrite(gguf, TINY / "llama.gguf", TINY / "quantized" / "llama-mxfp4.gguf",
            lambda name, nd: nd == 2 and name != "token_embd.weight", q)
    moe = TINY / "qwen3_moe_mxfp4.gguf"
    rewrite(gguf, TINY / "qwen3_moe.gguf", moe, lambda name, nd: nd == 3 and "_exps." in name, q)
    llama_cpp_golden(a.driver, moe, TINY / "qwen3_moe.json", TINY / "qwen3_moe_mxfp4.json")


if __name__ == "__main__":
    main()
