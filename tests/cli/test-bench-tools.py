#!/usr/bin/env python3
"""The benchmark tools run and report what they measured: vt-bench (with
-d, llama-bench's --n-depth) on a tiny model, vt-flops and vt-membw.

usage: test-bench-tools.py VT_BENCH VT_FLOPS VT_MEMBW WRITE_TINY_MODEL

Plain Python 3 standard library. Speeds are not asserted (they belong to
compare-llama-bench.py), only that each number is there, positive and of the
run that was asked for.
"""
import importlib.util
import json
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from script_checks import check, exit_status  # noqa: E402


def run(args, env=None, timeout=300):
    p = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout, text=True, env=env)
    return p.returncode, p.stdout, p.stderr


def json_of(args, env=None):
    rc, out, err = run(args, env)
    try:
        return rc, json.loads(out.strip().splitlines()[-1]), err
    except (ValueError, IndexError):
        return rc, None, f"stdout {out[-500:]!r}\nstderr {err[-1500:]!r}"


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    vt_bench, vt_flops, vt_membw, write_tiny_model = sys.argv[1:]

    with tempfile.TemporaryDirectory(prefix="vt-test-bench-") as tmp:
        model = os.path.join(tmp, "tiny.gguf")
        subprocess.run([write_tiny_model, model], check=True)

        rc, obj, err = json_of([vt_bench, "-m", model, "-p", "16", "-n", "8", "-d", "24", "-t", "2", "-r", "2",
                                "--json"])
        ok = rc == 0 and obj is not None
        check("vt-bench -d --json runs", ok, err)
        if ok:
            check("vt-bench reports the depth and the tests asked for",
                  obj.get("n_depth") == 24 and obj.get("n_prompt") == 16 and obj.get("n_gen") == 8, str(obj))
            check("vt-bench gives 2 positive samples per test",
                  all(len(obj.get(k) or []) == 2 and min(obj[k]) > 0 for k in ("pp_samples", "tg_samples")),
                  str(obj))
        rc, out, err = run([vt_bench, "-m", model, "-p", "16", "-n", "8", "-d", "24", "-r", "1"])
        check("vt-bench's table labels the tests at their depth",
              rc == 0 and "pp16 @ d24" in out and "tg8 @ d24" in out, out + err)
        rc, out, err = run([vt_bench, "-m", model, "-d", "-1"])
        check("vt-bench refuses a negative depth", rc > 0 and "n-depth" in (out + err), out + err)

        rc, obj, err = json_of([vt_flops, "-t", "1", "-r", "1", "--json"])
        if rc == 2 and obj is None:
            print(f"skip vt-flops: {err.strip()}")
        else:
            check("vt-flops reports a positive peak for its ISA",
                  rc == 0 and obj is not None and obj.get("isa") in ("avx512", "avx2")
                  and obj.get("best_gflops", 0) > 0 and obj.get("threads") == 1, str(obj) + err)
            # The dot-product peaks: a positive number where the CPU has the
            # instruction, null where not (never missing).
            dot_keys = ("bf16_best_gflops", "vnni512_best_gops", "vnni256_best_gops")
            check("vt-flops reports each dot-product peak or null",
                  obj is not None and all(key in obj and (obj[key] is None or obj[key] > 0) for key in dot_keys),
                  str(obj))
            rc, capped, err = json_of([vt_flops, "-t", "1", "-r", "1", "--json"],
                                      env=dict(os.environ, VT_CPU_ISA="avx2"))
            check("VT_CPU_ISA=avx2 caps vt-flops at 256 bits",
                  rc == 0 and capped and capped.get("isa") == "avx2" and capped.get("bf16_best_gflops") is None
                  and capped.get("vnni512_best_gops") is None, str(capped) + err)

        rc, obj, err = json_of([vt_membw, "-t", "1", "-s", "32", "-r", "2", "--json"])
        check("vt-membw reports a positive bandwidth",
              rc == 0 and obj is not None and obj.get("best_gbs", 0) > 0 and len(obj.get("samples_gbs", [])) == 2,
              str(obj) + err)

    check_state_bytes()
    with tempfile.TemporaryDirectory(prefix="vt-test-bench-") as tmp:
        check_swa_moe_bytes(Path(tmp))
    return exit_status()


