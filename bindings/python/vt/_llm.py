"""vt.LLM, vt.SamplingParams and the outputs: text generation over vt._vt."""
from __future__ import annotations

import copy
import math
import numbers
import os
import secrets
import threading
import weakref
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from . import _vt
from ._engine import Logprob, PromptLogprobs, parse_bytes, run_batch
from ._structured import Constraint, GrammarCache, JsonSchema, StructuredOutputsParams, constraints

__all__ = ["LLM", "Logprob", "RequestOutput", "SamplingParams", "Stream"]


@dataclass
class SamplingParams:
    """How LLM.generate and LLM.stream pick tokens, and when they stop.

    The chain is vt-generate's, stage for stage: penalties -> top_k -> top_p ->
    min_p -> temperature -> a seeded draw; temperature <= 0 is greedy (after
    the penalties). The defaults are vt-generate's too, so LLM.stream (the
    single-sequence loop of vt-generate) gives the same text as
    ``vt-generate --temp T --seed S ...`` for the same settings.

    LLM.generate runs its prompts batched in the serving engine instead. Its
    tokens do not depend on the batch, but its numerics differ slightly from
    the single-sequence path's (softmax probabilities kept in f32 rather than
    rounded to f16 as llama.cpp does), so near-ties may pick other tokens; and
    there the penalties see the generated tokens only (as OpenAI's and vLLM's
    presence/frequency penalties), not the prompt.

    Attributes:
        temperature: softmax temperature; 0 (or less) = greedy.
        top_k: keep the k most likely tokens; 0 = off.
        top_p: nucleus sampling threshold; 1.0 = off.
        min_p: drop tokens below min_p * the top probability; 0.0 = off.
        repetition_penalty: CTRL-style repetition penalty; 1.0 = off.
        frequency_penalty: subtracted per past occurrence; 0.0 = off.
        presence_penalty: subtracted once for any past occurrence; 0.0 = off.
        penalty_last_n: how many of the last tokens (prompt and output) the
            penalties look at; -1 = all, 0 = none.
        seed: RNG seed (0 .. 2**32-1); None = a fresh random seed per request.
        max_tokens: most tokens to generate; None = until an end-of-generation
            token or a full context.
        stop_token_ids: extra token ids that end generation (finish_reason
            "stop", stop_reason the id); not included in the output.
        stop: a stop string or a list of them (generate only): the text ends
            just before the first one generated (finish_reason "stop",
            stop_reason the string); the string itself is not in the text,
            the tokens that made it are in token_ids (as in vLLM).
        ignore_eos: keep generating after end-of-generation tokens
            (generate only).
        logprobs: None, or the number (0 .. 20) of most likely tokens whose
            log-probabilities each output token reports besides its own
            (generate only; as vLLM's logprobs).
        prompt_logprobs: None, or the number (0 .. 20) of most likely tokens
            reported at each prompt position besides the prompt token itself
            (generate only; RequestOutput.prompt_logprobs, as vLLM's). Such a
            prompt is computed whole (the prefix cache is not read). With
            max_tokens=0 the prompt is only scored.
        logit_bias: {token id: bias} added to the logits before sampling (as
            OpenAI's and vLLM's; not clamped): float("-inf") bans a token,
            a large bias forces it.

    Structured outputs (constrained decoding: the text is in the
    constraint's language and ends where a string of it does), at most one
    of:
        structured_outputs: a vt.StructuredOutputsParams (vLLM's way:
            json=, regex=, choice=, grammar=, json_object=).
        json_schema: a JSON Schema (a dict or JSON text); the text is one
            JSON value valid against it.
        grammar: GBNF text (llama.cpp's; start rule root), or a vt.Grammar.
        regex: a regular expression the whole text matches.
        choice: a list of strings; the text is one of them.
        json_object: True for any JSON value.
    A constraint is compiled by the LLM at its first use and kept (once per
    LLM, not per prompt); compile errors (VtInvalidArgument,
    VtUnsupportedError) are raised by generate() and stream(). Its grammar is
    the chain's first stage, then logit_bias, then the stages above.

    Out-of-range values raise vt.VtInvalidArgument (a ValueError) when the
    object is made: libvt's own sampler checks them.
    """

    temperature: float = 0.8
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    repetition_penalty: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    penalty_last_n: int = 64
    seed: Optional[int] = None
    max_tokens: Optional[int] = 128
    stop_token_ids: List[int] = field(default_factory=list)
    stop: Union[str, List[str], None] = None
    ignore_eos: bool = False
    logprobs: Optional[int] = None
    prompt_logprobs: Optional[int] = None
    logit_bias: Optional[Dict[int, float]] = None
    structured_outputs: Optional[StructuredOutputsParams] = None
    json_schema: Optional[JsonSchema] = None
    grammar: Union[str, _vt.Grammar, None] = None
    regex: Optional[str] = None
    choice: Optional[List[str]] = None
    json_object: bool = False

    def __post_init__(self) -> None:
        if self.seed is not None and not 0 <= self.seed < 2**32:
            raise _vt.VtInvalidArgument("SamplingParams: seed must be in 0 .. 2**32-1 or None")
        if self.max_tokens is not None and self.max_tokens < 0:
            raise _vt.VtInvalidArgument("SamplingParams: max_tokens must be >= 0 or None")
        self.stop_token_ids = [int(t) for t in self.stop_token_ids]
        stops = [self.stop] if isinstance(self.stop, str) else list(self.stop or [])
        if not all(isinstance(x, str) and x and "\0" not in x for x in stops):
            raise _vt.VtInvalidArgument("SamplingParams: stop must be a non-empty string or a list of them")
        self.stop = stops
        if self.logprobs is not None and not 0 <= self.logprobs <= 20:
            raise _vt.VtInvalidArgument("SamplingParams: logprobs must be in 0 .. 20 or None")
        if self.prompt_logprobs is not None and not 0 <= self.prompt_logprobs <= 20:
            raise _vt.VtInvalidArgument("SamplingParams: prompt_logprobs must be in 0 .. 20 or None")
        if self.logit_bias is not None:
            # JSON (OpenAI's requests) has string keys: "50256" -> 50256.
            self.logit_bias = {int(t): float(b) for t, b in dict(self.logit_bias).items()}
        if self.structured_outputs is not None and not isinstance(self.structured_outputs, StructuredOutputsParams):
            raise TypeError("SamplingParams: structured_outputs must be a vt.StructuredOutputsParams")
        n = len(self._constraints())
        if n > 1:
            raise _vt.VtInvalidArgument(
                f"SamplingParams: {n} structured-output constraints given; give at most one of structured_outputs, "
                "json_schema, grammar, regex, choice or json_object")
        self._chain(0, None)  # validates every value through libvt

    def _constraints(self) -> List[Constraint]:
        found = constraints(json_schema=self.json_schema, regex=self.regex, choice=self.choice,
                            grammar=self.grammar, json_object=self.json_object)
        if self.structured_outputs is not None:
            found.append(self.structured_outputs._constraint())
        return found

    def _constraint(self) -> Optional[Constraint]:
        """The structured-output constraint: None, a vt.Grammar given as is,
        or (kind, source) with kind a vt.Grammar keyword ("gbnf",
        "json_schema", "json", "regex", "choice")."""
        found = self._constraints()
        return found[0] if found else None

    def sampler(self, seed: Optional[int] = None, grammar: Optional[_vt.Grammar] = None) -> _vt.Sampler:
        """A new vt.Sampler chain for these parameters.

        seed overrides self.seed; with neither, a random seed is drawn.
        grammar is the compiled constraint (LLM passes its own); without it a
        constraint other than a vt.Grammar raises VtInvalidArgument: a
        constraint is compiled for a model's vocabulary.
        """
        if grammar is None:
            grammar = self._constraint()
            if grammar is not None and not isinstance(grammar, _vt.Grammar):
                raise _vt.VtInvalidArgument(
                    "SamplingParams.sampler: the constraint must be compiled for a model: pass "
                    "grammar=vt.Grammar(model, ...) (LLM.generate does this)")
        return self._chain(seed, grammar)

    def _chain(self, seed: Optional[int], grammar: Optional[_vt.Grammar]) -> _vt.Sampler:
        s = _vt.Sampler()
        if grammar is not None:
            s.add_grammar(grammar)
        if self.logit_bias:
            s.add_logit_bias(self.logit_bias)
        if (self.repetition_penalty != 1.0 or self.frequency_penalty != 0.0
                or self.presence_penalty != 0.0):
            s.add_penalties(self.penalty_last_n, self.repetition_penalty,
                            self.frequency_penalty, self.presence_penalty)
        if self.temperature <= 0.0:
            return s.add_greedy()
        if seed is None:
            seed = self.seed if self.seed is not None else secrets.randbits(32)
        return (s.add_top_k(self.top_k).add_top_p(self.top_p, 1).add_min_p(self.min_p, 1)
                .add_temp(self.temperature).add_dist(seed))


