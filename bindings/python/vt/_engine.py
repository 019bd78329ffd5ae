"""LLM.generate's batched path: many prompts in a context's serving engine.

All prompts are submitted to the vt.Context at once and the engine runs them
together (continuous batching): every Context.step() is one forward pass over
prompt chunks and one decode token of each running request. A request's
tokens do not depend on what else runs, so the outputs equal those of each
prompt alone. Events are routed to their request by id; events of requests
this module did not submit are left unread (dropped).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _vt

# Steps in a row that compute nothing and give no event while requests are
# outstanding before the engine is deemed stuck (each waits up to _WAIT_MS).
_WAIT_MS = 10
_MAX_IDLE_STEPS = 1000

_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]?)(i?)(b?)\s*$", re.IGNORECASE)


def parse_bytes(value: Union[int, str, None]) -> int:
    """Bytes from an int or a size string ("2GiB", "512 MiB", "1.5GB", "4096").

    None and 0 mean libvt's default. K/M/G/T are powers of 1000, KiB/MiB/GiB/TiB
    powers of 1024. Raises VtInvalidArgument for anything else.
    """
    if value is None:
        return 0
    if isinstance(value, bool):
        raise _vt.VtInvalidArgument(f"a memory size must be bytes or a string like '2GiB', not {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise _vt.VtInvalidArgument(f"a memory size must be >= 0, not {value}")
        return value
    m = _SIZE.match(value) if isinstance(value, str) else None
    if m is None or (m.group(3) and not m.group(2)):
        raise _vt.VtInvalidArgument(f"a memory size must be bytes or a string like '2GiB', not {value!r}")
    power = "kmgt".find(m.group(2).lower()) + 1
    return int(float(m.group(1)) * (1024 if m.group(3) else 1000) ** power)


@dataclass
class Logprob:
    """A token's log-probability in RequestOutput.prompt_logprobs (vLLM's Logprob).

    Attributes:
        logprob: the log-softmax of the raw logits at the token.
        rank: its rank in the vocabulary (1 = the most likely) when it is
            among the reported most likely tokens, else None (libvt reports
            the prompt token and the top ones, not the rank of every token).
        decoded_token: the token's text (control tokens as their text,
            bytes that are not UTF-8 replaced by U+FFFD).
    """

    logprob: float
    rank: Optional[int] = None
    decoded_token: Optional[str] = None


# A prompt position's entry: {token id: Logprob} of the prompt token and the
# most likely tokens there.
PromptLogprobs = List[Optional[Dict[int, Logprob]]]


@dataclass
class Result:
    """What one request produced (LLM.generate turns it into a RequestOutput)."""

    token_ids: List[int] = field(default_factory=list)
    pieces: List[str] = field(default_factory=list)
    finish_reason: Optional[str] = None
    stop_reason: Union[int, str, None] = None
    logprobs: Optional[List[Dict[int, float]]] = None
    num_cached_tokens: Optional[int] = None
    prompt_logprobs: Optional[PromptLogprobs] = None

    @property
    def text(self) -> str:
        return "".join(self.pieces)


class _Request:
    def __init__(self, ids: List[int], params: Any, tokenizer: _vt.Tokenizer, pieces: Dict[int, str]) -> None:
        self.ids = ids
        self.params = params
        self.tokenizer = tokenizer
        self.pieces = pieces  # decoded tokens, shared by the batch
        # max_tokens=0 with prompt_logprobs: the prompt is scored by a request
        # of one token, which the result leaves out.
        self.score_only = params.max_tokens == 0
        self.result = Result(logprobs=[] if params.logprobs is not None else None,
                             prompt_logprobs=[None] if params.prompt_logprobs is not None else None)

    def _piece(self, tok: int) -> str:
        s = self.pieces.get(tok)
        if s is None:
            s = self.pieces[tok] = self.tokenizer.token_to_piece(tok, render_special=True).decode("utf-8", "replace")
        return s

    def _on_prompt_event(self, ev: _vt.RequestEvent) -> None:
        # vLLM's shape: the prompt token and the top ones, ranked 1.. in order.
        entry = {t: Logprob(lp, rank, self._piece(t)) for rank, (t, lp) in enumerate(ev.top_logprobs, 1)}
        if ev.token not in entry:
            entry[ev.token] = Logprob(ev.logprob, None, self._piece(ev.token))
        self.result.prompt_logprobs.append(entry)

    def on_event(self, ev: _vt.RequestEvent) -> None:
        if ev.is_prompt:
            self._on_prompt_event(ev)
            return
        r, p = self.result, self.params
        if self.score_only:
            if ev.finish_reason is not None:
                ev.check()
                r.finish_reason, r.num_cached_tokens = "length", ev.n_cached_tokens
            return
        final = ev.finish_reason is not None
        if final:
            ev.check()  # a request that failed raises its VtError
        tok = ev.token
        if tok is not None:
            # The engine's last event of a request that met an end-of-generation
            # or stop token carries that token; the output leaves it out.
            eog = final and ev.finish_reason == "stop" and not p.ignore_eos and self.tokenizer.is_eog(tok)
            stop_id = final and ev.finish_reason == "stop" and not eog and tok in p.stop_token_ids
            if stop_id:
                r.stop_reason = tok
            elif not eog:
                r.token_ids.append(tok)
                if r.logprobs is not None:
                    entry = dict(ev.top_logprobs)
                    entry[tok] = ev.logprob
                    r.logprobs.append(entry)
        if ev.text:
            r.pieces.append(ev.text)
        if final:
            r.finish_reason = ev.finish_reason
            r.num_cached_tokens = ev.n_cached_tokens
            if r.finish_reason == "stop" and r.stop_reason is None and p.stop and tok is not None \
                    and tok not in p.stop_token_ids and not (not p.ignore_eos and self.tokenizer.is_eog(tok)):
                r.stop_reason = self._matched_stop()

    def _matched_stop(self) -> Optional[str]:
        # The engine cut the text just before the earliest stop string; the
        # tokens' whole text tells which one (the shortest of those that start
        # there: it completed first).
        d = self.tokenizer.decode_stream(prefill=self.ids)
        full = d.push(self.result.token_ids) + d.finish()
        at = len(self.result.text)
        found = [s for s in self.params.stop if full.startswith(s, at)]
        if not found:  # text with replaced bytes: the earliest occurrence
            found = sorted((s for s in self.params.stop if s in full), key=full.find)[:1]
        return min(found, key=len) if found else None


# One request of run_batch: prompt ids, SamplingParams, the vt.LoRA it
# computes with (None: the base model) at its scale, and the vt.Grammar of
# its constraint (None: unconstrained).
BatchRequest = Tuple[List[int], Any, Optional[_vt.LoRA], float, Optional[_vt.Grammar]]


def run_batch(ctx: _vt.Context, tokenizer: _vt.Tokenizer,
              requests: Sequence[BatchRequest]) -> List[Result]:
    """Runs every (prompt ids, SamplingParams, adapter, scale, grammar)
    request to its end, batched.

    Each request gets a fresh sampler chain from its params and grammar (the
    engine takes ownership of it). Requests with different adapters (or none) share each
    step. Returns one Result per request, in order. On any exception (a bad
    argument, a failed step, KeyboardInterrupt) the requests still running
    are cancelled and drained before it propagates.
    """
    pending: Dict[int, _Request] = {}
    reqs: List[_Request] = []
    pieces: Dict[int, str] = {}
    try:
        for ids, params, lora, lora_scale, grammar in requests:
            req = _Request(ids, params, tokenizer, pieces)
            reqs.append(req)
            if params.max_tokens == 0 and params.prompt_logprobs is None:
                # The engine reads 0 as "until max_model_len".
                if not ids:
                    raise _vt.VtInvalidArgument("generate: the prompt is empty (no tokens to evaluate)")
                req.result.finish_reason = "length"
                continue
            rid = ctx.submit(ids, max_tokens=1 if req.score_only else params.max_tokens,
                             sampler=params.sampler(grammar=grammar),
                             stop_token_ids=params.stop_token_ids, stop=params.stop,
                             ignore_eos=params.ignore_eos, logprobs=params.logprobs is not None,
                             top_logprobs=params.logprobs or 0, lora=lora, lora_scale=lora_scale,
                             prompt_logprobs=params.prompt_logprobs is not None,
                             prompt_top_logprobs=params.prompt_logprobs or 0)
            pending[rid] = req
        idle = 0
        while pending:
            n = ctx.step(_WAIT_MS)
            events = ctx.poll()
            for ev in events:
                req = pending.get(ev.request_id)
                if req is None:
                    continue
                if ev.finish_reason is not None:
                    del pending[ev.request_id]
                req.on_event(ev)
            idle = 0 if n or events else idle + 1
            if idle > _MAX_IDLE_STEPS:
                raise _vt.VtInternalError(f"the engine made no progress on {len(pending)} requests")
    except BaseException:
        _abort(ctx, pending)
        raise
    return [r.result for r in reqs]


def _abort(ctx: _vt.Context, pending: Dict[int, _Request]) -> None:
    # Cancel takes effect at the next step, which frees the KV blocks and
    # queues each request's last event: drain those so that the context is
    # left as it was. A second interrupt (or error) here ends the draining
    # only; the context would finish the requests at its next step anyway.
    try:
        for rid in pending:
            ctx.cancel(rid)
        for _ in range(100):
            if not pending:
                break
            ctx.step(0)
            for ev in ctx.poll():
                if ev.finish_reason is not None:
                    pending.pop(ev.request_id, None)
    except BaseException:  # noqa: BLE001 - the original exception propagates
        pass
