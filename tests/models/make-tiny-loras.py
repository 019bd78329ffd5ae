#!/usr/bin/env python3
"""Writes the LoRA oracle fixtures: tiny PEFT adapters with transformers'
logits (tests/models/tiny-lora/), and a random LoRA for SmolLM2-135M with
llama.cpp's logits (tests/models/goldens/smollm2-q4_1-lora.json).

Run from the repository root (re-runnable, deterministic: fixed seeds).

1. Tiny adapters (torch, transformers==5.24.0, peft==0.21.2; dev only, the
   outputs are committed):
       $PY tests/models/make-tiny-loras.py --llama-cpp DIR [--only NAME,...]
   DIR is llama.cpp's source tree (convert_lora_to_gguf.py), as for
   make-tiny-models.py. Per adapter (ADAPTERS) on the committed tiny base
   tests/models/tiny/<base>/, tests/models/tiny-lora/ gets
     <name>/    adapter_config.json + adapter_model.safetensors, PEFT's
                save_pretrained (float32; random A and B, see make_adapter)
     <name>.gguf   the same adapter through llama.cpp's convert_lora_to_gguf.py
                (--base tests/models/tiny/<base> --outtype f32)
     <name>.json   the golden, laid out like tests/models/tiny/<base>.json:
                the base's prompts and ids, the PEFT model's float32 logits
                at every position (6 decimals), 32 greedy ids from the last
                prompt (whole sequence recomputed each step) and their
                margins; plus the adapter's config and scale, the scale
                llama.cpp applies to the GGUF, and how far the adapter
                moves the logits from the base's.
   The GGUF is checked against the safetensors tensor by tensor. Two things
   a reader of both forms must know: the converter permutes the rows of
   llama's q and k lora_b into llama.cpp's rope order (as it does the base
   weights; lora_a and every other tensor are PEFT's as they are), and it
   drops use_rslora, so llama.cpp scales by alpha / r where PEFT scaled by
   alpha / sqrt(r) ("request_scale_for_peft_logits" in the golden makes up
   for it). llama.cpp with the GGUF on tiny/<base>.gguf at that scale was
   within 1.3e-3 of the PEFT logits for all five (f16 KV).

2. SmolLM2 (numpy and gguf only):
       .venv/bin/python tests/models/make-tiny-loras.py --write-smollm2-lora OUT.gguf
   writes a random rank-8 LoRA for SmolLM2-135M (examples/models/vt_models.py
   smollm2) laid out as convert_lora_to_gguf.py lays one out. Tests call this
   at test time, so nothing big is committed; the golden records the file's
   sha256.
       $LLAMAPY tests/models/make-tiny-loras.py --smollm2-goldens
   runs tests/models/make-goldens.py (llama-cpp-python 0.3.36) with that
   LoRA loaded at scale 1.0 and writes tests/models/goldens/smollm2-q4_1-lora.json:
   the same prompts and layout as smollm2-q4_1.json, plus a "lora" entry
   (the adapter, and llama.cpp's largest logit change with it). Its
   "oracle" entry says which build wrote it: a build for another
   instruction set than smollm2-q4_1.json's differs from it by the noise
   that tests/models/oracle-noise.py measures, LoRA or not.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import math
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "models" / "tiny"
OUT = REPO / "tests" / "models" / "tiny-lora"
GOLDENS = REPO / "tests" / "models" / "goldens"
N_GREEDY = 32
MIN_MARGIN = 0.05  # vt's f16 K and V move tiny-model logits by up to ~4e-3
ATTN = ["q_proj", "k_proj", "v_proj", "o_proj"]
ALL7 = ATTN + ["gate_proj", "up_proj", "down_proj"]

# name: (base, LoraConfig arguments, seed). The seeds are the first, from
# 100, 200, ..., 500, whose greedy margins all clear MIN_MARGIN with at least
# 4 distinct greedy ids (make() tries the next one otherwise, and says so):
# 90 to 900 tries for llama, 11,722 for qwen2, whose base repeats one token
# and so do most of its adapted models. The four llama adapters differ in rank,
# scale rule and targets, so a mixed batch of them tests routing per request.
ADAPTERS = {
    "llama_r4": ("llama", dict(r=4, lora_alpha=8, use_rslora=False, target_modules=ALL7), 222),
    "llama_r16_rslora": ("llama", dict(r=16, lora_alpha=16, use_rslora=True,
                                       target_modules=["q_proj", "v_proj", "up_proj", "down_proj"]), 1090),
    "llama_r8_a": ("llama", dict(r=8, lora_alpha=16, use_rslora=False, target_modules=ALL7), 389),
    "llama_r8_b": ("llama", dict(r=8, lora_alpha=16, use_rslora=False, target_modules=ALL7), 464),
    "qwen2_r8": ("qwen2", dict(r=8, lora_alpha=16, use_rslora=False, target_modules=ATTN), 12221),
}
# The tiny bases' weights have std 0.08 (make-tiny-models.py: 0.02 x 4). A
# and B get one std such that scale * B @ A has entries of std DELTA_STD,
# an eighth of the weights': the logits move by ~0.15 on average and ~1 at
# most, the greedy continuation leaves the base's, and neither A nor B is
# zero (PEFT would start B at zero). Twice that makes the greedy
# continuation one token repeated.
DELTA_STD = 0.01

# SmolLM2-135M (llama architecture): n_embd 576, 3 kv heads of 64, n_ff
# 1536, 30 layers. GGUF name: (n_in, n_out).
SMOLLM2_LAYERS = 30
SMOLLM2_TARGETS = {"attn_q": (576, 576), "attn_v": (576, 192), "ffn_up": (576, 1536), "ffn_down": (1536, 576)}
SMOLLM2_RANK = 8
SMOLLM2_ALPHA = 16.0
SMOLLM2_SEED = 2024
# Std of A and B. With llama.cpp's scale alpha / r = 2 the update's entries
# have std 2 * sqrt(8) * 0.03^2 ~ 5e-3. Tried on the prose prompt (logits
# std 6.7): 0.02 moves the logits by 0.4 on average (3 at most) and leaves
# the greedy text as it was; 0.03 by 0.7 (5), and the text changes but
# stays English; 0.04 by 1.3 (11).
SMOLLM2_STD = 0.03
SMOLLM2_GOLDEN = GOLDENS / "smollm2-q4_1-lora.json"


def peft_scale(cfg: dict) -> float:
    # PEFT: alpha / sqrt(r) with rsLoRA, alpha / r without.
    return cfg["lora_alpha"] / (math.sqrt(cfg["r"]) if cfg["use_rslora"] else cfg["r"])


# --------------------------------------------------------------------------
# Part 1: tiny PEFT adapters (torch)

def convert(llama_cpp: Path, adapter: Path, base: Path, out: Path) -> None:
    # In a child process, as make-tiny-models.py runs convert_hf_to_gguf.py;
    # paths relative to the repository so nothing about this checkout ends
    # up in the file.
    cmd = [sys.executable, str(llama_cpp / "convert_lora_to_gguf.py"), "--base", str(base.relative_to(REPO)),
           "--outtype", "f32", "--outfile", str(out.relative_to(REPO)), str(adapter.relative_to(REPO))]
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"make-tiny-loras: convert_lora_to_gguf.py failed on {adapter}:\n{r.stdout}{r.stderr}")


def check_gguf(llama_cpp: Path, name: str, base_cfg: dict, lora_cfg: dict) -> dict:
    """The GGUF holds what llama.cpp's loader wants and PEFT's A and B (B's
    rows in the converter's rope order for llama's q and k); returns its
    layout for the golden."""
    sys.path.insert(0, str(llama_cpp / "gguf-py"))
    sys.path.insert(0, str(llama_cpp))
    import gguf
    import numpy as np
    import torch
    from conversion.llama import LlamaModel
    from safetensors.numpy import load_file
    reader = gguf.GGUFReader(OUT / f"{name}.gguf")
    keys = {f.name: f.contents() for f in reader.fields.values() if not f.name.startswith("GGUF.")}
    assert keys["general.type"] == "adapter" and keys["adapter.type"] == "lora", keys
    assert keys["general.architecture"] == base_cfg["model_type"], keys
    assert keys["adapter.lora.alpha"] == lora_cfg["lora_alpha"], keys
    peft = load_file(OUT / name / "adapter_model.safetensors")
    gguf_names = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
                  "gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down"}
    expect = {}
    for pname, a in peft.items():
        parts = pname.split(".")  # base_model.model.model.layers.<i>.<mlp|self_attn>.<proj>.lora_<A|B>.weight
        layer, proj, ab = int(parts[4]), parts[6], parts[7]
        t = a
        if ab == "lora_B" and base_cfg["model_type"] == "llama" and proj in ("q_proj", "k_proj"):
            n_kv = base_cfg["num_attention_heads" if proj == "q_proj" else "num_key_value_heads"]
            t = LlamaModel.permute(torch.from_numpy(a), base_cfg["num_attention_heads"], n_kv).numpy()
        expect[f"blk.{layer}.{gguf_names[proj]}.weight.lora_{ab[-1].lower()}"] = t
    tensors = []
    for t in reader.tensors:
        assert t.tensor_type == gguf.GGMLQuantizationType.F32, t.name
        data = np.asarray(t.data).reshape([int(n) for n in reversed(t.shape)])
        want = expect.pop(t.name)
        assert data.shape == want.shape and np.array_equal(data, want), t.name
        tensors.append({"name": t.name, "ne": [int(n) for n in t.shape], "type": "F32"})
    assert not expect, f"not in the GGUF: {sorted(expect)}"
    return {"keys": keys, "tensors": tensors}


def logits_and_greedy(model, prompts: list[dict]):
    import torch
    out = []
    with torch.no_grad():
        for p in prompts:
            logits = model(input_ids=torch.tensor([p["ids"]])).logits[0].float()
            out.append(logits)
        seq = list(prompts[-1]["ids"])
        greedy, margins = [], []
        for _ in range(N_GREEDY):
            row = model(input_ids=torch.tensor([seq])).logits[0, -1].float()
            top = torch.topk(row, 2)
            greedy.append(int(top.indices[0]))
            margins.append(round(float(top.values[0] - top.values[1]), 6))
            seq.append(greedy[-1])
    return out, greedy, margins


def make_adapter(name: str, seed: int):
    """The PEFT model for ADAPTERS[name] with every A and B drawn from a
    torch generator seeded with seed (N(0, std), one std for both)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM
    base, kwargs, _ = ADAPTERS[name]
    model = AutoModelForCausalLM.from_pretrained(TINY / base, dtype=torch.float32).eval()
    cfg = LoraConfig(task_type="CAUSAL_LM", lora_dropout=0.0, bias="none", init_lora_weights=False, **kwargs)
    pm = get_peft_model(model, cfg).eval()
    # Where the adapter was made from, relative to the repository (PEFT
    # would record this checkout's absolute path).
    pm.peft_config["default"].base_model_name_or_path = f"tests/models/tiny/{base}"
    # PEFT keeps the targets as a set and saves it in hash order, which
    # changes from run to run.
    pm.peft_config["default"].target_modules = sorted(pm.peft_config["default"].target_modules)
    std = math.sqrt(DELTA_STD / (peft_scale(kwargs) * math.sqrt(kwargs["r"])))
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for n, p in pm.named_parameters():
            if ".lora_A." in n or ".lora_B." in n:
                p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float32) * std)
    return pm, std