@dataclass
class RequestOutput:
    """The result of one prompt of LLM.generate.

    Attributes:
        prompt: the prompt text (None if it was given as token ids).
        prompt_token_ids: the prompt's token ids, as evaluated.
        text: the generated text: the text of token_ids as they continue the
            prompt (as a vt.Detokenizer prefilled with the prompt gives it),
            with bytes that are not UTF-8 replaced by U+FFFD.
        token_ids: the generated token ids (without the end-of-generation or
            stop token).
        finish_reason: "stop" (an end-of-generation token, one of
            stop_token_ids or a stop string) or "length" (max_tokens, or the
            context is full).
        stop_reason: the id from stop_token_ids or the stop string that ended
            it, else None.
        logprobs: with SamplingParams.logprobs = n, one dict per token of
            token_ids: {token id: log-probability} of the n most likely
            tokens and of the token itself; else None.
        num_cached_tokens: prompt tokens served from the prefix cache
            (generate); None from a stream.
        lora: the vt.LoRA the prompt was generated with, or None (the base
            model; as vLLM's lora_request).
        prompt_logprobs: with SamplingParams.prompt_logprobs = n, vLLM's
            shape: one entry per prompt token, None for the first, then a
            dict {token id: vt.Logprob(logprob, rank, decoded_token)} of the
            prompt token and the n most likely tokens at that position (the
            prompt token's rank is None unless it is among them); else None.
        reasoning_content: LLM.chat with a harmony template (gpt-oss): the
            analysis channel's text, or None. Else None.
        tool_calls: LLM.chat with a harmony template: the calls the model
            made (messages to functions.NAME), [{"name": ..., "arguments":
            "<JSON text as written>"}], possibly empty. Else None.
            With a harmony template, text is the final channel's text (the
            answer's content; "" when there is none) and finish_reason is
            "tool_calls" when the answer ended in a call; vt.parse_harmony
            of tokenizer.decode(token_ids, render_special=True) gives all
            three.
    """

    prompt: Optional[str]
    prompt_token_ids: List[int]
    text: str
    token_ids: List[int]
    finish_reason: str
    stop_reason: Union[int, str, None] = None
    logprobs: Optional[List[Dict[int, float]]] = None
    num_cached_tokens: Optional[int] = None
    lora: Optional[_vt.LoRA] = None
    prompt_logprobs: Optional[PromptLogprobs] = None
    reasoning_content: Optional[str] = None
    tool_calls: Optional[List[Dict[str, str]]] = None


