"""Laguna and Muse Glimmer from Python (tests/models/tiny/laguna*,
muse_glimmer; make-tiny-models.py): each folder and GGUF loads and
generates, and broken ones fail to load with an error that names what is
wrong: a per-layer head list of the wrong length, a gate projection of the
wrong width (in the folder, and in a GGUF), a config whose gating disagrees
with its g_proj, dense MLP layers after sparse ones, a Muse Glimmer
layer_rope_theta that ropes a full-attention layer.
"""
import json
import struct
from pathlib import Path

import pytest

import vt

from tiny_files import TINY, _edit_config, _tiny_folder

_tiny = _tiny_folder  # a folder or a GGUF file


def _safetensors_header(path: Path):
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def _write_safetensors(path: Path, header, data: bytes):
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


# From folder and GGUF through vt.LLM: transformers' greedy tokens (the
# fixture's golden, every step's margin above 0.019).
@pytest.mark.parametrize("name", ["laguna", "laguna_elem", "muse_glimmer", "laguna.gguf", "muse_glimmer.gguf"])
def test_llm_greedy_as_transformers(tmp_path, name):
    path = _tiny(tmp_path, name)
    golden = json.loads((TINY / (name.removesuffix(".gguf") + ".json")).read_text())
    greedy = vt.SamplingParams(temperature=0, max_tokens=len(golden["greedy"]), ignore_eos=True)
    llm = vt.LLM(str(path), n_threads=1, max_num_seqs=2)
    out = llm.generate(prompt_token_ids=[golden["prompts"][-1]["ids"]], sampling_params=greedy)[0].token_ids
    assert list(out) == golden["greedy"]


def test_laguna_head_list_of_the_wrong_length(tmp_path):
    folder = _tiny(tmp_path, "laguna")
    _edit_config(folder, num_attention_heads_per_layer=[4, 8, 2])
    with pytest.raises(vt.VtFormatError, match=r"num_attention_heads_per_layer must list one value per layer \(4\), not 3"):
        vt.Model(str(folder))


def test_laguna_head_list_that_does_not_match_the_weights(tmp_path):
    folder = _tiny(tmp_path, "laguna")
    _edit_config(folder, num_attention_heads_per_layer=[4, 8, 4, 6])  # layer 2 has 2 heads
    with pytest.raises(vt.VtFormatError, match=r"blk\.2\.attn_q\.weight"):
        vt.Model(str(folder))


def test_laguna_gating_that_does_not_match_g_proj(tmp_path):
    folder = _tiny(tmp_path, "laguna")  # g_proj: one output per head
    _edit_config(folder, gating="per-element")
    with pytest.raises(vt.VtFormatError, match=r"blk\.0\.attn_gate\.weight has 4 outputs, but the config's gating is per element"):
        vt.Model(str(folder))


def test_laguna_gate_of_the_wrong_width(tmp_path):
    folder = _tiny(tmp_path, "laguna")
    st = folder / "model.safetensors"
    header, data = _safetensors_header(st)
    # layer 1's g_proj (8 heads, 8 x 64) read as 4 x 128: neither 8 nor 8 x 16 outputs.
    header["model.layers.1.self_attn.g_proj.weight"]["shape"] = [4, 128]
    _write_safetensors(st, header, data)
    with pytest.raises(vt.VtFormatError, match=r"blk\.1\.attn_gate\.weight has 4 outputs for 8 heads"):
        vt.Model(str(folder))


def test_laguna_gguf_gate_of_the_wrong_width(tmp_path):
    np = pytest.importorskip("numpy")
    gguf = pytest.importorskip("gguf")
    src = TINY / "laguna.gguf"
    if not src.exists():
        pytest.skip("tests/models/tiny/laguna.gguf is missing")
    out = tmp_path / "bad.gguf"
    reader = gguf.GGUFReader(str(src))
    writer = gguf.GGUFWriter(str(out), "laguna")
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            writer.add_key_value(name, field.contents(), vtype, sub_type=field.types[-1])
        else:
            writer.add_key_value(name, field.contents(), vtype)
    for t in reader.tensors:
        if t.name == "blk.2.attn_gate.weight":  # 2 heads: 3 outputs is neither 2 nor 32
            writer.add_tensor(t.name, np.zeros((3, 64), dtype=np.float32))
            continue
        writer.add_tensor(t.name, t.data, raw_shape=list(reversed(t.shape.tolist())), raw_dtype=t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(vt.VtFormatError, match=r"blk\.2\.attn_gate\.weight has 3 outputs for 2 heads"):
        vt.Model(str(out))


def test_laguna_dense_after_sparse(tmp_path):
    folder = _tiny(tmp_path, "laguna")
    _edit_config(folder, mlp_layer_types=["dense", "sparse", "dense", "sparse"])
    with pytest.raises(vt.VtUnsupportedError, match=r"a dense layer after a sparse one in mlp_layer_types"):
        vt.Model(str(folder))


def test_muse_glimmer_rope_on_a_full_layer(tmp_path):
    folder = _tiny(tmp_path, "muse_glimmer")
    cfg = json.loads((folder / "config.json").read_text())
    cfg["text_config"]["layer_rope_theta"] = [500000.0] * 4
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(vt.VtUnsupportedError, match=r"layer 3 is full attention with rope \(layer_rope_theta\)"):
        vt.Model(str(folder))


def test_muse_glimmer_gate_of_the_wrong_shape(tmp_path):
    folder = _tiny(tmp_path, "muse_glimmer")
    st = folder / "model.safetensors"
    header, data = _safetensors_header(st)
    header["model.language_model.layers.0.self_attn.gate_proj.weight"]["shape"] = [32, 128]
    _write_safetensors(st, header, data)
    with pytest.raises(vt.VtFormatError, match=r"blk\.0\.attn_gate\.weight"):
        vt.Model(str(folder))
