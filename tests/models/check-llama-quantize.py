#!/usr/bin/env python3
"""Issue 44's llama-quantize gate: GGUFs written by llama.cpp's own tools, read by vt.

The committed fixtures (make-gguf-type-fixtures.py) quantize each tensor with
ggml_quantize_chunk and an all-ones importance matrix. This checks the files
users get instead: llama-imatrix computes an importance matrix from text (this
repository's README), llama-quantize from the same llama.cpp (the
llama-cpp-python 0.3.36 sdist) writes each type with it (IQ1/IQ2 refuse to run
without one), with llama.cpp's own per-tensor mixes (an IQ2_XXS file keeps
some tensors in other types, as it does for users), from

    tiny     the 256-wide one-layer Llama of make-gguf-type-fixtures.py in F32
             (every matrix row a multiple of 256)
    smollm2  SmolLM2-135M-Instruct (vt_models' Q4_1 file, --allow-requantize:
             no F16 copy can be had here; its 576-wide rows take
             llama-quantize's fallback types, its 1536-wide ffn_down the type)

and compares vt's logits (Python API, every prompt position of one step)
with llama.cpp's (the tiny-logits driver of llama-cpp-tiny-logits.py, one
batch) on the same file (and on the source file itself, the "source" row).
The tolerance is derived from llama.cpp's own noise, as the issue asks: the
same driver against llama.cpp built for AVX2 only gives max |AVX2 - native|
on that file, and vt must be within twice that of llama.cpp (on the tiny
model at least the fixtures' 0.3: each engine quantizes its activations, about
0.15 from the exact value each), or else no farther than llama.cpp from the
exact value: numpy-reference.py's float64 forward pass over the file's
dequantized weights. That second rule is for the SmolLM2 files quantized far
below what the model tolerates (1-2 bits): a prompt position with a massive
activation loses it to both engines' activation quantization (Q8_K / Q8_0),
and there both land far from the exact value and from each other, which two
builds of llama.cpp (the same quantization) do not show. A row also fails if
an argmax differs from llama.cpp's where its top-2 margin is wider than the
tolerance and than llama.cpp's own distance from the exact value (the
near-tie rule).

    .venv/bin/python tests/models/check-llama-quantize.py [--types IQ2_XXS,...] [--models tiny,smollm2]

Needs llama.cpp's two builds of compare-llama-bench.py (`compare-llama-bench.py
--build-only`, and with `--isa avx2`; llama-quantize and llama-imatrix are
built into the first when missing; its source's gguf-py writes the F32 file)
and vt's Python package (examples/setup.sh; PYTHONPATH=build/bindings/python).
NVFP4 is not a llama-quantize type (it comes from checkpoints: the NVFP4 folder
fixtures).
"""
from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
TYPES = ["IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ4_XS", "IQ4_NL", "TQ1_0", "TQ2_0",
         "Q1_0", "Q2_0"]
TINY_TOL = 0.3
TOL_FACTOR = 2.0


def module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    sys.modules[name] = m  # dataclasses look their module up there
    spec.loader.exec_module(m)
    return m


def run(cmd: list[str], what: str) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{what} failed (rc {r.returncode}):\n{r.stderr[-2000:]}")


def build_driver(build: Path) -> Path:
    """The tiny-logits driver of llama-cpp-tiny-logits.py against a llama.cpp build's libraries."""
    if not (build / "CMakeCache.txt").is_file():
        sys.exit(f"no llama.cpp build in {build}: run examples/bench/compare-llama-bench.py --build-only "
                 "(--isa avx2 for the AVX2 one)")
    src = source_of(build)
    driver = build / "vt-tiny-logits"
    if not driver.is_file():
        tl = module("tiny_logits", HERE / "llama-cpp-tiny-logits.py")
        (build / "vt-tiny-logits.cpp").write_text(tl.DRIVER, encoding="utf-8")
        bin_dir = build / "bin"
        run(["c++", "-std=c++17", "-O2", str(build / "vt-tiny-logits.cpp"), "-o", str(driver),
             "-I", str(src / "include"), "-I", str(src / "ggml" / "include"), "-L", str(bin_dir),
             "-lllama", "-lggml", "-lggml-base", f"-Wl,-rpath,{bin_dir}"], "compiling the logits driver")
    return driver


def source_of(build: Path) -> Path:
    return next(Path(l.split("=", 1)[1].strip()) for l in (build / "CMakeCache.txt").read_text().splitlines()
                if l.startswith("CMAKE_HOME_DIRECTORY:"))