def make(name: str, llama_cpp: Path) -> None:
    import peft
    import torch
    import transformers
    base, kwargs, seed = ADAPTERS[name]
    base_golden = json.loads((TINY / f"{base}.json").read_text(encoding="utf-8"))
    prompts = [{"text": p["text"], "ids": p["ids"]} for p in base_golden["prompts"]]
    base_logits = [torch.tensor(p["logits"]) for p in base_golden["prompts"]]
    while True:
        pm, std = make_adapter(name, seed)
        logits, greedy, margins = logits_and_greedy(pm, prompts)
        if min(margins) > MIN_MARGIN and len(set(greedy)) >= 4:
            break
        print(f"{name}: seed {seed}: min greedy margin {min(margins):.4f}, {len(set(greedy))} distinct ids; "
              f"trying {seed + 1}", file=sys.stderr)
        seed += 1

    folder = OUT / name
    shutil.rmtree(folder, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        pm.save_pretrained(tmp, safe_serialization=True)
        # Only the adapter: save_pretrained also writes a model card template.
        folder.mkdir(parents=True)
        for f in ("adapter_config.json", "adapter_model.safetensors"):
            shutil.copy(Path(tmp) / f, folder / f)
    convert(llama_cpp, folder, TINY / base, OUT / f"{name}.gguf")
    layout = check_gguf(llama_cpp, name, base_golden["config"], kwargs)

    scale = peft_scale(kwargs)
    llama_cpp_scale = kwargs["lora_alpha"] / kwargs["r"]  # llama-adapter.h: alpha / rank, rsLoRA or not
    max_diff = max(float((a - b).abs().max()) for a, b in zip(logits, base_logits))
    for p, l in zip(prompts, logits):
        p["logits"] = [[round(float(v), 6) for v in row] for row in l]
    same = [a == b for a, b in zip(greedy, base_golden["greedy"])]
    golden = {
        "format": 1, "generator": "tests/models/make-tiny-loras.py", "adapter": name, "base": base,
        "transformers": transformers.__version__, "torch": torch.__version__, "peft": peft.__version__,
        "lora": {"r": kwargs["r"], "alpha": kwargs["lora_alpha"], "use_rslora": kwargs["use_rslora"],
                 "targets": kwargs["target_modules"], "scale": scale,
                 "scale_formula": "alpha / sqrt(r)" if kwargs["use_rslora"] else "alpha / r",
                 "seed": seed, "init_std": std},
        # llama.cpp scales a GGUF LoRA by alpha / r whatever PEFT did; the
        # converter does not carry use_rslora. Loading the GGUF with a
        # per-request scale of peft_scale / (alpha / r) gives PEFT's logits.
        "gguf": {"file": f"{name}.gguf", "llama_cpp_scale": llama_cpp_scale,
                 "request_scale_for_peft_logits": scale / llama_cpp_scale, **layout},
        "n_vocab": base_golden["n_vocab"],
        "max_abs_logit_diff_vs_base": round(max_diff, 6),
        "greedy_same_as_base": sum(same), "first_greedy_diff_vs_base": same.index(False) if False in same else None,
        "prompts": prompts, "greedy": greedy, "greedy_margins": margins,
    }
    path = OUT / f"{name}.json"
    path.write_text(json.dumps(golden, separators=(",", ":")) + "\n", encoding="utf-8")
    size = sum(f.stat().st_size for f in folder.iterdir())
    print(f"{name}: seed {seed}, scale {scale:g} (llama.cpp {llama_cpp_scale:g}), folder {size} + gguf "
          f"{(OUT / f'{name}.gguf').stat().st_size} bytes, max |logit - base| {max_diff:.4f}, "
          f"min greedy margin {min(margins):.4f}, greedy ids as the base's: {sum(same)}/{N_GREEDY}",
          file=sys.stderr)


# --------------------------------------------------------------------------
# Part 2: SmolLM2's random LoRA (numpy + gguf) and its llama.cpp golden

def write_smollm2_lora(path, seed: int = SMOLLM2_SEED) -> None:
    """Writes SmolLM2-135M's random LoRA GGUF: the keys convert_lora_to_gguf.py
    writes (general.type adapter, adapter.type lora, adapter.lora.alpha),
    f32 tensors blk.<i>.<target>.weight.lora_a of ne (n_in, r) and .lora_b of
    ne (r, n_out), layer by layer. The golden's adapter is SMOLLM2_SEED's;
    other seeds give the benchmark's other adapters (serve-bench.py --loras)."""
    import gguf
    import numpy as np
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), arch="llama")
    # The converter's keys in its order (general.name: it names the
    # adapter after its folder).
    w.add_type(gguf.GGUFType.ADAPTER)
    w.add_string(gguf.Keys.Adapter.TYPE, "lora")
    w.add_name("SmolLM2-135M random LoRA")
    w.add_float32(gguf.Keys.Adapter.LORA_ALPHA, SMOLLM2_ALPHA)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    for i in range(SMOLLM2_LAYERS):
        for target, (n_in, n_out) in SMOLLM2_TARGETS.items():
            # numpy shapes are ggml's ne reversed.
            a = (rng.standard_normal((SMOLLM2_RANK, n_in)) * SMOLLM2_STD).astype(np.float32)
            b = (rng.standard_normal((n_out, SMOLLM2_RANK)) * SMOLLM2_STD).astype(np.float32)
            w.add_tensor(f"blk.{i}.{target}.weight.lora_a", a)
            w.add_tensor(f"blk.{i}.{target}.weight.lora_b", b)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def smollm2_goldens() -> None:
    """make-goldens.py's smollm2 golden with the LoRA loaded: its own main(),
    with its Llama bound to lora_path; then a "lora" entry after "model"."""
    import functools
    from importlib.metadata import version

    import numpy as np
    spec = importlib.util.spec_from_file_location("make_goldens", REPO / "tests/models/make-goldens.py")
    mg = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mg)
    plain = mg.Llama
    with tempfile.TemporaryDirectory() as tmp:
        lora = Path(tmp) / "smollm2-lora.gguf"
        write_smollm2_lora(lora)
        tmp_golden = Path(tmp) / "golden.json"
        mg.Llama = functools.partial(plain, lora_path=str(lora), lora_scale=1.0)
        argv = sys.argv
        sys.argv = ["make-goldens.py", "--name", "smollm2", "--out", str(tmp_golden)]
        try:
            mg.main()
        finally:
            sys.argv = argv

        # llama.cpp's full logits rows with and without the adapter, over
        # every prompt's eval ids and greedy continuation in one batch.
        golden = json.loads(tmp_golden.read_text(encoding="utf-8"))
        model_path = str(mg.vt_models.model_path("smollm2"))
        seqs = [p["ids_special" if p["eval_special"] else "ids"] + p["greedy"] for p in golden["prompts"]
                if "greedy" in p]
        rows = {}
        for which, cls in (("lora", mg.Llama), ("base", plain)):
            mg.Llama = cls
            rows[which] = []
            for s in seqs:
                llm = mg.new_llm(model_path)
                llm.eval(s)
                rows[which].append(np.asarray(llm.scores[: len(s)], dtype=np.float32))
                del llm
        mg.Llama = plain
        diff = max(float(np.abs(a - b).max()) for a, b in zip(rows["lora"], rows["base"]))
        base_golden = json.loads((GOLDENS / "smollm2-q4_1.json").read_text(encoding="utf-8"))
        base_greedy = {p["name"]: p.get("greedy") for p in base_golden["prompts"]}
        same = sum(a == b for p in golden["prompts"] if "greedy" in p
                   for a, b in zip(p["greedy"], base_greedy[p["name"]]))
        total = sum(len(p["greedy"]) for p in golden["prompts"] if "greedy" in p)
        entry = {
            "file": "python tests/models/make-tiny-loras.py --write-smollm2-lora OUT.gguf",
            "sha256": sha256(lora), "gguf_py": version("gguf"), "numpy": np.__version__,
            "rank": SMOLLM2_RANK, "alpha": SMOLLM2_ALPHA,
            "targets": [f"blk.*.{t}" for t in SMOLLM2_TARGETS], "seed": SMOLLM2_SEED, "std": SMOLLM2_STD,
            "lora_scale": 1.0, "llama_cpp_scale": SMOLLM2_ALPHA / SMOLLM2_RANK,
            "max_abs_logit_diff_vs_base": round(diff, 4),
            "diff_measured_on": "every position of eval_ids + greedy, each prompt in one batch",
            "greedy_same_as_base": f"{same}/{total}",
        }
        text = tmp_golden.read_text(encoding="utf-8")

    # make-goldens.py writes one line per top-level key (lists: one per
    # item); keep its layout: name this script as the generator and add the
    # lora line after the model's.
    lines = text.split("\n")
    gen = lines.index('  "generator": "tests/models/make-goldens.py",')
    lines[gen] = '  "generator": "tests/models/make-tiny-loras.py --smollm2-goldens (make-goldens.py with a LoRA)",'
    model = next(i for i, l in enumerate(lines) if l.startswith('  "model": '))
    lines.insert(model + 1, '  "lora": ' + json.dumps(entry, separators=(", ", ": ")) + ",")
    text = "\n".join(lines)
    assert json.loads(text)["lora"] == entry
    SMOLLM2_GOLDEN.write_text(text, encoding="utf-8")
    print(f"wrote {SMOLLM2_GOLDEN} ({SMOLLM2_GOLDEN.stat().st_size} bytes): max |logit - base| {diff:.3f}, "
          f"greedy ids as the base's {same}/{total}", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llama-cpp", type=Path, help="llama.cpp source tree (convert_lora_to_gguf.py)")
    ap.add_argument("--only", help="comma-separated subset of " + ",".join(ADAPTERS))
    ap.add_argument("--write-smollm2-lora", type=Path, metavar="OUT", help="write SmolLM2's LoRA GGUF and exit")
    ap.add_argument("--seed", type=int, default=SMOLLM2_SEED, help="its random seed (default: the golden's)")
    ap.add_argument("--smollm2-goldens", action="store_true", help=f"write {SMOLLM2_GOLDEN.relative_to(REPO)}")
    a = ap.parse_args()
    if a.write_smollm2_lora:
        write_smollm2_lora(a.write_smollm2_lora, a.seed)
        return
    if a.smollm2_goldens:
        smollm2_goldens()
        return
    if not a.llama_cpp:
        ap.error("--llama-cpp is required for the tiny adapters")
    for n in (a.only.split(",") if a.only else ADAPTERS):
        make(n, a.llama_cpp)


if __name__ == "__main__":
    main()
