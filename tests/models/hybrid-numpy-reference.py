#!/usr/bin/env python3
"""Third oracle for the tiny hybrid fixtures: a float64 numpy forward of
tests/models/tiny/<name>.gguf that reads only the GGUF (tensors and
metadata, as a vt loader would), with the gated delta rule evaluated token by
token (no chunking), compared with the transformers goldens in <name>.json.

    python3 tests/models/hybrid-numpy-reference.py [NAME ...] [--gguf-py DIR]

NAME: qwen3_5, qwen3_5_moe, qwen3_next, kimi_linear (default: all four). Needs
numpy and gguf-py (`pip install gguf`, or --gguf-py pointing at llama.cpp's
gguf-py folder). It is the executable form of the layout notes: Qwen's GGUF
norms already 1 + w, qwen35's V heads tiled (V head j reads K head j % n_k)
and qwen3next's grouped (j // r), qwen3next's fused ssm_ba split per K head,
partial NeoX rope after the q/k norms, Kimi's per-key-channel decay, MLA
without rope from the split k_b / v_b, and the routers. Prints max
|numpy - transformers| per prompt (about 1e-5: transformers' float32) and
how many of the 32 greedy tokens it predicts the same.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

TINY = Path(__file__).resolve().parent / "tiny"
NAMES = ["qwen3_5", "qwen3_5_moe", "qwen3_next", "kimi_linear"]


def silu(x):
    return x / (1 + np.exp(-x))


def sigm(x):
    return 1 / (1 + np.exp(-x))


def softplus(x):
    return np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20))))


def l2n(x, eps):
    """x / sqrt(sum(x^2) + eps) over the last axis (transformers' / FLA's l2norm)."""
    return x / np.sqrt((x * x).sum(-1, keepdims=True) + eps)


def causal_conv(x, w):
    """Depthwise causal conv, zeros before the start: x [n, C], w [C, K]; w[:, K-1] takes the current token."""
    n, C = x.shape
    K = w.shape[1]
    xp = np.concatenate([np.zeros((K - 1, C)), x])
    return np.stack([(xp[t:t + K].T * w).sum(-1) for t in range(n)])


def rope_neox(x, pos, n_rot, base):
    """NeoX rope on dims [0, n_rot) of each head (pairs i, i + n_rot/2), the rest untouched; x [n, H, hd]."""
    half = n_rot // 2
    ang = pos[:, None] * (base ** (-np.arange(half) * 2.0 / n_rot))[None]
    c, s = np.cos(ang)[:, None], np.sin(ang)[:, None]
    x = x.copy()
    x1, x2 = x[..., :half].copy(), x[..., half:n_rot].copy()
    x[..., :half] = x1 * c - x2 * s
    x[..., half:n_rot] = x2 * c + x1 * s
    return x


class Model:
    def __init__(self, path: Path):
        try:
            from gguf import GGUFReader
        except ImportError:
            sys.exit("hybrid-numpy-reference: needs gguf-py: pip install gguf, or --gguf-py DIR")
        r = GGUFReader(path)
        # numpy shape = ggml ne reversed: a HF linear [out, in] reads back as [out, in]
        self.T = {t.name: np.array(t.data, dtype=np.float64).reshape([int(x) for x in reversed(t.shape)])
                  for t in r.tensors}
        self.kv = {k: f.contents() for k, f in r.fields.items()}
        self.arch = self.kv["general.architecture"]
        self.eps = self.P("attention.layer_norm_rms_epsilon")

    def P(self, key, default=None):
        return self.kv.get(f"{self.arch}.{key}", default)

    def rms(self, x, w, eps=None):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + (self.eps if eps is None else eps)) * w

    # -- mixtures and MLPs ------------------------------------------------------------------------
    def dense(self, h, il):
        T, L = self.T, f"blk.{il}."
        return (silu(h @ T[L + "ffn_gate.weight"].T) * (h @ T[L + "ffn_up.weight"].T)) @ T[L + "ffn_down.weight"].T

    def moe(self, h, il, kimi=False):
        """Qwen: softmax, top-k, renormalise, + sigmoid(x . gate_shexp) * shared.
        Kimi: sigmoid, choose by score + bias, weights unbiased, renormalise, * scale, + shared."""
        T, L = self.T, f"blk.{il}."
        logits = h @ T[L + "ffn_gate_inp.weight"].T
        if kimi:
            s = sigm(logits)
            sel = s + T[L + "exp_probs_b.bias"]
        else:
            s = np.exp(logits - logits.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            sel = s
        k = self.P("expert_used_count")
        out = np.zeros_like(h)
        for t in range(h.shape[0]):
            idx = np.argsort(-sel[t], kind="stable")[:k]
            w = s[t, idx] / s[t, idx].sum()
            if kimi:
                w = w * self.P("expert_weights_scale")
            for e, we in zip(idx, w):
                g = T[L + "ffn_gate_exps.weight"][e] @ h[t]
                u = T[L + "ffn_up_exps.weight"][e] @ h[t]
                out[t] += we * (T[L + "ffn_down_exps.weight"][e] @ (silu(g) * u))
        sh = (silu(h @ T[L + "ffn_gate_shexp.weight"].T) * (h @ T[L + "ffn_up_shexp.weight"].T)) \
            @ T[L + "ffn_down_shexp.weight"].T
        if L + "ffn_gate_inp_shexp.weight" in T:
            sh = sh * sigm(h @ T[L + "ffn_gate_inp_shexp.weight"].T)  # [n, 1]: one gate per token
        return out + sh

    # -- Qwen3.5 / Qwen3-Next ---------------------------------------------------------------------
    def gdn(self, h, il):
        T, L = self.T, f"blk.{il}."
        nk, nv, dk = self.P("ssm.group_count"), self.P("ssm.time_step_rank"), self.P("ssm.state_size")
        dv = self.P("ssm.inner_size") // nv
        r = nv // nk
        n = h.shape[0]
        qkv = h @ T[L + "attn_qkv.weight"].T
        z = (h @ T[L + "attn_gate.weight"].T).reshape(n, nv, dv)
        if self.arch == "qwen3next":
            ba = (h @ T[L + "ssm_ba.weight"].T).reshape(n, nk, 2 * r)  # per K head [b (r) | a (r)]
            b, a = ba[:, :, :r].reshape(n, nv), ba[:, :, r:].reshape(n, nv)
            kh = lambda j: j // r  # grouped V heads
        else:
            b, a = h @ T[L + "ssm_beta.weight"].T, h @ T[L + "ssm_alpha.weight"].T
            kh = lambda j: j % nk  # the converter tiled the V heads
        y = silu(causal_conv(qkv, T[L + "ssm_conv1d.weight"]))
        q = l2n(y[:, :nk * dk].reshape(n, nk, dk), 1e-6) / np.sqrt(dk)
        k = l2n(y[:, nk * dk:2 * nk * dk].reshape(n, nk, dk), 1e-6)
        v = y[:, 2 * nk * dk:].reshape(n, nv, dv)
        beta = sigm(b)
        g = T[L + "ssm_a"] * softplus(a + T[L + "ssm_dt.bias"])  # ssm_a = -exp(A_log)
        S = np.zeros((nv, dk, dv))
        o = np.zeros((n, nv, dv))
        for t in range(n):
            for j in range(nv):
                kk = k[t, kh(j)]
                S[j] *= np.exp(g[t, j])
                S[j] += np.outer(kk, beta[t, j] * (v[t, j] - S[j].T @ kk))
                o[t, j] = S[j].T @ q[t, kh(j)]
        o = self.rms(o, T[L + "ssm_norm.weight"]) * silu(z)
        return o.reshape(n, -1) @ T[L + "ssm_out.weight"].T

    def attn(self, h, il):
        T, L = self.T, f"blk.{il}."
        nh, nkv, hd = self.P("attention.head_count"), self.P("attention.head_count_kv"), self.P("attention.key_length")
        n = h.shape[0]
        qg = (h @ T[L + "attn_q.weight"].T).reshape(n, nh, 2 * hd)  # per head [q | gate]
        q, gate = qg[..., :hd], qg[..., hd:].reshape(n, nh * hd)
        k = (h @ T[L + "attn_k.weight"].T).reshape(n, nkv, hd)
        v = (h @ T[L + "attn_v.weight"].T).reshape(n, nkv, hd)
        q, k = self.rms(q, T[L + "attn_q_norm.weight"]), self.rms(k, T[L + "attn_k_norm.weight"])
        pos = np.arange(n, dtype=np.float64)
        q = rope_neox(q, pos, self.P("rope.dimension_count"), self.P("rope.freq_base"))
        k = rope_neox(k, pos, self.P("rope.dimension_count"), self.P("rope.freq_base"))
        out = np.zeros((n, nh, hd))
        mask = np.triu(np.full((n, n), -np.inf), 1)
        for hh in range(nh):
            kv = hh // (nh // nkv)
            s = q[:, hh] @ k[:, kv].T / np.sqrt(hd) + mask
            p = np.exp(s - s.max(-1, keepdims=True))
            out[:, hh] = (p / p.sum(-1, keepdims=True)) @ v[:, kv]
        return (out.reshape(n, -1) * sigm(gate)) @ T[L + "attn_output.weight"].T

    # -- Kimi-Linear ------------------------------------------------------------------------------
    def kda(self, h, il):
        T, L = self.T, f"blk.{il}."
        H, d = self.P("attention.head_count"), self.P("kda.head_dim")
        n = h.shape[0]

        def conv(x):  # each of q, k, v has its own short conv
            return silu(causal_conv(h @ T[L + f"attn_{x}.weight"].T,
                                    T[L + f"ssm_conv1d_{x}.weight"].reshape(H * d, -1))).reshape(n, H, d)
        q = l2n(conv("q"), 1e-6) / np.sqrt(d)
        k = l2n(conv("k"), 1e-6)
        v = conv("v")
        f = (h @ T[L + "ssm_f_a.weight"].T) @ T[L + "ssm_f_b.weight"].T + T[L + "ssm_dt.bias"]
        g = T[L + "ssm_a"].reshape(1, H, 1) * softplus(f.reshape(n, H, d))  # a decay per key channel
        beta = sigm(h @ T[L + "ssm_beta.weight"].T)
        S = np.zeros((H, d, d))
        o = np.zeros((n, H, d))
        for t in range(n):
            for j in range(H):
                S[j] *= np.exp(g[t, j])[:, None]
                S[j] += np.outer(k[t, j], beta[t, j] * (v[t, j] - S[j].T @ k[t, j]))
                o[t, j] = S[j].T @ q[t, j]
        gate = ((h @ T[L + "ssm_g_a.weight"].T) @ T[L + "ssm_g_b.weight"].T).reshape(n, H, d)
        o = self.rms(o, T[L + "ssm_norm.weight"]) * sigm(gate)
        return o.reshape(n, -1) @ T[L + "attn_output.weight"].T

    def mla(self, h, il, kv_eps=1e-6):
        """MLA without rope, from the split k_b / v_b (kv_a_layernorm's eps is transformers' default 1e-6)."""
        T, L = self.T, f"blk.{il}."
        H, rank, dr = self.P("attention.head_count"), self.P("attention.kv_lora_rank"), self.P("rope.dimension_count")
        dqk, dvv = self.P("attention.key_length_mla"), self.P("attention.value_length_mla")
        n = h.shape[0]
        q = (h @ T[L + "attn_q.weight"].T).reshape(n, H, dqk)  # [q_nope | q_pe], no rotation
        ckv = h @ T[L + "attn_kv_a_mqa.weight"].T
        c, k_pe = self.rms(ckv[:, :rank], T[L + "attn_kv_a_norm.weight"], kv_eps), ckv[:, rank:]
        kb, vb = T[L + "attn_k_b.weight"], T[L + "attn_v_b.weight"]  # [H, rank, dn], [H, dv, rank]
        out = np.zeros((n, H, dvv))
        mask = np.triu(np.full((n, n), -np.inf), 1)
        for hh in range(H):
            key = np.concatenate([c @ kb[hh], k_pe], -1)
            s = q[:, hh] @ key.T / np.sqrt(dqk) + mask
            p = np.exp(s - s.max(-1, keepdims=True))
            out[:, hh] = (p / p.sum(-1, keepdims=True)) @ (c @ vb[hh].T)
        return out.reshape(n, -1) @ T[L + "attn_output.weight"].T

    def forward(self, ids):
        T = self.T
        x = T["token_embd.weight"][ids]
        for il in range(self.P("block_count")):
            L = f"blk.{il}."
            h = self.rms(x, T[L + "attn_norm.weight"])
            if self.arch == "kimi-linear":
                x = x + (self.kda(h, il) if self.P("attention.head_count_kv")[il] == 0 else self.mla(h, il))
                h = self.rms(x, T[L + "ffn_norm.weight"])
                x = x + (self.dense(h, il) if il < self.P("leading_dense_block_count") else self.moe(h, il, kimi=True))
            else:
                x = x + (self.gdn(h, il) if self.P("attention.recurrent_layers")[il] else self.attn(h, il))
                h = self.rms(x, T[L + "post_attention_norm.weight"])
                x = x + (self.moe(h, il) if L + "ffn_gate_inp.weight" in T else self.dense(h, il))
        x = self.rms(x, T["output_norm.weight"])
        return x @ T.get("output.weight", T["token_embd.weight"]).T


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", default=NAMES)
    ap.add_argument("--gguf-py", type=Path, help="llama.cpp's gguf-py folder, if gguf is not installed")
    a = ap.parse_args()
    if a.gguf_py:
        sys.path.insert(0, str(a.gguf_py))
    for name in a.names:
        m = Model(TINY / f"{name}.gguf")
        gold = json.loads((TINY / f"{name}.json").read_text(encoding="utf-8"))
        for p in gold["prompts"]:
            d = np.abs(m.forward(p["ids"]) - np.array(p["logits"])).max()
            print(f"{name}: prompt of {len(p['ids'])} tokens: max |numpy - transformers| = {d:.2e}")
        prompt = gold["prompts"][-1]["ids"]
        pred = m.forward(list(prompt) + gold["greedy"])[len(prompt) - 1:-1].argmax(-1)
        print(f"{name}: greedy agrees at {int((pred == np.array(gold['greedy'])).sum())}/{len(gold['greedy'])} steps")


if __name__ == "__main__":
    main()