def llama_tools(build: Path) -> tuple[Path, Path]:
    """llama-quantize and llama-imatrix of a build (built there when missing); the source's gguf-py goes first
    on sys.path (PyPI gguf 0.19 lacks Q2_0)."""
    bin_dir = build / "bin"
    if not all((bin_dir / t).is_file() for t in ("llama-quantize", "llama-imatrix")):
        run(["nice", "-n", "10", "cmake", "--build", str(build), "--target", "llama-quantize", "llama-imatrix",
             "-j", "2"], "building llama-quantize and llama-imatrix")
    sys.path.insert(0, str(source_of(build) / "gguf-py"))
    return bin_dir / "llama-quantize", bin_dir / "llama-imatrix"


def tiny_source(dst: Path) -> tuple[Path, list[list[int]]]:
    """The 256-wide Llama of make-gguf-type-fixtures.py with every tensor in F32, and llama.json's prompts."""
    import gguf
    fx_mod = module("gguf_type_fixtures", HERE / "make-gguf-type-fixtures.py")
    fx = fx_mod.Fixture("llama_f32", None, None, None, None, 0.0, "")
    fx_mod.write(gguf, None, HERE / "tiny" / "llama.gguf", dst, fx)
    import json
    prompts = [p["ids"] for p in json.loads((HERE / "tiny" / "llama.json").read_text())["prompts"]]
    return dst, prompts


def smollm2_source() -> tuple[Path, list[list[int]]]:
    vm = module("vt_models", REPO / "examples" / "models" / "vt_models.py")
    path = Path(vm.model_path("smollm2"))
    import json
    g = json.loads((HERE / "goldens" / "smollm2-q4_1.json").read_text())
    return path, [p["ids"] for p in g["prompts"][:3]]


def llama_logits(driver: Path, model: Path, prompts: list[list[int]]) -> list[np.ndarray]:
    r = subprocess.run([str(driver), str(model), "2"], input="".join("0 " + " ".join(map(str, p)) + "\n"
                                                                    for p in prompts),
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"llama.cpp on {model.name} failed: {r.stderr[-1500:]}")
    rows = [np.array(l.split()[2:], dtype=np.float64) for l in r.stdout.splitlines() if l.startswith("L ")]
    out, at = [], 0
    for p in prompts:
        out.append(np.stack(rows[at:at + len(p)]))
        at += len(p)
    return out


def vt_logits(model: Path, prompts: list[list[int]]) -> list[np.ndarray]:
    import vt
    m = vt.Model(str(model))
    ctx = vt.Context(m, n_threads=2)
    out = []
    for p in prompts:
        seq = ctx.sequence(n_ctx=512, logits_all=True)
        seq.feed(p)
        seq.step()
        out.append(np.stack([np.array(seq.logits(i), dtype=np.float64) for i in range(len(p))]))
    return out


