"""Structured outputs, logit bias and prompt logprobs from Python, on SmolLM2
(VT_TEST_MODEL; skipped without it).

- outputs sampled at temperature 1 under a GBNF grammar or a choice fall in
  the language, checked with Python's re.fullmatch on an equivalent regex
  (independent of vt), for each way of giving the constraint
  (SamplingParams keywords, StructuredOutputsParams, a vt.Grammar) and in
  LLM.stream too; each distinct constraint is compiled once per LLM;
- JSON Schema outputs validate with the jsonschema package, any-JSON outputs
  parse and regex outputs match, once libvt has those converters (until then
  libvt refuses them with "not built yet" and those cases skip saying so);
- logit_bias bans and forces tokens;
- prompt_logprobs equal log_softmax of the logits of a teacher-forced
  Sequence(logits_all=True) within 1e-3, in vLLM's shape;
- vt.GrammarMatcher: masks, accept, accept_text, completion, reset, and a
  decoding loop of one's own equal to LLM.stream's;
- bad constraints and arguments raise the right vt.VtError with a message.
"""
import copy
import gc
import json
import re
from array import array

import numpy as np
import pytest

import vt

from conftest import TEST_KV_MEMORY

# A person as JSON, in GBNF, and the same language as a Python regex.
PERSON_GBNF = r'''
root ::= "{\"name\": \"" name "\", \"age\": " age "}"
name ::= [A-Z] [a-z]{1,12}
age  ::= [1-9] [0-9]?
'''
PERSON_RE = r'\{"name": "[A-Z][a-z]{1,12}", "age": [1-9][0-9]?\}'

COLOURS = ["red", "green", "blue", "reddish brown"]

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 20},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "colour": {"enum": COLOURS},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 3},
    },
    "required": ["name", "age", "colour"],
}


def sampled(seed, **kw):
    """Temperature 1 over the whole (masked) distribution."""
    kw.setdefault("max_tokens", 64)
    return vt.SamplingParams(seed=seed, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, **kw)


def converter_ready(model, **constraint):
    """Whether libvt compiles this kind of constraint (JSON Schema, any JSON
    and regex refuse with "not built yet" until their converters land)."""
    try:
        vt.Grammar(model, **constraint)
    except vt.VtUnsupportedError as e:
        if "not built yet" in str(e):
            return False
        raise
    return True


@pytest.fixture(scope="module")
def sllm(model):
    # Its own LLM: the cache checks count the grammars compiled here.
    return vt.LLM(model, n_threads=2, kv_cache_memory=TEST_KV_MEMORY, max_num_seqs=8)


# ---- GBNF and choice: outputs in the language ------------------------------

@pytest.mark.parametrize("how", ["keyword", "structured_outputs", "vt.Grammar"])
def test_gbnf_outputs_fall_in_the_language(sllm, model, how):
    if how == "keyword":
        given = {"grammar": PERSON_GBNF}
    elif how == "structured_outputs":
        given = {"structured_outputs": vt.StructuredOutputsParams(grammar=PERSON_GBNF)}
    else:
        given = {"grammar": vt.Grammar(model, gbnf=PERSON_GBNF)}
    params = [sampled(seed, **given) for seed in range(8)]
    outs = sllm.generate(["A person as JSON:"] * len(params), params)
    texts = set()
    for out in outs:
        assert re.fullmatch(PERSON_RE, out.text), out.text
        assert out.finish_reason == "stop"
        texts.add(out.text)
    assert len(texts) > 1  # temperature 1 really sampled


def test_choice_gives_one_of_its_strings(sllm):
    for params in ([sampled(s, choice=COLOURS, max_tokens=16) for s in range(6)] +
                   [sampled(s, structured_outputs=vt.StructuredOutputsParams(choice=COLOURS), max_tokens=16)
                    for s in range(6, 9)]):
        [out] = sllm.generate("My favourite colour is", params)
        assert out.text in COLOURS, out.text
        assert out.finish_reason == "stop"


def test_greedy_with_a_grammar_and_penalties(sllm):
    # The grammar stage first, then the penalties and the greedy pick.
    params = vt.SamplingParams(temperature=0, grammar=PERSON_GBNF, repetition_penalty=1.3, max_tokens=64)
    [out] = sllm.generate("A person as JSON:", params)
    assert re.fullmatch(PERSON_RE, out.text), out.text


