"""Quantization at load from Python: vt.Model(path, quantize=...) and vt.LLM(..., quantize=...).

The bytes and logits are checked in C++ (tests/unit/test-quantize-weights.cpp,
tests/models/test-quantize-at-load.cpp); here the binding's plumbing: the
name reaches vt_model_params, the result comes back, errors are exceptions.
"""
import os
from pathlib import Path

import pytest

import vt

TINY = Path(os.environ.get("VT_SOURCE_ROOT", ".")) / "tests" / "models" / "tiny"


@pytest.fixture(scope="module")
def folder():
    p = TINY / "llama"
    if not (p / "config.json").exists():
        pytest.skip(f"{p} is missing (VT_SOURCE_ROOT is set by meson test)")
    return p


def test_model_quantized_at_load(folder):
    m = vt.Model(folder, quantize="q8_0")
    q = m.quantization
    assert q["type"] == "Q8_0"
    assert q["n_quantized"] == 7 * m.n_layer + 1  # attention, FFN, output
    assert q["n_fallback"] == 0 and q["n_kept"] == 0 and q["bytes"] > 0
    assert vt.Model(folder).quantization is None


def test_llm_generates_with_quantized_weights(folder):
    params = vt.SamplingParams(temperature=0, max_tokens=8, ignore_eos=True)
    for qt in (None, "Q8_0", "Q4_K"):
        llm = vt.LLM(str(folder), quantize=qt, kv_cache_memory="16MiB", n_ctx=64)
        assert (llm.model.quantization or {}).get("type") == qt
        out = llm.generate(["The quick brown fox"], params)[0]
        assert len(out.token_ids) == 8


def test_quantize_errors(folder):
    with pytest.raises(vt.VtUnsupportedError, match="Q4_K"):
        vt.Model(folder, quantize="Q2_K")
    with pytest.raises(ValueError):
        vt.LLM(vt.Model(folder), quantize="Q8_0")
