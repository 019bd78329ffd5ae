#!/usr/bin/env python3
"""The benchmark tools run and report what they measured: vt-bench (with
-d, llama-bench's --n-depth) on a tiny model, vt-flops and vt-membw.

usage: test-bench-tools.py VT_BENCH VT_FLOPS VT_MEMBW WRITE_TINY_MODEL

Plain Python 3 standard library. Speeds are not asserted (they belong to
compare-llama-bench.py), only that each number is there, positive and of the
run that was asked for.
"""
import json
import os
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
            rc, capped, err = json_of([vt_flops, "-t", "1", "-r", "1", "--json"],
                                      env=dict(os.environ, VT_CPU_ISA="avx2"))
            check("VT_CPU_ISA=avx2 caps vt-flops at 256 bits", rc == 0 and capped and capped.get("isa") == "avx2",
                  str(capped) + err)

        rc, obj, err = json_of([vt_membw, "-t", "1", "-s", "32", "-r", "2", "--json"])
        check("vt-membw reports a positive bandwidth",
              rc == 0 and obj is not None and obj.get("best_gbs", 0) > 0 and len(obj.get("samples_gbs", [])) == 2,
              str(obj) + err)

    check_state_bytes()
    return exit_status()


def check_state_bytes():
    """compare-llama-bench.py's decode roofline counts the recurrent state a
    token reads and writes; on the tiny fixtures, by hand from their shapes:
    nemotron_h_moe, 3 Mamba-2 layers of 8 heads x state 16 x head dim 16
    (f32) and a conv tail of 3 x 192 channels, read and written; lfm2, 3
    short-conv layers of a 2 x 64 tail."""
    import importlib.util
    repo = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("clb", repo / "examples" / "bench" / "compare-llama-bench.py")
    clb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(clb)
    for name, want in (("nemotron_h_moe", 3 * 2 * (8 * 16 * 16 * 4 + 3 * 192 * 4)), ("lfm2", 3 * 2 * 2 * 64 * 4)):
        path = repo / "tests" / "models" / "tiny" / f"{name}.gguf"
        if not path.is_file():
            continue
        kv, ts = clb.gguf_tensors(path)
        got = clb.recurrent_state_bytes_per_token(kv, ts)
        check(f"the decode roofline counts {name}'s recurrent state", got == want, f"{got} != {want}")


if __name__ == "__main__":
    sys.exit(main())