def check_state_bytes():
    """compare-llama-bench.py's decode roofline counts the recurrent state a
    token reads and writes; on the tiny fixtures, by hand from their shapes:
    nemotron_h_moe, 3 Mamba-2 layers of 8 heads x state 16 x head dim 16
    (f32) and a conv tail of 3 x 192 channels, read and written; lfm2, 3
    short-conv layers of a 2 x 64 tail."""
    repo = Path(__file__).resolve().parents[2]
    clb = compare_llama_bench()
    for name, want in (("nemotron_h_moe", 3 * 2 * (8 * 16 * 16 * 4 + 3 * 192 * 4)), ("lfm2", 3 * 2 * 2 * 64 * 4)):
        path = repo / "tests" / "models" / "tiny" / f"{name}.gguf"
        if not path.is_file():
            continue
        kv, ts = clb.gguf_tensors(path)
        got = clb.recurrent_state_bytes_per_token(kv, ts)
        check(f"the decode roofline counts {name}'s recurrent state", got == want, f"{got} != {want}")


def compare_llama_bench():
    repo = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("clb", repo / "examples" / "bench" / "compare-llama-bench.py")
    clb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(clb)
    return clb


def write_gguf_header(path, kvs, tensors):
    """A GGUF v3 file's header alone (no tensor data: compare-llama-bench
    reads only the header). kvs: (key, value) with value a str, an int (u32),
    a float (f32) or a list of str or of bool; tensors: (name, ggml type,
    ne)."""
    def s(x):
        b = x.encode()
        return struct.pack("<Q", len(b)) + b
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, v in kvs:
        out += s(key)
        if isinstance(v, str):
            out += struct.pack("<I", 8) + s(v)
        elif isinstance(v, int):
            out += struct.pack("<II", 4, v)
        elif isinstance(v, float):
            out += struct.pack("<If", 6, v)
        elif all(isinstance(x, bool) for x in v):
            out += struct.pack("<IIQ", 9, 7, len(v)) + bytes(int(x) for x in v)
        else:
            out += struct.pack("<IIQ", 9, 8, len(v)) + b"".join(s(x) for x in v)
    for name, ttype, ne in tensors:
        out += s(name) + struct.pack("<I", len(ne)) + struct.pack("<" + "Q" * len(ne), *ne) + struct.pack("<IQ", ttype, 0)
    path.write_bytes(out)


F32, BF16, Q8_0, MXFP4 = 0, 30, 8, 39


