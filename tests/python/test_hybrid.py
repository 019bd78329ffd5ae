"""Hybrid (linear-attention) models from Python: vt.LLM on the tiny Qwen3.5
(state slots in the stats, a follow-up prompt served from the prefix cache
with the tokens of an uncached run). Broken ones fail to load with a clear
error that names what is wrong: a Qwen3.5 folder without A_log, a config whose
linear-attention shape does not match the weights, a GGUF in the fused
layout of an older llama.cpp converter, a GGUF whose ssm.* keys disagree
with its tensors. Built from the committed tiny fixture
(tests/models/tiny/qwen3_5, make-tiny-models.py); the GGUF edits use gguf-py
(tests/run.sh installs it). LFM2 (its short conv keeps only a conv tail per
sequence) likewise: served with its state slots and a prefix hit, and a
conv weight of the wrong shape or width named in the error.
"""
from pathlib import Path

import pytest

import vt

from tiny_files import TINY, _edit_config, _rename_safetensors, _tiny_folder


@pytest.fixture
def folder(tmp_path):
    return _tiny_folder(tmp_path, "qwen3_5")


def test_folder_loads(folder):
    m = vt.Model(str(folder))
    assert m.n_layer == 4


# One fixture of each state kind: the delta rule's (qwen3_5), the conv tail
# alone (lfm2: no recurrent state beside it), Mamba-2's (nemotron_h_moe).
@pytest.mark.parametrize("name", ["qwen3_5", "lfm2", "nemotron_h_moe"])
def test_llm_generates_and_resumes_from_the_prefix_cache(name):
    src = TINY / f"{name}.gguf"
    if not src.exists():
        pytest.skip(f"tests/models/tiny/{name}.gguf is missing")
    greedy = vt.SamplingParams(temperature=0, max_tokens=12, ignore_eos=True)
    prompt = list(range(3, 60))
    llm = vt.LLM(str(src), n_threads=1, max_num_seqs=4)
    first = llm.generate(prompt_token_ids=[prompt], sampling_params=greedy)[0].token_ids
    follow_up = prompt + list(first) + [7, 8, 9]
    cached = llm.generate(prompt_token_ids=[follow_up], sampling_params=greedy)[0].token_ids
    s = llm.context.stats()
    assert s["state_slots"] == 4 and 0 < s["state_bytes"] < s["kv_cache_bytes"], s
    assert s["prefix_hit_tokens"] == (len(prompt) + len(first) - 1) // 16 * 16, s
    plain = vt.LLM(str(src), n_threads=1, max_num_seqs=4, enable_prefix_caching=False)
    assert plain.generate(prompt_token_ids=[follow_up], sampling_params=greedy)[0].token_ids == cached


def test_folder_without_a_log(folder):
    _rename_safetensors(folder / "model.safetensors", "model.layers.1.linear_attn.A_log",
                        "model.layers.1.linear_attn.A_lox")
    with pytest.raises(vt.VtFormatError, match=r"blk\.1\.ssm_a"):
        vt.Model(str(folder))


def test_config_shape_that_does_not_match_the_weights(folder):
    _edit_config(folder, linear_value_head_dim=16)  # the weights have 24
    with pytest.raises(vt.VtFormatError, match=r"tensor 'blk\.0\.attn_qkv\.weight': dimension 1"):
        vt.Model(str(folder))


