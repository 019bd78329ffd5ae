"""Fixtures of the vt Python tests: where models, data and tools are.

VT_TEST_MODEL      the default model (SmolLM2-135M-Instruct Q4_1); cases that
                   need it skip without it (tests/run.sh sets it).
VT_WRITE_TINY_MODEL  tests/cli/write-tiny-model: writes a tiny random-weight
                   Llama, so the binding mechanics run without a download.
VT_GENERATE        build/examples/cli/vt-generate, the reference output.
VT_SHARED_DATA     ../shared/data (llama.cpp vocabulary test vectors).
"""
import os
import subprocess
from pathlib import Path

import pytest

import vt


def _env_file(name):
    p = os.environ.get(name, "")
    return Path(p) if p and Path(p).exists() else None


@pytest.fixture(scope="session")
def model_path():
    p = _env_file("VT_TEST_MODEL")
    if p is None:
        pytest.skip("VT_TEST_MODEL is unset or missing; run tests/run.sh, which fetches the model "
                    "with examples/models/vt_models.py")
    return p


@pytest.fixture(scope="session")
def model(model_path):
    return vt.Model(model_path)


# KV pool of an LLM's engine in tests. libvt's default (a quarter of the
# memory) is only reserved, but meson test sets MALLOC_PERTURB_, which makes
# glibc write every byte of it.
TEST_KV_MEMORY = "256MiB"


@pytest.fixture(scope="session")
def llm(model):
    return vt.LLM(model, kv_cache_memory=TEST_KV_MEMORY)


def _write_tiny(tmp_path_factory, name, *args):
    writer = _env_file("VT_WRITE_TINY_MODEL")
    if writer is None:
        pytest.skip("VT_WRITE_TINY_MODEL is unset (run through meson test)")
    out = tmp_path_factory.mktemp("tiny") / name
    subprocess.run([str(writer), str(out), *args], check=True)
    return out


@pytest.fixture(scope="session")
def tiny_path(tmp_path_factory):
    return _write_tiny(tmp_path_factory, "tiny.gguf")


@pytest.fixture(scope="session")
def tiny_other_arch_path(tmp_path_factory):
    return _write_tiny(tmp_path_factory, "other-arch.gguf", "--arch", "mamba9")


@pytest.fixture(scope="session")
def tiny(tiny_path):
    return vt.Model(tiny_path)


@pytest.fixture(scope="session")
def vt_generate():
    p = _env_file("VT_GENERATE")
    if p is None:
        pytest.skip("VT_GENERATE is unset (vt-generate not built: needs CLI11)")
    return p


@pytest.fixture(scope="session")
def vocab_dir():
    root = os.environ.get("VT_SHARED_DATA") or str(Path(__file__).parents[2] / ".." / "shared" / "data")
    d = Path(root) / "tokenizers" / "llama.cpp-vocab"
    if not d.is_dir():
        pytest.skip(f"no llama.cpp vocabulary files at {d}")
    return d