class Stream:
    """Iterator of the text pieces of one generation (LLM.stream).

    Pieces never end inside a UTF-8 character; their concatenation is the
    text of the generation (vt-generate's for the same prompt and settings).
    After (or during) iteration, text, token_ids, finish_reason and
    stop_reason describe the generation so far. A later stream() call on the
    same LLM ends an unfinished stream (finish_reason "abort"; iteration
    stops); generate() calls in between leave it alone.
    """

    def __init__(self, llm: "LLM", gen: _vt.Generation, prompt: Optional[str]) -> None:
        self._llm = llm
        self._gen = gen
        self.prompt = prompt

    def __iter__(self) -> "Stream":
        return self

    def __next__(self) -> str:
        with self._llm._lock:
            return next(self._gen)

    def close(self) -> None:
        """Ends the generation early (finish_reason "abort")."""
        with self._llm._lock:
            self._gen.close()

    @property
    def text(self) -> str:
        return self._gen.text

    @property
    def token_ids(self) -> List[int]:
        return self._gen.token_ids

    @property
    def prompt_token_ids(self) -> List[int]:
        return self._gen.prompt_token_ids

    @property
    def finish_reason(self) -> Optional[str]:
        """None while running, then "stop", "length" or "abort"."""
        return self._gen.finish_reason

    @property
    def stop_reason(self) -> Optional[int]:
        return self._gen.stop_reason

    def output(self) -> RequestOutput:
        """The generation so far as a RequestOutput (finish_reason may be None)."""
        g = self._gen
        return RequestOutput(self.prompt, g.prompt_token_ids, g.text, g.token_ids,
                             g.finish_reason, g.stop_reason)


PathLike = Union[str, "os.PathLike[str]"]
# An adapter argument: a loaded vt.LoRA, a path to load (once per LLM), or
# None for the base model.
LoRALike = Union[_vt.LoRA, PathLike, None]


