#!/usr/bin/env python3
"""Diagnostic: an exact-arithmetic (float64, dequantized weights) forward pass
of SmolLM2 in numpy, compared with the llama.cpp goldens.

llama.cpp's CPU matmuls quantize activations (Q8_1 / Q8_0) and keep the KV
cache in f16, so its logits differ from an exact evaluation of the same
quantized weights. This script measures that gap: it is the floor under any
tolerance for "vt vs llama.cpp" (an exact engine is that far from the oracle).
With --out it also writes a golden-format JSON from the exact logits, which
the C++ test can use instead (VT_TEST_GOLDEN=PATH) to check vt against exact
arithmetic with a tight tolerance.

    .venv/bin/python tests/models/numpy-reference.py [--prompts prose,code] [--out PATH]

Needs numpy and gguf (gguf-py, installed with llama-cpp-python's deps or
`pip install gguf`). Llama architecture only (SmolLM2).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "examples" / "models"))
import vt_models  # noqa: E402

try:
    from gguf import GGUFReader
    from gguf.quants import dequantize
except ImportError:
    sys.exit("numpy-reference: needs gguf-py: pip install gguf")


class Llama:
    def __init__(self, path: str):
        r = GGUFReader(path)
        kv = {f.name: f for f in r.fields.values()}

        def scalar(key):
            f = kv[key]
            return f.parts[f.data[0]][0].item()

        self.n_layer = int(scalar("llama.block_count"))
        self.n_embd = int(scalar("llama.embedding_length"))
        self.n_head = int(scalar("llama.attention.head_count"))
        self.n_head_kv = int(scalar("llama.attention.head_count_kv"))
        self.eps = float(scalar("llama.attention.layer_norm_rms_epsilon"))
        self.rope_base = float(scalar("llama.rope.freq_base"))
        self.head_dim = self.n_embd // self.n_head
        self.w = {}
        for t in r.tensors:
            a = dequantize(t.data, t.tensor_type).astype(np.float64)
            self.w[t.name] = a.reshape([int(x) for x in reversed(t.shape)])  # (rows, cols)
        if "output.weight" not in self.w:
            self.w["output.weight"] = self.w["token_embd.weight"]  # tied

    def rms(self, x, w):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * w

    def rope(self, x, pos):
        # llama.cpp LLAMA_ROPE_TYPE_NORM: adjacent pairs (x[2i], x[2i+1]).
        d = self.head_dim
        inv = self.rope_base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
        ang = pos[:, None] * inv[None, :]                      # (T, d/2)
        c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        x0, x1 = x[..., 0::2], x[..., 1::2]                    # (T, H, d/2)
        out = np.empty_like(x)
        out[..., 0::2] = x0 * c - x1 * s
        out[..., 1::2] = x0 * s + x1 * c
        return out

    def forward(self, ids: list[int]) -> np.ndarray:
        T, H, Hk, d = len(ids), self.n_head, self.n_head_kv, self.head_dim
        pos = np.arange(T, dtype=np.float64)
        x = self.w["token_embd.weight"][ids]                   # (T, n_embd)
        mask = np.triu(np.full((T, T), -np.inf), 1)
        for i in range(self.n_layer):
            b = f"blk.{i}."
            h = self.rms(x, self.w[b + "attn_norm.weight"])
            q = (h @ self.w[b + "attn_q.weight"].T).reshape(T, H, d)
            k = (h @ self.w[b + "attn_k.weight"].T).reshape(T, Hk, d)
            v = (h @ self.w[b + "attn_v.weight"].T).reshape(T, Hk, d)
            q, k = self.rope(q, pos), self.rope(k, pos)
            rep = H // Hk
            k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
            att = np.einsum("thd,shd->hts", q, k) / np.sqrt(d) + mask
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            o = np.einsum("hts,shd->thd", att, v).reshape(T, H * d)
            x = x + o @ self.w[b + "attn_output.weight"].T
            h = self.rms(x, self.w[b + "ffn_norm.weight"])
            g = h @ self.w[b + "ffn_gate.weight"].T
            u = h @ self.w[b + "ffn_up.weight"].T
            x = x + ((g / (1 + np.exp(-g))) * u) @ self.w[b + "ffn_down.weight"].T
        x = self.rms(x, self.w["output_norm.weight"])
        return x @ self.w["output.weight"].T                   # (T, n_vocab)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--golden", default=str(REPO / "tests/models/goldens/smollm2-q4_1.json"))
    ap.add_argument("--prompts", help="comma-separated prompt names (default: all)")
    ap.add_argument("--out", help="write a golden-format JSON of the exact logits here")
    a = ap.parse_args()
    g = json.loads(Path(a.golden).read_text(encoding="utf-8"))
    model = Llama(str(vt_models.model_path(g["model"]["name"])))
    want = set(a.prompts.split(",")) if a.prompts else None
    overall = 0.0
    for p in g["prompts"]:
        if "tf" not in p or (want and p["name"] not in want):
            continue
        ids = (p["ids_special"] if p.get("eval_special") else p["ids"]) + p["greedy"]
        logits = model.forward(ids)
        tf = p["tf"]
        diffs, flips = [], 0
        exact = {"positions": tf["positions"], "top_ids": [], "top_logits": [], "margins": []}
        for k, pos in enumerate(tf["positions"]):
            row = logits[pos]
            gid, gval = tf["top_ids"][k], np.array(tf["top_logits"][k])
            diffs.append(np.abs(row[gid] - gval).max())
            if tf["margins"][k] > 0.05 and int(np.argmax(row)) != gid[0]:
                flips += 1
            order = np.argsort(-row, kind="stable")[:20]
            exact["top_ids"].append([int(i) for i in order])
            exact["top_logits"].append([round(float(v), 4) for v in row[order]])
            exact["margins"].append(round(float(row[order[0]] - row[order[1]]), 4))
        overall = max(overall, max(diffs))
        print(f"{p['name']:11s} exact vs llama.cpp: max |diff| {max(diffs):.4f}, "
              f"median {np.median(diffs):.4f}, top-1 flips (margin > 0.05) {flips}")
        p["tf"] = exact
    print(f"overall max |exact - llama.cpp| over stored top-20 logits: {overall:.4f}")
    if a.out:
        g["generator"] = "tests/models/numpy-reference.py (float64, dequantized weights)"
        g["prompts"] = [p for p in g["prompts"] if not want or p["name"] in want]
        Path(a.out).write_text(json.dumps(g, ensure_ascii=False), encoding="utf-8")
        print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
