"""gpt-oss from Python: the tiny fixtures (tests/models/tiny/gpt_oss, its GGUF,
and gpt_oss_mxfp4 with MXFP4 experts; make-tiny-models.py) load and generate
transformers' greedy tokens through vt.LLM; broken ones fail to load with an
error that names the tensor or key: a missing sinks tensor (GGUF and folder),
an expert bias of the wrong shape, MXFP4 halves without the config's
quant_method.
"""
import json
import struct
from pathlib import Path

import pytest

import vt

from test_hybrid import _rewrite_gguf
from tiny_files import TINY, _edit_config, _rename_safetensors, _tiny_folder


def _golden(name):
    return json.loads((TINY / f"{name}.json").read_text())


@pytest.mark.parametrize("name,source", [("gpt_oss", "gguf"), ("gpt_oss", "folder"), ("gpt_oss_mxfp4", "folder")])
def test_greedy_tokens_of_transformers(tmp_path, name, source):
    path = TINY / f"{name}.gguf" if source == "gguf" else TINY / name
    if not path.exists():
        pytest.skip(f"{path} is missing")
    g = _golden(name)
    llm = vt.LLM(str(path), n_threads=1)
    greedy = vt.SamplingParams(temperature=0, max_tokens=8, ignore_eos=True)
    out = llm.generate(prompt_token_ids=[g["prompts"][-1]["ids"]], sampling_params=greedy)[0].token_ids
    # The first 8 greedy steps' margins are far above vt's float32 noise.
    assert min(g["greedy_margins"][:8]) > 0.02
    assert list(out) == g["greedy"][:8]


def test_gguf_without_sinks(tmp_path):
    src = TINY / "gpt_oss.gguf"
    if not src.exists():
        pytest.skip("tests/models/tiny/gpt_oss.gguf is missing")
    out = tmp_path / "bad.gguf"
    _rewrite_gguf(src, out, rename={"blk.1.attn_sinks.weight": "blk.1.attn_sinkz.weight"})
    with pytest.raises(vt.VtFormatError, match=r"blk\.1\.attn_sinks\.weight"):
        vt.Model(str(out))


def test_folder_without_sinks(tmp_path):
    folder = _tiny_folder(tmp_path, "gpt_oss")
    _rename_safetensors(folder / "model.safetensors", "model.layers.0.self_attn.sinks", "model.layers.0.self_attn.sink")
    with pytest.raises(vt.VtFormatError, match=r"blk\.0\.attn_sinks\.weight"):
        vt.Model(str(folder))


def test_gguf_expert_bias_of_the_wrong_shape(tmp_path):
    np = pytest.importorskip("numpy")
    src = TINY / "gpt_oss.gguf"
    if not src.exists():
        pytest.skip("tests/models/tiny/gpt_oss.gguf is missing")
    out = tmp_path / "bad.gguf"
    # (8 experts, 16) where the experts are 32 wide.
    _rewrite_gguf(src, out, replace={"blk.1.ffn_up_exps.bias": np.zeros((8, 16), dtype=np.float32)})
    with pytest.raises(vt.VtFormatError, match=r"blk\.1\.ffn_up_exps\.bias"):
        vt.Model(str(out))


def _reshape_safetensors(path: Path, name: str, shape):
    """Gives tensor `name` another shape of the same element count (its bytes stay)."""
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    header[name]["shape"] = list(shape)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + raw[8 + n:])


def test_folder_expert_bias_of_the_wrong_shape(tmp_path):
    folder = _tiny_folder(tmp_path, "gpt_oss")
    # (16, 32) for (8 experts, 2 x 32): 16 gate/up biases of 16 where the experts are 8 of 32.
    _reshape_safetensors(folder / "model.safetensors", "model.layers.0.mlp.experts.gate_up_proj_bias", (16, 32))
    with pytest.raises(vt.VtFormatError, match=r"blk\.0\.ffn_gate_exps\.bias': dimension 0"):
        vt.Model(str(folder))
    # An odd width: gate and up cannot be told apart.
    _reshape_safetensors(folder / "model.safetensors", "model.layers.0.mlp.experts.gate_up_proj_bias", (512,))
    _reshape_safetensors(folder / "model.safetensors", "model.layers.1.mlp.experts.gate_up_proj_bias", (8, 1, 64))
    with pytest.raises(vt.VtFormatError, match=r"model\.layers\.[01]\.mlp\.experts\.gate_up_proj_bias"):
        vt.Model(str(folder))


def test_mxfp4_folder_without_quant_method(tmp_path):
    folder = _tiny_folder(tmp_path, "gpt_oss_mxfp4")
    _edit_config(folder, quantization_config=None)
    with pytest.raises(vt.VtUnsupportedError, match=r"_proj_(blocks|scales)' is U8 .*quant_method"):
        vt.Model(str(folder))