def _rewrite_gguf(src: Path, dst: Path, rename=None, set_u32=None, replace=None):
    gguf = pytest.importorskip("gguf")
    reader = gguf.GGUFReader(str(src))
    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(str(dst), arch)
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        value = field.contents()
        if set_u32 and name in set_u32:
            value = set_u32[name]
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            writer.add_key_value(name, value, vtype, sub_type=field.types[-1])
        else:
            writer.add_key_value(name, value, vtype)
    for t in reader.tensors:
        name = rename.get(t.name, t.name) if rename else t.name
        if replace and name in replace:  # a float32 array of another shape (numpy order)
            writer.add_tensor(name, replace[name])
            continue
        writer.add_tensor(name, t.data, raw_shape=list(reversed(t.shape.tolist())), raw_dtype=t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_gguf_of_an_older_converter(tmp_path):
    src = TINY / "qwen3_5.gguf"
    if not src.exists():
        pytest.skip("tests/models/tiny/qwen3_5.gguf is missing")
    out = tmp_path / "old.gguf"
    _rewrite_gguf(src, out, rename={"blk.0.attn_qkv.weight": "blk.0.ssm_in.weight"})
    with pytest.raises(vt.VtUnsupportedError, match=r"blk\.0\.ssm_in\.weight is the fused layout of an older"):
        vt.Model(str(out))


def test_gguf_state_size_that_does_not_match_the_tensors(tmp_path):
    src = TINY / "qwen3_5.gguf"
    if not src.exists():
        pytest.skip("tests/models/tiny/qwen3_5.gguf is missing")
    out = tmp_path / "bad.gguf"
    _rewrite_gguf(src, out, set_u32={"qwen35.ssm.state_size": 32})
    with pytest.raises(vt.VtFormatError, match=r"tensor 'blk\.0\.attn_qkv\.weight'"):
        vt.Model(str(out))


# ---- LFM2: gated short convs whose state is the conv tail only ----


def test_lfm2_gguf_conv_weight_of_the_wrong_shape(tmp_path):
    np = pytest.importorskip("numpy")
    src = TINY / "lfm2.gguf"
    if not src.exists():
        pytest.skip("tests/models/tiny/lfm2.gguf is missing")
    out = tmp_path / "bad.gguf"
    # (64 channels, 4 taps) where the file's shortconv.l_cache says 3.
    _rewrite_gguf(src, out, replace={"blk.1.shortconv.conv.weight": np.zeros((64, 4), dtype=np.float32)})
    with pytest.raises(vt.VtFormatError, match=r"blk\.1\.shortconv\.conv\.weight"):
        vt.Model(str(out))


def test_lfm2_folder_conv_width_that_does_not_match_the_weights(tmp_path):
    folder = _tiny_folder(tmp_path, "lfm2_moe")
    _edit_config(folder, conv_L_cache=4)  # the weights have 3 taps
    with pytest.raises(vt.VtFormatError, match=r"blk\.0\.shortconv\.conv\.weight"):
        vt.Model(str(folder))


def test_lfm2_folder_without_in_proj(tmp_path):
    folder = _tiny_folder(tmp_path, "lfm2")
    _rename_safetensors(folder / "model.safetensors", "model.layers.3.conv.in_proj.weight",
                        "model.layers.3.conv.in_prog.weight")
    with pytest.raises(vt.VtFormatError, match=r"blk\.3\.shortconv\.in_proj\.weight"):
        vt.Model(str(folder))


# NemotronH (Mamba-2 layers; tests/models/tiny/nemotron_h): the same refusals.
@pytest.fixture
def nemotron_folder(tmp_path):
    return _tiny_folder(tmp_path, "nemotron_h")


def test_nemotron_h_folder_loads(nemotron_folder):
    m = vt.Model(str(nemotron_folder))
    assert m.n_layer == 6


def test_nemotron_h_folder_without_a_log(nemotron_folder):
    _rename_safetensors(nemotron_folder / "model.safetensors", "backbone.layers.2.mixer.A_log",
                        "backbone.layers.2.mixer.A_lox")
    with pytest.raises(vt.VtFormatError, match=r"blk\.2\.ssm_a"):
        vt.Model(str(nemotron_folder))


def test_nemotron_h_ssm_shape_that_does_not_match_the_weights(nemotron_folder):
    _edit_config(nemotron_folder, ssm_state_size=8)  # the weights have 16
    with pytest.raises(vt.VtFormatError, match=r"tensor 'blk\.0\.ssm_in\.weight': dimension 1"):
        vt.Model(str(nemotron_folder))


def test_nemotron_h_pattern_that_is_not_one(nemotron_folder):
    _edit_config(nemotron_folder, hybrid_override_pattern="M-M*-X")
    with pytest.raises(vt.VtFormatError, match=r"hybrid_override_pattern has 'X'"):
        vt.Model(str(nemotron_folder))


# Granite 4.0-H and Falcon-H1 (Mamba-2 hybrids with muP multipliers): broken
# folders name the key or tensor that is wrong.
def test_granite_hybrid_unknown_layer_type(tmp_path):
    folder = _tiny_folder(tmp_path, "granitemoehybrid")
    _edit_config(folder, layer_types=["mamba", "mamba", "sliding_attention", "mamba"])
    with pytest.raises(vt.VtFormatError, match=r"layer type 'sliding_attention' is neither mamba nor attention"):
        vt.Model(str(folder))


def test_falcon_h1_ssm_multipliers_of_the_wrong_length(tmp_path):
    folder = _tiny_folder(tmp_path, "falcon_h1")
    _edit_config(folder, ssm_multipliers=[1.0, 1.0, 1.0, 1.0])
    with pytest.raises(vt.VtFormatError, match=r"'ssm_multipliers' is not a list of 5 numbers"):
        vt.Model(str(folder))


def test_falcon_h1_norm_before_the_gate(tmp_path):
    folder = _tiny_folder(tmp_path, "falcon_h1")
    _edit_config(folder, mamba_rms_norm=True, mamba_norm_before_gate=True)
    with pytest.raises(vt.VtUnsupportedError, match=r"mamba_norm_before_gate"):
        vt.Model(str(folder))


def test_falcon_h1_without_an_in_proj(tmp_path):
    folder = _tiny_folder(tmp_path, "falcon_h1")
    _rename_safetensors(folder / "model.safetensors", "model.layers.1.mamba.in_proj.weight",
                        "model.layers.1.mamba.in_proj.weigh")
    with pytest.raises(vt.VtFormatError, match=r"blk\.1\.ssm_in\.weight"):
        vt.Model(str(folder))
