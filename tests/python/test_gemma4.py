"""Gemma 4 from Python: the tiny E2B-like fixture (per-layer embeddings, KV
sharing) served by vt.LLM from its folder and its GGUF with the same greedy
tokens, the shared layers adding nothing to the KV cache; broken ones fail to
load with an error that names what is wrong: KV sharing past the model or
with no earlier layer of a shared layer's type, a missing per-layer
embedding table. Built from the committed fixtures (tests/models/tiny/gemma4,
gemma4_moe; make-tiny-models.py)."""
import json
import struct

import pytest

import vt

from tiny_files import TINY, _edit_config, _rename_safetensors, _tiny_folder


def test_folder_and_gguf_generate_alike():
    if not (TINY / "gemma4.gguf").exists() or not (TINY / "gemma4").is_dir():
        pytest.skip("tests/models/tiny/gemma4 is missing")
    greedy = vt.SamplingParams(temperature=0, max_tokens=12, ignore_eos=True)
    prompt = list(range(3, 40))
    out = []
    for path in (TINY / "gemma4", TINY / "gemma4.gguf"):
        llm = vt.LLM(str(path), n_threads=1, max_num_seqs=2)
        out.append(llm.generate(prompt_token_ids=[prompt], sampling_params=greedy)[0].token_ids)
    assert out[0] == out[1] and len(out[0]) == 12


def test_shared_layers_own_no_cache():
    # Layers 4 and 5 read layers 2 and 3's caches: of the 6 layers, the
    # sliding 0, 1, 2 (2 KV heads of 16) and the global 3 (2 of 32) own one,
    # K and V in f16: 384 and 256 bytes a token. One sequence of 64 tokens:
    # 4 blocks of 16 in each group, 4 * 16 * (384 + 256) = 40960 bytes (with
    # a cache for every layer it would be 65536).
    if not (TINY / "gemma4.gguf").exists():
        pytest.skip("tests/models/tiny/gemma4.gguf is missing")
    llm = vt.LLM(str(TINY / "gemma4.gguf"), n_threads=1, max_num_seqs=1, max_model_len=64,
                 enable_prefix_caching=False)
    llm.generate(prompt_token_ids=[[5, 6, 7]],
                 sampling_params=vt.SamplingParams(temperature=0, max_tokens=1, ignore_eos=True))
    s = llm.context.stats()
    assert (s["kv_block_size"], s["kv_blocks_total"], s["kv_cache_bytes"]) == (16, 8, 40960), s


def test_kv_sharing_past_the_model(tmp_path):
    folder = _tiny_folder(tmp_path, "gemma4")
    _edit_config(folder, num_kv_shared_layers=9)
    with pytest.raises(vt.VtFormatError, match=r"shared_kv_layers 9 leaves no layer that writes a cache"):
        vt.Model(str(folder))


def test_missing_per_layer_embedding_table(tmp_path):
    folder = _tiny_folder(tmp_path, "gemma4")
    _rename_safetensors(folder / "model.safetensors", "model.embed_tokens_per_layer.weight",
                        "model.embed_tokens_per_layer.weigth")
    with pytest.raises(vt.VtFormatError, match=r"per_layer_token_embd\.weight \(embed_tokens_per_layer\) is missing"):
        vt.Model(str(folder))


def test_shared_layer_without_an_earlier_layer_of_its_type(tmp_path):
    # gemma4_moe's layers slide but for 2 and 5: with the last four shared,
    # global layer 2 has no earlier global layer to read.
    gguf = pytest.importorskip("gguf")
    src = TINY / "gemma4_moe.gguf"
    if not src.exists():
        pytest.skip("tests/models/tiny/gemma4_moe.gguf is missing")
    reader = gguf.GGUFReader(str(src))
    out = tmp_path / "shared.gguf"
    writer = gguf.GGUFWriter(str(out), "gemma4")
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        value = 4 if name == "gemma4.attention.shared_kv_layers" else field.contents()
        if field.types[0] == gguf.GGUFValueType.ARRAY:
            writer.add_key_value(name, value, field.types[0], sub_type=field.types[-1])
        else:
            writer.add_key_value(name, value, field.types[0])
    for t in reader.tensors:
        writer.add_tensor(t.name, t.data, raw_shape=list(reversed(t.shape.tolist())), raw_dtype=t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(vt.VtFormatError, match=r"layer 2 shares the KV cache of a global layer, but none of the first 2"):
        vt.Model(str(out))


def test_conditional_generation_folder_loads_its_text_model(tmp_path):
    # Gemma4ForConditionalGeneration: the text model under
    # model.language_model., its config under text_config, beside vision and
    # audio towers (one tensor each here) that vt does not read. The same
    # greedy tokens as the text-only folder.
    folder = _tiny_folder(tmp_path, "gemma4")
    st = folder / "model.safetensors"
    raw = st.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    nested = {("model.language_model." + k[len("model."):] if k.startswith("model.") else k): v
              for k, v in header.items()}
    for tower in ("model.vision_tower.encoder.layers.0.mlp.up_proj.linear.weight",
                  "model.audio_tower.layers.0.feed_forward1.ffw_layer_1.linear.weight"):
        nested[tower] = {"dtype": "F32", "shape": [2], "data_offsets": [len(data), len(data) + 8]}
        data += struct.pack("<2f", 1.0, 2.0)
    text = json.dumps(nested).encode()
    text += b" " * (-len(text) % 8)
    st.write_bytes(struct.pack("<Q", len(text)) + text + data)
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4",
        "text_config": dict(cfg, model_type="gemma4_text"), "vision_config": {"model_type": "gemma4_vision"}}))
    greedy = vt.SamplingParams(temperature=0, max_tokens=8, ignore_eos=True)
    prompt = list(range(3, 30))
    out = [vt.LLM(str(p), n_threads=1, max_num_seqs=1).generate(prompt_token_ids=[prompt], sampling_params=greedy)[0]
           .token_ids for p in (folder, TINY / "gemma4")]
    assert out[0] == out[1]


@pytest.mark.parametrize("name", ["gemma4", "gemma4_moe"])
def test_checkpoint_keys_for_the_global_layers(tmp_path, name):
    # The published checkpoints name the global layers' head size and (with
    # attention_k_eq_v) KV heads as global_head_dim and
    # num_global_key_value_heads; transformers 5.25 writes per_layer_config
    # instead. Either reads the same.
    folder = _tiny_folder(tmp_path, name)
    cfg = json.loads((folder / "config.json").read_text())
    cfg.pop("per_layer_config")
    cfg["global_head_dim"] = 32
    if cfg.get("attention_k_eq_v"):
        cfg["num_global_key_value_heads"] = 1
    (folder / "config.json").write_text(json.dumps(cfg))
    greedy = vt.SamplingParams(temperature=0, max_tokens=8, ignore_eos=True)
    prompt = list(range(3, 30))
    out = [vt.LLM(str(p), n_threads=1, max_num_seqs=1).generate(prompt_token_ids=[prompt], sampling_params=greedy)[0]
           .token_ids for p in (folder, TINY / name)]
    assert out[0] == out[1]
    # Without either, the global layers would be transformers' default 512
    # wide: the weights say otherwise, and the error names the tensor.
    cfg.pop("global_head_dim")
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(vt.VtFormatError, match=r"tensor .blk\.[23]\.attn_q\.weight.: dimension 1 is 128, expected 2048"):
        vt.Model(str(folder))