class LLM:
    """A model ready to generate text: a vt.Model and a vt.Context.

    Example::

        llm = vt.LLM(model="SmolLM2-135M-Instruct.Q4_1.gguf", kv_cache_memory="1GiB")
        params = vt.SamplingParams(temperature=0.7, top_p=0.9, seed=1, max_tokens=64, stop=["\\n\\n"])
        prompts = ["Hello, my name is", "The sky is", "def fibonacci(n):"]
        for out in llm.generate(prompts, params):       # batched, outputs in order
            print(out.prompt, "->", out.text, out.finish_reason)
        for piece in llm.stream("Once upon a time", vt.SamplingParams(seed=1, max_tokens=64)):
            print(piece, end="", flush=True)

    generate() (and chat()) submit all their prompts to the context's serving
    engine at once and run them batched (continuous batching, as vLLM): a
    prompt's tokens are the same alone or in a batch. stream() runs one
    prompt in a single sequence, vt-generate's loop. Prompts are tokenized like
    vt-generate's: with the model's BOS/EOS rules (add_special) and with the
    text of control tokens ("<|im_start|>") turned into those tokens
    (parse_special), since the prompt is the caller's own text; pass
    parse_special=False for untrusted text. chat() takes conversations
    (message dicts) instead and renders them with the model's chat template
    first.

    LoRA adapters: generate(), chat() and stream() take lora= (a vt.LoRA of
    this model, or the path of a PEFT folder or GGUF LoRA, loaded once and
    kept by the LLM) and lora_scale=; generate() and chat() also take a list
    with one adapter per prompt, None for the base model, and run them all in
    one batch (as vLLM's lora_request)::

        outs = llm.generate(prompts, params, lora=["a.gguf", None, "b/"])

    Structured outputs: a constraint in SamplingParams (json_schema=,
    grammar= GBNF, regex=, choice=, json_object=, or vLLM's
    structured_outputs=vt.StructuredOutputsParams(...)) is compiled once per
    LLM and keeps every prompt's text in its language::

        params = vt.SamplingParams(json_schema={"type": "object", ...}, max_tokens=256)
        person = json.loads(llm.generate("A person as JSON:", params)[0].text)

    Thread-safety: an LLM is used by one thread at a time; calls from several
    threads are serialized by a lock (generation releases the GIL). For
    parallel generation make one LLM per thread over one shared vt.Model:
    ``vt.LLM(model=shared_model)``, or batch the prompts in one generate().
    """

    def __init__(self, model: Union[PathLike, _vt.Model], *, n_threads: int = 0, n_ctx: int = 0,
                 n_batch: int = 512, backend: Optional[str] = None, use_mmap: bool = True,
                 kv_cache_memory: Union[int, str, None] = None, max_num_seqs: int = 0,
                 max_model_len: Optional[int] = None, block_size: int = 0,
                 enable_prefix_caching: bool = True, quantize: Optional[str] = None,
                 device: Optional[str] = None, n_gpu_layers: int = -1, weights_memory: int = 0,
                 speculative_config: Optional[Dict[str, Any]] = None) -> None:
        """Loads the model (unless given a vt.Model) and makes its context.

        Args:
            model: a GGUF file path, or a loaded vt.Model to share.
            n_threads: compute threads; 0 = the number of physical cores.
            n_ctx: context window in tokens: stream()'s KV capacity (0 = the
                model's training context, capped at 4096) and, unless
                max_model_len is given, generate()'s tokens per request.
            n_batch: most tokens per forward pass (longer prompts are
                chunked; the engine's token budget per step).
            backend: the context's device; None = the model's (a name must
                be that one).
            use_mmap: map the weights (default) instead of reading them.
            kv_cache_memory: generate()'s KV block pool, in bytes or as a
                string such as "2GiB"; None or 0 = libvt's default (on the
                CPU a quarter of the available memory; on a device 90% of its
                free memory after the weights and the compute arena; capped at
                what max_num_seqs requests of max_model_len tokens can use).
                Allocated at the first generate(); on a device, a budget that
                does not fit raises VtOutOfMemory at construction.
            max_num_seqs: requests generate() runs at once (the rest wait);
                0 = 64.
            max_model_len: tokens per generate() request, prompt and output;
                None = n_ctx, where 0 = the model's training context capped
                by the pool.
            block_size: tokens per KV block; 0 = 16.
            enable_prefix_caching: share the KV blocks of common prompt
                prefixes between requests.
            quantize: quantize the F32/F16/BF16/FP8 matmul weights at load to this
                type ("Q8_0", "Q6_K", "Q5_0", "Q5_1", "Q4_K", "Q4_0", "Q4_1", "MXFP4"),
                as llama.cpp's quantizer would; None keeps the file's types.
                Only when model is a path (a vt.Model is already loaded).
            device: where the weights go and compute runs: a name from
                vt.devices() ("cpu", "vulkan0"); None = "cpu". Only when
                model is a path.
            n_gpu_layers: with such a device, how many layers (the last
                ones) it holds; the rest run on the CPU. -1 = all.
            weights_memory: the most bytes of weight copies in memory;
                mixture-of-experts weights past it are read from the file
                mapping (0 = 3/4 of the memory available at load). Only
                when model is a path.
            speculative_config: speculative decoding for generate(), as
                vLLM's: {"method": "ngram", "num_speculative_tokens": 5,
                "prompt_lookup_max": 4, "prompt_lookup_min": 2} drafts by
                n-gram prompt lookup where the output repeats the prompt;
                {"method": "suffix", ...} (vLLM's suffix_decoding_* keys) by
                suffix decoding over the request and earlier outputs;
                {"model": path or vt.Model, "num_speculative_tokens": 4}
                (vLLM's "draft_model" method) by a smaller model with the same
                vocabulary, loaded from a path as the model is (quantize,
                device); {"method": "mtp", "num_speculative_tokens": 2} by
                the model's own multi-token-prediction layer (Qwen3.5's);
                each step verifies the drafts; the tokens are those
                made without it (greedy or seeded). None = no drafts.
                Acceptance: self.context.stats()["spec_num_accepted_tokens"].

        Raises:
            VtIOError, VtFormatError, VtUnsupportedError: the model file.
            VtNotFound: no such device.
            VtInvalidArgument: a bad size.
        """
        if isinstance(model, _vt.Model) and (quantize is not None or device is not None or n_gpu_layers != -1
                                             or weights_memory != 0):
            raise ValueError("quantize and device apply at load: pass a path, or load "
                             "vt.Model(path, quantize=..., device=...)")
        self.model: _vt.Model = (model if isinstance(model, _vt.Model)
                                 else _vt.Model(model, use_mmap=use_mmap, quantize=quantize, device=device,
                                                n_gpu_layers=n_gpu_layers, weights_memory=weights_memory))
        self.tokenizer: _vt.Tokenizer = self.model.tokenizer
        # A draft model's path loads as the model does, once the rest of the
        # config is known to be right (the binding checks its keys first).
        if (speculative_config is not None
                and isinstance(speculative_config.get("model"), (str, os.PathLike))
                and speculative_config.get("method", "draft_model") == "draft_model"
                and set(speculative_config) <= {"method", "model", "num_speculative_tokens"}):
            speculative_config = dict(speculative_config)
            speculative_config["model"] = _vt.Model(speculative_config["model"], use_mmap=use_mmap,
                                                    quantize=quantize, device=device, n_gpu_layers=n_gpu_layers,
                                                    weights_memory=weights_memory)
        self.context: _vt.Context = _vt.Context(
            self.model, n_threads=n_threads, backend=backend, n_batch=n_batch,
            kv_cache_bytes=parse_bytes(kv_cache_memory), kv_block_size=block_size,
            max_num_seqs=max_num_seqs, max_model_len=n_ctx if max_model_len is None else max_model_len,
            prefix_caching=enable_prefix_caching, speculative_config=speculative_config)
        self._n_ctx = n_ctx
        self._seq: Optional[_vt.Sequence] = None  # stream()'s, made on first use
        self._lock = threading.RLock()
        self._active: Optional["weakref.ref[_vt.Generation]"] = None
        self._chat_template: Optional[_vt.ChatTemplate] = None  # parsed on first chat()
        self._loras: Dict[str, _vt.LoRA] = {}  # adapters given by path, by absolute path
        self._grammars = GrammarCache(self.tokenizer)  # structured-output constraints, compiled once

    def get_tokenizer(self) -> _vt.Tokenizer:
        """The model's tokenizer (as vLLM's LLM.get_tokenizer)."""
        return self.tokenizer

    def generate(self, prompts: Union[str, Sequence[str], None] = None,
                 sampling_params: Union[SamplingParams, Sequence[SamplingParams], None] = None, *,
                 prompt_token_ids: Union[Sequence[int], Sequence[Sequence[int]], None] = None,
                 add_special: bool = True, parse_special: bool = True,
                 lora: Union[LoRALike, Sequence[LoRALike]] = None,
                 lora_scale: Union[float, Sequence[float]] = 1.0) -> List[RequestOutput]:
        """Generates a completion for each prompt, all batched in the engine.

        Every prompt is submitted to the context's serving engine at once and
        they run together (continuous batching; at most max_num_seqs at a
        time, the rest wait). Each prompt gets its own sampler chain: with a
        seed, a prompt's sampled tokens are the same alone or in a batch.
        Ctrl-C (KeyboardInterrupt) cancels the requests still running.

        Args:
            prompts: a prompt or a list of prompts (text).
            sampling_params: one SamplingParams for all prompts, or one per
                prompt; None = SamplingParams() (vt-generate's defaults).
            prompt_token_ids: instead of prompts, already tokenized prompts
                (a list of ids, or a list of such lists).
            add_special, parse_special: how text prompts are tokenized (see
                the class docstring).
            lora: the LoRA adapter of every prompt, or a list with one per
                prompt (None: the base model). An adapter is a vt.LoRA of
                this LLM's model, or the path of a PEFT folder or GGUF LoRA
                file, loaded at its first use and kept by the LLM. Prompts
                with different adapters run in one batch; each gives the
                tokens it gives alone.
            lora_scale: the adapters' scale (1 = as trained, 0 = the base
                model), or a list with one per prompt.

        Returns:
            One RequestOutput per prompt, in order.

        Raises:
            VtInvalidArgument: an empty prompt, a bad parameter, an adapter
                of another model, a list of adapters or scales whose length
                is not the number of prompts.
            VtContextFull: a prompt that reaches max_model_len (n_ctx).
            VtInvalidUTF8: a prompt given as bytes that are not UTF-8.
            VtOutOfMemory: the KV pool.
            VtIOError, VtFormatError, VtUnsupportedError: an adapter given
                by path (see vt.LoRA).
            VtInvalidArgument, VtUnsupportedError: a structured-output
                constraint that does not compile (see vt.Grammar); a
                logit_bias id outside the vocabulary.
        """
        requests = self._requests(prompts, prompt_token_ids, add_special, parse_special)
        if sampling_params is None or isinstance(sampling_params, SamplingParams):
            params_list = [sampling_params or SamplingParams()] * len(requests)
        else:
            params_list = list(sampling_params)
            if len(params_list) != len(requests):
                raise _vt.VtInvalidArgument(
                    f"generate: {len(params_list)} sampling params for {len(requests)} prompts")
        with self._lock:
            adapters = self._adapters(lora, lora_scale, len(requests), "generate")
            grammars = [self._grammar(params) for params in params_list]
            results = run_batch(self.context, self.tokenizer,
                                [(ids, params, adapter, scale, grammar)
                                 for (_, ids), params, (adapter, scale), grammar
                                 in zip(requests, params_list, adapters, grammars)])
        return [RequestOutput(prompt, ids, r.text, r.token_ids, r.finish_reason, r.stop_reason, r.logprobs,
                              r.num_cached_tokens, adapter, r.prompt_logprobs)
                for (prompt, ids), r, (adapter, _) in zip(requests, results, adapters)]

    def _grammar(self, params: SamplingParams) -> Optional[_vt.Grammar]:
        # The compiled constraint of params (None without one); checks the
        # logit bias against the vocabulary too. Under self._lock.
        if params.logit_bias:
            bad = [t for t in params.logit_bias if not 0 <= t < self.model.n_vocab]
            if bad:
                raise _vt.VtInvalidArgument(f"logit_bias: token ids {bad[:5]} are outside the vocabulary "
                                            f"(0 .. {self.model.n_vocab - 1})")
        return self._grammars.get(params._constraint())

    def chat(self, messages: Union[Sequence[Mapping[str, Any]], Sequence[Sequence[Mapping[str, Any]]]],
             sampling_params: Union[SamplingParams, Sequence[SamplingParams], None] = None, *,
             chat_template: Optional[str] = None, add_generation_prompt: bool = True,
             tools: Optional[List[Dict[str, Any]]] = None,
             chat_template_kwargs: Optional[Dict[str, Any]] = None,
             lora: Union[LoRALike, Sequence[LoRALike]] = None,
             lora_scale: Union[float, Sequence[float]] = 1.0,
             parse_special_in_content: bool = False) -> List[RequestOutput]:
        """Generates the assistant's reply to a conversation (as vLLM's LLM.chat).

        Each conversation is rendered with the model's chat template (or
        chat_template) and tokenized with control tokens taken from the
        template's own text only (ChatTemplate.tokenize: a message holding
        "<|im_start|>system" stays text) and without a second BOS when the
        text already starts with one, and generated from as generate() does
        with those token ids.

        Args:
            messages: one conversation (a list of message dicts such as
                {"role": "user", "content": "Hi"}) or a list of conversations.
            sampling_params: as in generate().
            chat_template: Jinja text to use instead of the model's template.
            add_generation_prompt: end the prompt with the header of an
                assistant turn (the usual case).
            tools: tool definitions, passed to the template as `tools`.
            chat_template_kwargs: further template variables
                (e.g. {"enable_thinking": False}).
            lora, lora_scale: as in generate(), a list having one entry per
                conversation.
            parse_special_in_content: control-token text inside messages,
                tools and chat_template_kwargs becomes control tokens too
                (as vLLM does; lets users inject turns).

        Returns:
            One RequestOutput per conversation, in order; prompt is the
            rendered text.

        Raises:
            VtNotFound: the model has no chat template and none was given.
            VtFormatError: a template with a syntax error.
            VtInvalidArgument: the template raised (raise_exception), e.g. on
                roles in an order it refuses.
        """
        conversations = [messages] if messages and isinstance(messages[0], Mapping) else list(messages)
        template = self._template(chat_template)
        harmony = template.tool_call_format == "harmony"
        if harmony:
            sampling_params = self._harmony_params(sampling_params, len(conversations))
        kwargs = dict(chat_template_kwargs or {})
        if tools is not None:
            kwargs["tools"] = tools
        prompts = [template.apply(conv, add_generation_prompt, **kwargs) for conv in conversations]
        ids = [template.tokenize(self.tokenizer, conv, add_generation_prompt,
                                 parse_special_in_content=parse_special_in_content, **kwargs)
               for conv in conversations]
        outputs = self.generate(sampling_params=sampling_params, prompt_token_ids=ids, lora=lora,
                                lora_scale=lora_scale)
        for out, text in zip(outputs, prompts):
            out.prompt = text
            if harmony:
                # The channels are read from the text with gpt-oss's
                # control tokens, which the plain text leaves out.
                split = _vt.parse_harmony(self.tokenizer.decode(out.token_ids, render_special=True))
                out.text = split["content"] or ""
                out.reasoning_content = split["reasoning_content"]
                out.tool_calls = split["tool_calls"]
                if out.tool_calls and out.finish_reason == "stop":
                    out.finish_reason = "tool_calls"
        return outputs

    def _harmony_params(self, params, n: int):
        # <|return|> and <|call|> end a harmony answer: added to each
        # params' stop_token_ids (copies; the caller's stay as they were).
        ends = []
        for text in ("<|return|>", "<|call|>"):
            ids = self.tokenizer.encode(text, add_special=False, parse_special=True)
            if len(ids) == 1:
                ends.append(ids[0])
        if not ends:
            return params
        def with_ends(p):
            p = copy.copy(p) if p is not None else SamplingParams()
            p.stop_token_ids = list(p.stop_token_ids) + [t for t in ends if t not in p.stop_token_ids]
            return p
        if params is None or isinstance(params, SamplingParams):
            return with_ends(params)
        return [with_ends(p) for p in params]

    def _template(self, source: Optional[str]) -> _vt.ChatTemplate:
        if source is not None:
            return _vt.ChatTemplate(source, self.model)
        if self._chat_template is None:
            self._chat_template = _vt.ChatTemplate(model=self.model)
        return self._chat_template

    def stream(self, prompt: Union[str, Sequence[int]], sampling_params: Optional[SamplingParams] = None,
               *, add_special: bool = True, parse_special: bool = True, lora: LoRALike = None,
               lora_scale: float = 1.0) -> Stream:
        """Generates one completion piece by piece: an iterator of str.

        prompt is text, or a list of token ids. Each piece is the text of one
        or more tokens and never ends inside a UTF-8 character; "".join of
        the pieces equals generate()'s text for the same settings. The
        returned Stream also tells token_ids and finish_reason. Tokens are
        generated as the iterator is advanced (each step releases the GIL).
        It runs in the LLM's one sequence, vt-generate's loop, and so takes
        neither stop strings, ignore_eos, logprobs nor prompt_logprobs
        (VtInvalidArgument): generate() does. Structured outputs and
        logit_bias work as in generate() (with a constraint, the penalties
        see the output only, not the prompt). lora and lora_scale: one
        adapter, as in generate() (Sequence.set_lora).
        """
        params = sampling_params or SamplingParams()
        if params.stop or params.ignore_eos or params.logprobs is not None or params.prompt_logprobs is not None:
            raise _vt.VtInvalidArgument("stream: stop strings, ignore_eos, logprobs and prompt_logprobs are not "
                                        "supported by the single-sequence path; use generate()")
        if isinstance(prompt, str):
            text: Optional[str] = prompt
            ids = self.tokenizer.encode(prompt, add_special=add_special, parse_special=parse_special)
        else:
            text, ids = None, [int(t) for t in prompt]
        with self._lock:
            [(adapter, scale)] = self._adapters(lora, lora_scale, 1, "stream")
            grammar = self._grammar(params)
            gen = self._start(ids, params, adapter, scale, grammar)
        return Stream(self, gen, text)

    def _requests(self, prompts, prompt_token_ids, add_special, parse_special):
        if (prompts is None) == (prompt_token_ids is None):
            raise _vt.VtInvalidArgument("generate: pass either prompts or prompt_token_ids")
        if prompts is not None:
            if isinstance(prompts, (str, bytes)):
                prompts = [prompts]
            return [(p if isinstance(p, str) else None,
                     self.tokenizer.encode(p, add_special=add_special, parse_special=parse_special))
                    for p in prompts]
        ids_list = list(prompt_token_ids)
        if ids_list and not isinstance(ids_list[0], (list, tuple)) and not hasattr(ids_list[0], "__len__"):
            ids_list = [ids_list]
        return [(None, [int(t) for t in ids]) for ids in ids_list]

    def _start(self, ids: List[int], params: SamplingParams, adapter: Optional[_vt.LoRA],
               scale: float, grammar: Optional[_vt.Grammar]) -> _vt.Generation:
        # One sequence per LLM: a new generation ends an unfinished stream.
        if self._seq is None:
            self._seq = self.context.sequence(n_ctx=self._n_ctx)
        if self._active is not None:
            old = self._active()
            if old is not None:
                old.close()
        # After the old generation's close: it must not step with the new
        # adapter. The generation resets the sequence, so every token of it
        # is computed with the adapter.
        self._seq.set_lora(adapter, scale)
        gen = _vt.Generation(self._seq, params.sampler(grammar=grammar), self.tokenizer, ids,
                             params.max_tokens, params.stop_token_ids)
        self._active = weakref.ref(gen)
        return gen

    def _adapters(self, lora: Union[LoRALike, Sequence[LoRALike]], lora_scale: Union[float, Sequence[float]],
                  n: int, what: str) -> List[Tuple[Optional[_vt.LoRA], float]]:
        # (adapter, scale) of each of n prompts: one lora for all of them or
        # a list of n, the same for lora_scale. Under self._lock.
        if lora is None or isinstance(lora, (_vt.LoRA, str, os.PathLike)):
            adapters = [self._adapter(lora, what)] * n
        else:
            adapters = [self._adapter(x, what) for x in lora]
            if len(adapters) != n:
                raise _vt.VtInvalidArgument(f"{what}: {len(adapters)} LoRA adapters for {n} prompts")
        if isinstance(lora_scale, numbers.Real):
            scales = [float(lora_scale)] * n
        else:
            scales = [float(x) for x in lora_scale]
            if len(scales) != n:
                raise _vt.VtInvalidArgument(f"{what}: {len(scales)} LoRA scales for {n} prompts")
        if not all(math.isfinite(x) for x in scales):
            raise _vt.VtInvalidArgument(f"{what}: lora_scale must be finite")
        return list(zip(adapters, scales))

    def _adapter(self, lora: LoRALike, what: str) -> Optional[_vt.LoRA]:
        if lora is None:
            return None
        if isinstance(lora, _vt.LoRA):
            if lora.model is not self.model:
                raise _vt.VtInvalidArgument(f"{what}: {lora!r} is an adapter of another model than this LLM's")
            return lora
        if not isinstance(lora, (str, os.PathLike)):
            raise TypeError(f"{what}: lora must be a vt.LoRA, a path or None, not {type(lora).__name__}")
        key = os.path.abspath(os.fspath(lora))
        adapter = self._loras.get(key)
        if adapter is None:
            adapter = self._loras[key] = _vt.LoRA(self.model, key)
        return adapter

    def __repr__(self) -> str:
        return f"<vt.LLM {self.model!r}>"