def test_stream_under_a_grammar(sllm):
    # The single-sequence loop: its chain is not given the prompt (the
    # grammar would refuse it), and it ends where the language does.
    for seed in range(3):
        stream = sllm.stream("A person as JSON:", sampled(seed, grammar=PERSON_GBNF, repetition_penalty=1.1))
        text = "".join(stream)
        assert re.fullmatch(PERSON_RE, text), text
        assert stream.finish_reason == "stop"
    stream = sllm.stream("My favourite colour is", sampled(1, choice=COLOURS))
    assert "".join(stream) in COLOURS


def test_each_constraint_is_compiled_once(model):
    llm = vt.LLM(model, n_threads=2, kv_cache_memory=TEST_KV_MEMORY)
    a = [sampled(s, grammar=PERSON_GBNF, max_tokens=24) for s in range(4)]
    b = [sampled(s, choice=COLOURS, max_tokens=8) for s in range(4)]
    llm.generate(["A person as JSON:"] * 8, a + b)
    llm.generate("Hi", sampled(9, structured_outputs=vt.StructuredOutputsParams(choice=list(COLOURS))))
    assert len(llm._grammars) == 2
    g = llm._grammar(a[0])
    assert g is llm._grammar(a[3]) and g.kind == "gbnf" and g.source == PERSON_GBNF
    assert llm._grammar(b[0]).kind == "choice" and json.loads(llm._grammar(b[0]).source) == COLOURS
    mine = vt.Grammar(model, gbnf=PERSON_GBNF)
    assert llm._grammar(sampled(0, grammar=mine)) is mine  # a vt.Grammar is used as is
    assert len(llm._grammars) == 2


# ---- JSON Schema, any JSON, regex (libvt's converters) ----------------------

def test_json_schema_outputs_validate(sllm, model):
    jsonschema = pytest.importorskip("jsonschema")
    if not converter_ready(model, json_schema={"type": "integer"}):
        pytest.skip("libvt's JSON Schema converter is not built yet (VtUnsupportedError 'not built yet')")
    ways = [{"json_schema": SCHEMA}, {"json_schema": json.dumps(SCHEMA)},
            {"structured_outputs": vt.StructuredOutputsParams(json=SCHEMA)},
            {"grammar": vt.Grammar(model, json_schema=SCHEMA)}]
    params = [sampled(seed, max_tokens=160, **ways[seed % len(ways)]) for seed in range(8)]
    outs = sllm.generate(["A person as JSON:"] * len(params), params)
    values = set()
    for out in outs:
        assert out.finish_reason == "stop", out.text
        value = json.loads(out.text)
        jsonschema.validate(value, SCHEMA)
        values.add(json.dumps(value, sort_keys=True))
    assert len(values) > 1


def test_json_object_outputs_parse(sllm, model):
    if not converter_ready(model, json=True):
        pytest.skip("libvt's any-JSON grammar is not built yet (VtUnsupportedError 'not built yet')")
    for seed in range(4):
        params = [sampled(seed, json_object=True, max_tokens=96),
                  sampled(seed, structured_outputs=vt.StructuredOutputsParams(json_object=True), max_tokens=96)]
        for out in sllm.generate(["A JSON object describing a cat:"] * 2, params):
            if out.finish_reason == "stop":
                json.loads(out.text)
            else:  # cut by max_tokens: a prefix of a JSON value
                assert out.finish_reason == "length" and out.text


def test_regex_outputs_match(sllm, model):
    pattern = r"\d{3}-[a-z]{2,4}( [A-Z]{1,6})?"  # finite: each ends with a stop
    if not converter_ready(model, regex=pattern):
        pytest.skip("libvt's regex converter is not built yet (VtUnsupportedError 'not built yet')")
    params = [sampled(s, regex=pattern, max_tokens=24) for s in range(4)]
    params += [sampled(s, structured_outputs=vt.StructuredOutputsParams(regex=pattern), max_tokens=24)
               for s in range(4, 6)]
    for out in sllm.generate(["A product code:"] * len(params), params):
        assert re.fullmatch(pattern, out.text), out.text
        assert out.finish_reason == "stop"


# ---- logit bias -------------------------------------------------------------

def test_logit_bias_bans_and_forces(sllm, model):
    prompt = "The capital of France is"
    first = lambda **kw: sllm.generate(prompt, vt.SamplingParams(temperature=0, max_tokens=1, **kw))[0].token_ids[0]
    base = first()
    banned = first(logit_bias={base: float("-inf")})
    assert banned != base
    assert first(logit_bias={base: float("-inf"), banned: float("-inf")}) not in (base, banned)
    banana = model.tokenizer.encode(" banana")[0]
    assert first(logit_bias={banana: 100.0}) == banana
    assert first(logit_bias={str(banana): 100}) == banana  # JSON's string keys
    # Every generated token, in the stream path too.
    stream = sllm.stream(prompt, vt.SamplingParams(temperature=0, max_tokens=8, logit_bias={base: float("-inf")}))
    "".join(stream)
    assert stream.token_ids and stream.token_ids[0] == banned and base not in stream.token_ids
    # The bias comes after the grammar: forcing a token the grammar refuses
    # changes nothing.
    out = sllm.generate(prompt, sampled(3, choice=COLOURS, logit_bias={banana: 100.0}, max_tokens=8))[0]
    assert out.text in COLOURS


