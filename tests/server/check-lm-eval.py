#!/usr/bin/env python3
"""check-lm-eval: lm-eval's per-choice loglikelihoods through vt-server
against vt's own teacher-forced logits (a developer's check: lm-eval is not
installed by tests/run.sh).

Run lm-eval's `local-completions` against vt-server on a multiple-choice
task with --log_samples (README.md, "Evaluation", shows the commands), then:

    check-lm-eval.py SAMPLES.jsonl MODEL.gguf TOKENIZER_DIR

For every (context, continuation) request in the samples it tokenizes as
lm-eval does (Hugging Face tokenizer, the whole string split at the
context's length), evaluates the whole sequence once through the vt
package (Sequence with logits_all) and sums log_softmax over the
continuation's positions. Exit 0 when every value agrees within 2e-3.
"""
import json
import sys

import numpy as np


def main() -> int:
    samples, model_path, tok_dir = sys.argv[1:4]
    import vt
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(tok_dir)
    model = vt.Model(model_path)
    ctx = vt.Context(model, n_threads=2)
    worst, n = 0.0, 0
    for line in open(samples, encoding="utf-8"):
        s = json.loads(line)
        for args, resp in zip(s["arguments"].values(), s["resps"]):
            context, cont = args["arg_0"], args["arg_1"]
            whole = tok(context + cont, add_special_tokens=False)["input_ids"]
            n_ctx = len(tok(context, add_special_tokens=False)["input_ids"])
            seq = ctx.sequence(n_ctx=len(whole) + 8, logits_all=True)
            seq.feed(whole)
            seq.step()
            total = 0.0
            for p in range(n_ctx, len(whole)):
                lg = np.asarray(seq.logits(p - 1), dtype=np.float64)
                m = lg.max()
                total += lg[whole[p]] - m - np.log(np.exp(lg - m).sum())
            got = float(resp[0][0])
            worst = max(worst, abs(got - total))
            n += 1
            print(f"{context!r} + {cont!r}: lm-eval {got:.4f}, vt teacher-forced {total:.4f}")
    print(f"{n} loglikelihoods, max |difference| {worst:.2e}")
    return 0 if n and worst < 2e-3 else 1


if __name__ == "__main__":
    sys.exit(main())
