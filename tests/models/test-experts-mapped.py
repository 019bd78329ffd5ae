#!/usr/bin/env python3
"""Experts from the file mapping: a mixture-of-experts GGUF larger than the
memory limit of the process that runs it loads and generates the same tokens
as without a limit.

    test-experts-mapped.py VT_GENERATE [--keep DIR]

Writes a random-weight Qwen3-MoE GGUF of ~215 MB (8 layers, 64 experts of
which 4 run per token, Q8_0; the tokenizer of the tiny qwen3_moe fixture),
runs vt-generate greedy on it once without a limit, then in a memory cgroup
whose limit is half the file (cgroup v2 memory.max, or v1
memory.limit_in_bytes where the memory controller is v1, as on the machines
this was written on), after dropping the file's pages from the page cache.
With no --weights-memory, the loader's budget is 3/4 of what the cgroup leaves
(vt_model_params.weights_memory_bytes), so most expert tensors stay in the
mapping and are paged in and out under the limit. Checks: the same text,
experts left in the mapping, the cgroup's peak usage within its limit, and
prints the bytes a decode token reads (vt_model_info.weight_bytes_per_token).

Exit 77 (skip) where no memory cgroup can be made (not root, no writable
cgroup file system); tests/run.sh under CI=true runs it as root.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
TOKENIZER_FROM = REPO / "tests" / "models" / "tiny" / "qwen3_moe.gguf"
SHAPE = dict(n_embd=256, n_head=4, n_head_kv=2, head_dim=64, n_layer=8, n_expert=64, n_used=4, n_ff_exp=512)


def q8_0(x: np.ndarray) -> np.ndarray:
    """Rows of float32 as GGUF Q8_0 bytes (blocks of 32: f16 scale, 32 int8)."""
    blocks = x.reshape(-1, 32)
    d = np.abs(blocks).max(axis=1, keepdims=True) / 127.0
    q = np.round(blocks / np.where(d == 0, 1, d)).astype(np.int8)
    out = np.empty((blocks.shape[0], 34), dtype=np.uint8)
    out[:, :2] = d.astype(np.float16).view(np.uint8)
    out[:, 2:] = q.view(np.uint8)
    return out.reshape(*x.shape[:-1], x.shape[-1] // 32 * 34)


def write_model(path: Path) -> None:
    import gguf
    src = gguf.GGUFReader(str(TOKENIZER_FROM))
    s = SHAPE
    w = gguf.GGUFWriter(str(path), "qwen3moe")
    w.add_block_count(s["n_layer"])
    w.add_context_length(4096)
    w.add_embedding_length(s["n_embd"])
    w.add_feed_forward_length(4 * s["n_embd"])
    w.add_head_count(s["n_head"])
    w.add_head_count_kv(s["n_head_kv"])
    w.add_key_length(s["head_dim"])
    w.add_value_length(s["head_dim"])
    w.add_rope_freq_base(1e6)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_expert_count(s["n_expert"])
    w.add_expert_used_count(s["n_used"])
    w.add_expert_feed_forward_length(s["n_ff_exp"])
    for name, field in src.fields.items():
        if not name.startswith("tokenizer."):
            continue
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            sub = field.types[1]
            vals = [field.parts[i] for i in field.data]
            vals = [bytes(v).decode("utf-8") for v in vals] if sub == gguf.GGUFValueType.STRING else [v[0].item() for v in vals]
            w.add_key_value(name, vals, vtype, sub)
        elif vtype == gguf.GGUFValueType.STRING:
            w.add_key_value(name, bytes(field.parts[field.data[0]]).decode("utf-8"), vtype)
        else:
            w.add_key_value(name, field.parts[field.data[0]][0].item(), vtype)
    n_vocab = len(src.fields["tokenizer.ggml.tokens"].data)
    rng = np.random.default_rng(1234)
    E, H, HK, D = s["n_embd"], s["n_head"], s["n_head_kv"], s["head_dim"]

    def mat(rows: int, cols: int, *lead: int) -> np.ndarray:
        return (rng.standard_normal((*lead, rows, cols), dtype=np.float32) / np.sqrt(cols)).astype(np.float32)

    def add(name: str, x: np.ndarray, quantize: bool = True) -> None:
        if quantize:
            q = q8_0(x)  # raw_shape: the byte shape, which the writer converts
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(name, x)

    add("token_embd.weight", mat(n_vocab, E))
    add("output_norm.weight", np.ones(E, np.float32), False)
    add("output.weight", mat(n_vocab, E))
    for i in range(s["n_layer"]):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", np.ones(E, np.float32), False)
        add(p + "attn_q.weight", mat(H * D, E))
        add(p + "attn_k.weight", mat(HK * D, E))
        add(p + "attn_v.weight", mat(HK * D, E))
        add(p + "attn_output.weight", mat(E, H * D))
        add(p + "attn_q_norm.weight", np.ones(D, np.float32), False)
        add(p + "attn_k_norm.weight", np.ones(D, np.float32), False)
        add(p + "ffn_norm.weight", np.ones(E, np.float32), False)
        add(p + "ffn_gate_inp.weight", mat(s["n_expert"], E) * 4, False)
        add(p + "ffn_gate_exps.weight", mat(s["n_ff_exp"], E, s["n_expert"]))
        add(p + "ffn_up_exps.weight", mat(s["n_ff_exp"], E, s["n_expert"]))
        add(p + "ffn_down_exps.weight", mat(E, s["n_ff_exp"], s["n_expert"]))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


class MemoryCgroup:
    """A child memory cgroup of this process's own, v2 or v1."""

    def __init__(self, limit: int) -> None:
        self.dir = None
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if controllers == "":
                # v2: the memory controller must be enabled for this group's children.
                base = Path("/sys/fs/cgroup" + path)
                ctrl = base / "cgroup.subtree_control"
                if not ctrl.exists() or "memory" not in ctrl.read_text().split():
                    continue
                self.v2 = True
            elif "memory" in controllers.split(","):
                self.v2, base = False, Path("/sys/fs/cgroup/memory" + path)
            else:
                continue
            d = base / f"vt-experts-test-{os.getpid()}"
            try:
                d.mkdir()
                (d / ("memory.max" if self.v2 else "memory.limit_in_bytes")).write_text(str(limit))
                if self.v2 and (d / "memory.swap.max").exists():
                    (d / "memory.swap.max").write_text("0")
                self.dir = d
                return
            except OSError as e:
                print(f"test-experts-mapped: cannot make a memory cgroup under {base}: {e}", file=sys.stderr)
                try:
                    d.rmdir()
                except OSError:
                    pass

    def enter(self) -> None:  # in the child, before exec
        (self.dir / "cgroup.procs").write_text(str(os.getpid()))

    def peak(self) -> int:
        name = "memory.peak" if self.v2 else "memory.max_usage_in_bytes"
        return int((self.dir / name).read_text()) if (self.dir / name).exists() else -1

    def times_at_limit(self) -> int:
        """How often usage hit the limit (and the kernel reclaimed pages)."""
        if self.v2:
            for line in (self.dir / "memory.events").read_text().splitlines():
                if line.startswith("max "):
                    return int(line.split()[1])
            return 0
        return int((self.dir / "memory.failcnt").read_text())

    def close(self) -> None:
        if self.dir:
            self.dir.rmdir()