def test_logit_bias_errors(sllm, model):
    with pytest.raises(vt.VtInvalidArgument):
        vt.SamplingParams(logit_bias={5: float("nan")})
    with pytest.raises(vt.VtInvalidArgument):
        vt.SamplingParams(logit_bias={-1: 1.0})
    with pytest.raises(vt.VtInvalidArgument, match="outside the vocabulary"):
        sllm.generate("Hi", vt.SamplingParams(logit_bias={model.n_vocab: 1.0}, max_tokens=1))


# ---- prompt logprobs ---------------------------------------------------------

def teacher_forced(sllm, ids):
    """log_softmax of the logits at each position of ids, one sequence."""
    seq = sllm.context.sequence(n_ctx=len(ids) + 8, logits_all=True)
    seq.feed(ids)
    seq.step()
    rows = np.stack([seq.logits(i).astype(np.float64) for i in range(len(ids))])
    m = rows.max(axis=1, keepdims=True)
    return rows - m - np.log(np.exp(rows - m).sum(axis=1, keepdims=True))


def test_prompt_logprobs_equal_teacher_forced_logits(sllm, model):
    prompt = "The quick brown fox jumps over the lazy dog, and then it rests."
    ids = model.tokenizer.encode(prompt, add_special=True)
    want = teacher_forced(sllm, ids)
    # Twice: the second request's prompt is in the prefix cache, which a
    # prompt_logprobs request must not read.
    for _ in range(2):
        [out] = sllm.generate(prompt, vt.SamplingParams(temperature=0, max_tokens=2, prompt_logprobs=3))
        assert out.prompt_token_ids == ids and len(out.token_ids) == 2
        plp = out.prompt_logprobs
        assert len(plp) == len(ids) and plp[0] is None
        for i in range(1, len(ids)):
            entry = plp[i]
            assert ids[i] in entry
            assert abs(entry[ids[i]].logprob - want[i - 1][ids[i]]) < 1e-3
            top = sorted((lp for lp in entry.values() if lp.rank is not None), key=lambda lp: lp.rank)
            assert [lp.rank for lp in top] == [1, 2, 3]
            order = np.argsort(-want[i - 1], kind="stable")
            for lp in top:
                assert abs(lp.logprob - want[i - 1][order[lp.rank - 1]]) < 1e-3
            assert len(entry) in (3, 4)  # the prompt token, and the top three unless it is one
            rank = entry[ids[i]].rank
            assert rank is None or top[rank - 1] is entry[ids[i]]
            piece = model.tokenizer.token_to_piece(ids[i], True).decode("utf-8", "replace")
            assert entry[ids[i]].decoded_token == piece
    # 0: the prompt token alone; max_tokens=0: the prompt is only scored.
    [out] = sllm.generate(prompt, vt.SamplingParams(temperature=0, max_tokens=0, prompt_logprobs=0))
    assert out.token_ids == [] and out.text == "" and out.finish_reason == "length"
    assert [None if e is None else list(e) for e in out.prompt_logprobs] == [None] + [[t] for t in ids[1:]]
    for i in range(1, len(ids)):
        assert abs(out.prompt_logprobs[i][ids[i]].logprob - want[i - 1][ids[i]]) < 1e-3
    # Without it: None.
    assert sllm.generate(prompt, vt.SamplingParams(temperature=0, max_tokens=1))[0].prompt_logprobs is None


def test_prompt_logprobs_low_level(sllm, model):
    ids = model.tokenizer.encode("Water boils at", add_special=True)
    ctx = sllm.context
    rid = ctx.submit(ids, max_tokens=1, prompt_logprobs=True, prompt_top_logprobs=2)
    events = []
    while not events or events[-1].finish_reason is None:
        ctx.step(10)
        events += [e for e in ctx.poll() if e.request_id == rid]
    prompt_events = [e for e in events if e.is_prompt]
    assert [e.token for e in prompt_events] == ids[1:]
    assert all(len(e.top_logprobs) == 2 and e.text == "" and e.finish_reason is None for e in prompt_events)
    assert events.index(prompt_events[-1]) < min(i for i, e in enumerate(events) if not e.is_prompt)
    with pytest.raises(vt.VtInvalidArgument):
        ctx.submit(ids, max_tokens=1, prompt_logprobs=True, prompt_top_logprobs=21)
    with pytest.raises(vt.VtInvalidArgument):
        vt.SamplingParams(prompt_logprobs=21)
    with pytest.raises(vt.VtInvalidArgument, match="prompt_logprobs"):
        sllm.stream("Hi", vt.SamplingParams(prompt_logprobs=1))