def check_swa_moe_bytes(tmp):
    """compare-llama-bench.py's decode roofline on issue 42's shapes, by hand,
    on headers of two full-width layers each (no tensor data needed).

    gpt-oss-20b (2 layers: sliding, full; llama.cpp's default period 2, no
    pattern key): per layer, 3 MXFP4 expert stacks of 2880 x 2880 x 32, 17
    bytes per 32 weights, 4 of 32 used: 3 x 2880 x 2880 x 4 x 17 / 32 =
    52,876,800; 3 expert biases (2880, 32) F32, 4 of 32 read: 3 x 2880 x 4
    x 4 = 138,240; the router (2880, 32) F32 whole: 368,640; attn_k BF16
    2880 x 512: 2,949,120; 64 sinks: 256. 56,333,056 a layer; x 2 =
    112,666,112, + output.weight BF16 2880 x 201088 x 2 = 1,158,266,880
    (token_embd left out: a separate output) = 1,270,932,992. At depth
    4096 + 128 / 2 = 4160 positions, the f16 K and V of 512 dims: the
    sliding layer reads its window of 128, 2 x 2 x 512 x 128 = 262,144, the
    full one 2 x 2 x 512 x 4160 = 8,519,680: 1,279,714,816.

    Gemma-4-26B-A4B (2 layers: sliding, full, from the bool pattern), Q8_0
    (34 bytes per 32): per layer the fused gate_up stack 2816 x 1408 x 128,
    8 of 128 used: 2816 x 1408 x 8 x 34 / 32 = 33,701,888; down 704 x 2816
    x 128: 16,850,944; the per-expert scale (128) F32: 8 x 4 = 32; the
    router (2816, 128) F32: 1,441,792; the dense ffn_gate 2816 x 2112:
    6,319,104; attn_k 2816 x 2048 (sliding: 8 heads of 256) 6,127,616, or
    2816 x 1024 (full: 2 of 512) 3,063,808. 64,441,376 + 61,377,568, + the
    tied token_embd 2816 x 262144 = 784,334,848 (per_layer_token_embd, a
    lookup, left out) = 910,153,792. At 4160 positions: sliding, its window
    of 1024: 2 x 2 x 2048 x 1024 = 8,388,608; full: 2 x 2 x 1024 x 4160 =
    17,039,360: 935,581,760."""
    clb = compare_llama_bench()
    gptoss, gemma4 = tmp / "gpt-oss.gguf", tmp / "gemma4.gguf"
    ts = [("token_embd.weight", BF16, (2880, 201088)), ("output.weight", BF16, (2880, 201088))]
    for il in range(2):
        p = f"blk.{il}."
        ts += [(p + f"ffn_{x}_exps.weight", MXFP4, (2880, 2880, 32)) for x in ("gate", "up", "down")]
        ts += [(p + f"ffn_{x}_exps.bias", F32, (2880, 32)) for x in ("gate", "up", "down")]
        ts += [(p + "ffn_gate_inp.weight", F32, (2880, 32)), (p + "attn_k.weight", BF16, (2880, 512)),
               (p + "attn_sinks.weight", F32, (64,))]
    write_gguf_header(gptoss, [("general.architecture", "gpt-oss"), ("gpt-oss.block_count", 2),
                               ("gpt-oss.expert_count", 32), ("gpt-oss.expert_used_count", 4),
                               ("gpt-oss.attention.sliding_window", 128),
                               ("tokenizer.ggml.tokens", ["a", "b", "<|return|>"])], ts)
    ts = [("token_embd.weight", Q8_0, (2816, 262144)), ("per_layer_token_embd.weight", Q8_0, (512, 262144))]
    for il, kv in enumerate((2048, 1024)):
        p = f"blk.{il}."
        ts += [(p + "ffn_gate_up_exps.weight", Q8_0, (2816, 1408, 128)),
               (p + "ffn_down_exps.weight", Q8_0, (704, 2816, 128)), (p + "ffn_down_exps.scale", F32, (128,)),
               (p + "ffn_gate_inp.weight", F32, (2816, 128)), (p + "ffn_gate.weight", Q8_0, (2816, 2112)),
               (p + "attn_k.weight", Q8_0, (2816, kv))]
    write_gguf_header(gemma4, [("general.architecture", "gemma4"), ("gemma4.block_count", 2),
                               ("gemma4.expert_count", 128), ("gemma4.expert_used_count", 8),
                               ("gemma4.attention.sliding_window", 1024),
                               ("gemma4.attention.sliding_window_pattern", [True, False])], ts)
    for path, want0, want_d in ((gptoss, 1_270_932_992, 1_279_714_816), (gemma4, 910_153_792, 935_581_760)):
        kv, ts = clb.gguf_tensors(path)
        args = (clb.n_expert_used(kv), 0, clb.n_expert(kv), clb.swa_window(kv))
        got0 = clb.decode_bytes_per_token(ts, 0, *args)
        got_d = clb.decode_bytes_per_token(ts, 4096 + 128 / 2, *args)
        check(f"the decode roofline counts {path.stem}'s experts, biases and scales", got0 == want0,
              f"{got0} != {want0}")
        check(f"the decode roofline caps {path.stem}'s sliding layers' KV at the window", got_d == want_d,
              f"{got_d} != {want_d}")


if __name__ == "__main__":
    sys.exit(main())