def generate(vt_generate: str, model: Path, cgroup: MemoryCgroup | None = None) -> tuple[bytes, str]:
    cmd = [vt_generate, "-m", str(model), "-p", "The quick brown fox", "-n", "24", "--temp", "0", "-t", "2"]
    # The text of random weights may end inside a UTF-8 sequence: compare bytes.
    r = subprocess.run(cmd, capture_output=True, timeout=600, preexec_fn=cgroup.enter if cgroup else None)
    log = r.stderr.decode("utf-8", "replace")
    if r.returncode != 0:
        sys.exit(f"test-experts-mapped: {' '.join(cmd)} failed ({r.returncode}):\n{log}")
    return r.stdout, log


def drop_page_cache(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def main() -> None:
    vt_generate = sys.argv[1]
    keep = Path(sys.argv[sys.argv.index("--keep") + 1]) if "--keep" in sys.argv else None
    with tempfile.TemporaryDirectory() as tmp:
        model = (keep or Path(tmp)) / "moe-q8_0-random.gguf"
        if not model.exists():
            write_model(model)
        size = model.stat().st_size
        limit = size // 2
        free_text, free_log = generate(vt_generate, model)
        cg = MemoryCgroup(limit)
        if not cg.dir:
            print("SKIP: no memory cgroup can be made here", file=sys.stderr)
            sys.exit(77)
        try:
            drop_page_cache(model)
            text, log = generate(vt_generate, model, cg)
            peak, at_limit = cg.peak(), cg.times_at_limit()
        finally:
            cg.close()
    line = next((l for l in log.splitlines() if "experts," in l), "")
    m = re.search(r"([\d.]+) MiB resident copies, ([\d.]+) MiB read from the file mapping \((\d+) expert tensors\); "
                  r"a decode token reads ([\d.]+) MiB", line)
    if not m:
        sys.exit(f"test-experts-mapped: no placement line in vt-generate's log:\n{log}")
    resident, mapped, n_mapped, per_token = float(m[1]), float(m[2]), int(m[3]), float(m[4])
    print(f"file {size / 2**20:.1f} MiB, cgroup limit {limit / 2**20:.1f} MiB (v{'2' if cg.v2 else '1'}), "
          f"peak {peak / 2**20:.1f} MiB, reached {at_limit} times; {resident:.1f} MiB resident copies, {mapped:.1f} MiB from the mapping "
          f"({n_mapped} expert tensors); a decode token reads {per_token:.1f} MiB")
    print(log.strip().splitlines()[-2] if len(log.strip().splitlines()) > 1 else "")
    ok = True
    if text != free_text:
        print(f"FAIL: tokens differ under the limit:\n  free:    {free_text!r}\n  limited: {text!r}")
        ok = False
    if n_mapped == 0:
        print("FAIL: no expert tensor was left in the mapping under the limit")
        ok = False
    if at_limit == 0:  # else the file fitted after all, and the test proved nothing
        print(f"FAIL: the cgroup's usage never reached its limit (peak {peak})")
        ok = False
    if not (0 < per_token < size / 2**20):
        print(f"FAIL: bytes per token {per_token} MiB not below the file's")
        ok = False
    if not ok:
        sys.exit(1)
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()