# ---- the matcher ---------------------------------------------------------------

def allowed_from_mask(words, n_vocab):
    return [t for t in range(n_vocab) if (words[t // 32] >> (t % 32)) & 1]


def test_matcher_masks_accept_and_reset(model):
    tok = model.tokenizer
    g = vt.Grammar(model, gbnf='root ::= "ab" | "abc"\n')
    assert g.kind == "gbnf" and g.n_vocab == tok.n_vocab and g.tokenizer.n_vocab == tok.n_vocab
    m = g.matcher()
    assert m.grammar is g
    allowed = m.allowed_tokens()
    assert len(allowed) >= 2
    assert {tok.token_to_piece(t) for t in allowed} <= {b"a", b"ab", b"abc"}
    # The bitmask three ways: a new array, a bytearray, a NumPy array (extra
    # words zeroed); all say the same.
    n_words = (g.n_vocab + 31) // 32
    words = m.fill_mask()
    assert isinstance(words, array) and words.itemsize == 4 and len(words) == n_words
    assert allowed_from_mask(words, g.n_vocab) == allowed
    buf = bytearray(n_words * 4)
    assert m.fill_mask(buf) is buf and bytes(buf) == words.tobytes()
    np_out = np.full(n_words + 2, 0xFFFFFFFF, dtype=np.uint32)
    m.fill_mask(np_out)
    assert np_out[-2:].tolist() == [0, 0] and np_out[:n_words].tobytes() == words.tobytes()
    with pytest.raises(vt.VtBufferTooSmall):
        m.fill_mask(bytearray(n_words * 4 - 4))
    with pytest.raises((TypeError, BufferError)):
        m.fill_mask(bytes(n_words * 4))  # read-only

    assert not m.is_accepting and not m.is_completed
    x = tok.encode("x")[0]
    with pytest.raises(vt.VtInvalidArgument, match="not allowed"):
        m.accept(x)
    m.accept_text("ab")
    assert m.is_accepting and not m.is_completed
    eog = [t for t in m.allowed_tokens() if tok.is_eog(t)]
    assert eog  # a whole string: end of generation is allowed
    m.accept_text(b"c")
    assert m.is_completed
    with pytest.raises(vt.VtInvalidArgument):
        m.accept_text("c")
    assert all(tok.is_eog(t) for t in m.allowed_tokens())
    m.accept(eog[0])
    assert m.allowed_tokens() == []  # terminated
    m.reset()
    assert not m.is_accepting
    a = tok.encode("a")[0]
    assert a in m.allowed_tokens()
    m.accept(a)
    assert "GrammarMatcher" in repr(m) and "gbnf" in repr(g)
    # Many matchers share one grammar; one outlives its grammar object.
    m2 = vt.GrammarMatcher(g)
    del g
    assert m2.allowed_tokens() == allowed


def test_matcher_loop_equals_stream(sllm, model):
    # A greedy decoding loop of one's own over Sequence logits masked by a
    # matcher gives LLM.stream's tokens under the same grammar.
    tok = model.tokenizer
    g = vt.Grammar(model, gbnf=PERSON_GBNF)
    ids = tok.encode("A person as JSON:", add_special=True)
    seq = sllm.context.sequence(n_ctx=256)
    seq.feed(ids)
    seq.step()
    m = g.matcher()
    out = []
    for _ in range(64):
        logits = seq.logits()
        allowed = m.allowed_tokens()
        t = max(allowed, key=lambda i: logits[i])
        if tok.is_eog(t):
            break
        m.accept(t)
        out.append(t)
        seq.feed([t])
        seq.step()
    assert m.is_accepting
    text = tok.decode(out)
    assert re.fullmatch(PERSON_RE, text), text
    stream = sllm.stream(ids, vt.SamplingParams(temperature=0, grammar=g, max_tokens=64))
    assert "".join(stream) == text and stream.token_ids == out


def test_sampler_grammar_stage(model):
    g = vt.Grammar(model, choice=["yes", "no"])
    s = vt.Sampler().add_grammar(g)
    assert s.grammar is g
    with pytest.raises(vt.VtInvalidState):
        s.add_grammar(g)  # at most one
    s.add_logit_bias({model.tokenizer.encode("no")[0]: 5.0}).add_greedy()
    logits = np.zeros(model.n_vocab, dtype=np.float32)
    t = s.sample(logits)
    assert model.tokenizer.token_to_piece(t) == b"no"
    with pytest.raises(vt.VtInvalidArgument):
        s.accept(model.tokenizer.encode(" maybe")[0])
    s.accept(t)
    with pytest.raises(TypeError):
        vt.Sampler().add_logit_bias([1, 2])


# ---- errors --------------------------------------------------------------------

def test_bad_constraints_raise_with_a_message(sllm, model):
    with pytest.raises(vt.VtInvalidArgument, match="line"):
        vt.Grammar(model, gbnf='root ::= "a" (\n')
    with pytest.raises(vt.VtInvalidArgument, match="missing"):
        vt.Grammar(model, gbnf="root ::= missing\n")
    with pytest.raises(vt.VtUnsupportedError, match="left-recursive"):
        vt.Grammar(model, gbnf='root ::= root "a" | "b"\n')
    with pytest.raises(vt.VtInvalidArgument):
        vt.Grammar(model, choice=[])
    with pytest.raises(vt.VtInvalidArgument, match="exactly one"):
        vt.Grammar(model)
    with pytest.raises(vt.VtInvalidArgument, match="exactly one"):
        vt.Grammar(model, gbnf='root ::= "a"', choice=["a"])
    with pytest.raises(TypeError):
        vt.Grammar(model, choice="abc")
    with pytest.raises(TypeError):
        vt.Grammar(model, gbnf=b'root ::= "a"')
    with pytest.raises(TypeError):
        vt.Grammar("not a model", gbnf='root ::= "a"')
    # Through SamplingParams: at most one constraint, checked when made;
    # compile errors at generate(), with libvt's message, nothing cached.
    with pytest.raises(vt.VtInvalidArgument, match="at most one"):
        vt.SamplingParams(grammar='root ::= "a"', choice=["a"])
    with pytest.raises(vt.VtInvalidArgument, match="at most one"):
        vt.SamplingParams(regex="a", structured_outputs=vt.StructuredOutputsParams(choice=["a"]))
    with pytest.raises(vt.VtInvalidArgument, match="exactly one"):
        vt.StructuredOutputsParams()
    with pytest.raises(vt.VtInvalidArgument, match="exactly one"):
        vt.StructuredOutputsParams(regex="a", choice=["a"])
    with pytest.raises(TypeError):
        vt.SamplingParams(json_schema=42)
    n = len(sllm._grammars)
    with pytest.raises(vt.VtInvalidArgument, match="line"):
        sllm.generate(["Hi", "Ho"], vt.SamplingParams(grammar='root ::= "a" (\n'))
    with pytest.raises(vt.VtInvalidArgument, match="line"):
        sllm.stream("Hi", vt.SamplingParams(grammar='root ::= "a" (\n'))
    assert len(sllm._grammars) == n
    assert sllm.context.stats()["n_running"] == 0
    with pytest.raises(vt.VtInvalidArgument, match="compiled for a model"):
        vt.SamplingParams(choice=["a"]).sampler()


def test_grammar_of_another_vocabulary_is_refused(sllm, tiny):
    g = vt.Grammar(tiny, gbnf='root ::= "a"')
    with pytest.raises(vt.VtInvalidArgument, match="vocabulary"):
        sllm.generate("Hi", vt.SamplingParams(grammar=g))


def test_grammar_of_a_standalone_tokenizer(sllm, model_path):
    # A grammar compiled for a vt.Tokenizer of the same GGUF serves the
    # model's requests; the request keeps working after every Python object
    # of its chain is gone (the context keeps the tokenizer).
    tok = vt.Tokenizer.from_file(model_path)
    g = vt.Grammar(tok, choice=COLOURS)
    params = sampled(4, grammar=g, max_tokens=8)
    assert copy.deepcopy(params).grammar is g  # immutable: shared, not copied
    assert sllm.generate("My favourite colour is", params)[0].text in COLOURS
    ctx = sllm.context
    smpl = vt.Sampler().add_grammar(g).add_temp(1.0).add_dist(5)
    rid = ctx.submit(tok.encode("My favourite colour is"), max_tokens=8, sampler=smpl)
    del tok, g, params, smpl
    gc.collect()
    text, finish = "", None
    while finish is None:
        ctx.step(10)
        for ev in ctx.poll():
            if ev.request_id == rid:
                text += ev.text
                finish = ev.finish_reason
    assert text in COLOURS and finish == "stop"