def dequantize(data: np.ndarray, qtype) -> np.ndarray:
    """gguf-py's dequantize, plus Q1_0 and Q2_0 (which gguf-py cannot decode) from ggml's definitions (blocks.h:
    Q1_0 x = bit ? d : -d, 128 a block, element j at bit j % 8 of qs[j / 8]; Q2_0 x = (q - 1) d, 64 a block, q
    bits 2 (j % 4).. of qs[j / 4]; each block an f16 d, then 16 bytes)."""
    from gguf.quants import dequantize as gguf_dequantize
    name = getattr(qtype, "name", str(qtype))
    if name not in ("Q1_0", "Q2_0"):
        return gguf_dequantize(data, qtype)
    raw = np.ascontiguousarray(data, dtype=np.uint8)
    blocks = raw.reshape(-1, 18)
    d = blocks[:, :2].copy().view(np.float16).astype(np.float64)
    qs = blocks[:, 2:]
    if name == "Q1_0":
        bits = (qs[:, :, None] >> np.arange(8, dtype=np.uint8)) & 1  # (blocks, 16, 8): element 8 i + b
        x = np.where(bits.reshape(-1, 128) == 1, 1.0, -1.0) * d
    else:
        q = (qs[:, :, None] >> (2 * np.arange(4, dtype=np.uint8))) & 3  # element 4 i + k
        x = (q.reshape(-1, 64).astype(np.float64) - 1.0) * d
    return x.reshape(*raw.shape[:-1], raw.shape[-1] // 18 * x.shape[1])


def exact_logits(model: Path, prompts: list[list[int]]) -> list[np.ndarray]:
    """numpy-reference.py's float64 forward pass over the file's dequantized weights (no activation
    quantization, no f16 KV): the value both engines approximate."""
    npr = module("numpy_reference", HERE / "numpy-reference.py")
    npr.dequantize = dequantize
    llama = npr.Llama(str(model))
    return [llama.forward(p) for p in prompts]


def max_diff(a_rows: list[np.ndarray], b_rows: list[np.ndarray]) -> float:
    return max(float(np.max(np.abs(a - b))) for a, b in zip(a_rows, b_rows))


def flips(a_rows: list[np.ndarray], b_rows: list[np.ndarray], tol: float) -> tuple[int, int]:
    """Positions whose argmaxes differ: where b's top-2 margin is wider than tol, and within it (near ties)."""
    wide = near = 0
    for a, b in zip(a_rows, b_rows):
        for va, vb in zip(a, b):
            if int(np.argmax(va)) != int(np.argmax(vb)):
                top = np.sort(vb)[-2:]
                if top[1] - top[0] > tol:
                    wide += 1
                else:
                    near += 1
    return wide, near


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--types", default=",".join(TYPES))
    ap.add_argument("--models", default="tiny,smollm2")
    ap.add_argument("--llama-build", type=Path, default=Path.home() / ".cache" / "vt" / "llama.cpp-build-noamx")
    ap.add_argument("--noise-build", type=Path, default=Path.home() / ".cache" / "vt" / "llama.cpp-build-avx2",
                    help="llama.cpp built for AVX2 only (compare-llama-bench.py --build-only --isa avx2)")
    ap.add_argument("--keep", type=Path, help="keep the quantized files in this folder")
    a = ap.parse_args()
    driver = build_driver(a.llama_build)
    quantize, imatrix = llama_tools(a.llama_build)
    noise_driver = build_driver(a.noise_build)
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        work = a.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        calib = work / "calibration.txt"
        calib.write_text((REPO / "README.md").read_text(encoding="utf-8"), encoding="utf-8")
        print("| model | type | file MB | llama.cpp AVX2 vs native | vt vs llama.cpp | tolerance | llama.cpp vs exact "
              "| vt vs exact | argmax flips | near ties |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for name in a.models.split(","):
            src, prompts = tiny_source(work / "tiny-f32.gguf") if name == "tiny" else smollm2_source()
            imat = work / f"{name}-imatrix.gguf"
            run([str(imatrix), "-m", str(src), "-f", str(calib), "-o", str(imat), "-c", "64", "--chunks", "16",
                 "-t", "2"], f"llama-imatrix on {name}")
            for t in ["source"] + a.types.split(","):
                out = work / f"{name}-{t}.gguf"
                if t == "source":
                    out = src
                else:
                    cmd = [str(quantize), "--imatrix", str(imat)] + ([] if name == "tiny" else ["--allow-requantize"])
                    r = subprocess.run(cmd + [str(src), str(out), t, "2"], capture_output=True, text=True)
                    if r.returncode != 0 and "no tensor type fallback" in r.stderr:
                        # llama.cpp's own limit (Q1_0 on SmolLM2's 576-wide rows), not a file vt could read.
                        print(f"| {name} | {t} | - | llama-quantize: no fallback type for these rows | | | | |")
                        continue
                    if r.returncode != 0:
                        sys.exit(f"llama-quantize {name} {t} failed:\n{r.stderr[-2000:]}")
                ll = llama_logits(driver, out, prompts)
                noise = max_diff(llama_logits(noise_driver, out, prompts), ll)
                mine = vt_logits(out, prompts)
                exact = exact_logits(out, prompts)
                worst, ll_exact, vt_exact = max_diff(mine, ll), max_diff(ll, exact), max_diff(mine, exact)
                tol = max(TOL_FACTOR * noise, TINY_TOL if name == "tiny" else 0.0)
                wide, near = flips(mine, ll, max(tol, ll_exact))
                print(f"| {name} | {t} | {out.stat().st_size / 1e6:.1f} | {noise:.3f} | {worst:.3f} | {tol:.3f} | "
                      f"{ll_exact:.3f} | {vt_exact:.3f} | {wide} | {near} |", flush=True)
                if wide or (worst > tol and vt_exact > ll_exact):
                    failed.append(f"{name} {t}")
    print("(max |a - b| over every logit of every prompt position; exact: numpy-reference.py in float64 on the "
          "dequantized weights)")
    if failed:
        sys.exit("check-llama-quantize: outside the tolerance: " + ", ".join(failed))
    print("check-llama-quantize: every file within the tolerance")


if __name__ == "__main__":
    main()
