"""vt: LLM inference with libvt, from Python.

High level (like vLLM's and llama-cpp-python's)::

    import vt
    llm = vt.LLM(model="SmolLM2-135M-Instruct.Q4_1.gguf", kv_cache_memory="1GiB")
    outs = llm.generate(["The capital of France is", "Once upon a time"],   # batched
                        vt.SamplingParams(temperature=0, max_tokens=32, stop=["."]))
    print(outs[0].text, outs[0].finish_reason)
    for piece in llm.stream("Once upon a time", vt.SamplingParams(seed=42)):
        print(piece, end="", flush=True)
    reply = llm.chat([{"role": "user", "content": "Hi!"}])[0].text   # the model's chat template
    outs = llm.generate("A colour:", vt.SamplingParams(choice=["red", "green"]))  # structured
    # outputs: json_schema=, grammar= (GBNF), regex=, choice=, json_object=True, or
    # structured_outputs=vt.StructuredOutputsParams(json=...) as in vLLM
    text = vt.apply_chat_template(llm.model, [{"role": "user", "content": "Hi!"}])

Low level, one class per handle of the C ABI (include/vt/*.h)::

    model = vt.Model(path)                      # immutable, shareable across threads
    tok = model.tokenizer                       # or vt.Tokenizer.from_file(gguf)
    d = tok.decode_stream()                     # vt.Detokenizer: d.push(id) -> text so far
    ctx = vt.Context(model, n_threads=4)        # one thread at a time
    seq = ctx.sequence(n_ctx=2048)
    seq.feed(tok.encode("Hello", add_special=True)); seq.step()
    logits = seq.logits()                       # float32 NumPy array, (n_vocab,)
    smpl = vt.Sampler().add_top_k(40).add_temp(0.8).add_dist(seed=1)
    next_id = smpl.sample(seq)
    rid = ctx.submit(tok.encode("Hi", add_special=True), max_tokens=16,
                     sampler=smpl)              # the serving engine; smpl is moved into it
    lora = vt.LoRA(model, "adapter.gguf")       # or a PEFT folder; seq.set_lora(lora),
                                                # ctx.submit(..., lora=lora), llm.generate(..., lora=...)
    ctx.step(); events = ctx.poll()             # vt.RequestEvent: token, text, finish_reason
    g = vt.Grammar(model, gbnf='root ::= "yes" | "no"')   # or json_schema=, regex=, choice=
    m = g.matcher()                             # vt.GrammarMatcher: allowed_tokens(), accept(id)
    smpl = vt.Sampler().add_grammar(g).add_greedy()        # the grammar stage goes first

Errors are vt.VtError subclasses (VtIOError, VtFormatError, VtInvalidArgument,
...), carrying .status and libvt's message. Models and tokenizers may be used
from any number of threads; an LLM, Context (with its Sequences) or Sampler
is used by one thread at a time: concurrent calls are serialized by a lock.
Model loading, step() and generation release the GIL, so threads with their
own LLM or Context over one shared Model run in parallel.
"""
from collections.abc import Mapping as _Mapping

from ._vt import (
    ABI_VERSION,
    LOG_DEBUG,
    LOG_ERROR,
    LOG_INFO,
    LOG_NONE,
    LOG_WARN,
    STATUS_CODES,
    ChatTemplate,
    Context,
    Detokenizer,
    Generation,
    Grammar,
    GrammarMatcher,
    HarmonyParser,
    LoRA,
    Model,
    ModelMeta,
    RequestEvent,
    Sampler,
    Sequence,
    Tokenizer,
    VtBufferTooSmall,
    VtCancelled,
    VtContextFull,
    VtError,
    VtFormatError,
    VtInternalError,
    VtInvalidArgument,
    VtInvalidState,
    VtInvalidUTF8,
    VtIOError,
    VtNotFound,
    VtOutOfMemory,
    VtUnsupportedError,
    abi_version,
    devices,
    parse_harmony,
    set_log_level,
    status_str,
    version,
)
from ._chat import apply_chat_template
from ._llm import LLM, Logprob, RequestOutput, SamplingParams, Stream
from ._structured import StructuredOutputsParams

_Mapping.register(ModelMeta)

__version__: str = version()

__all__ = [
    "ABI_VERSION", "LOG_DEBUG", "LOG_ERROR", "LOG_INFO", "LOG_NONE", "LOG_WARN", "STATUS_CODES",
    "ChatTemplate", "Context", "Detokenizer", "Generation", "Grammar", "GrammarMatcher", "HarmonyParser", "LLM", "Logprob", "LoRA",
    "Model", "ModelMeta", "RequestEvent", "RequestOutput", "Sampler", "SamplingParams", "Sequence", "Stream",
    "StructuredOutputsParams", "Tokenizer",
    "VtBufferTooSmall", "VtCancelled", "VtContextFull", "VtError", "VtFormatError", "VtInternalError",
    "VtInvalidArgument", "VtInvalidState", "VtInvalidUTF8", "VtIOError", "VtNotFound", "VtOutOfMemory",
    "VtUnsupportedError",
    "abi_version", "apply_chat_template", "devices", "parse_harmony", "set_log_level", "status_str", "version", "__version__",
]
