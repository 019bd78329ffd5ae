"""--speculative-config (vLLM's JSON) on vt-server: n-gram, suffix and draft-model drafts
leave the greedy text as the plain server makes it, in parallel requests and streams,
also for a model with recurrent layers (its state rolled back where a draft is
rejected), the acceptance shows in /metrics under vLLM's names, and a config vt
cannot honour ends the start with a message naming what is wrong."""
import concurrent.futures
import json
import subprocess
from pathlib import Path

import pytest

from conftest import THREADS, Server, free_port

TINY = Path(__file__).resolve().parents[1] / "models" / "tiny"

SPEC = json.dumps({"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4, "prompt_lookup_min": 2})
SUFFIX = json.dumps({"method": "suffix", "num_speculative_tokens": 8, "suffix_decoding_max_tree_depth": 16,
                     "suffix_decoding_min_token_prob": 0.1})

PROMPTS = [
    "Repeat the list exactly: apples, pears, plums, cherries, apricots, peaches, grapes.\n"
    "apples, pears, plums, cherries, apricots, peaches, grapes.\nAgain: apples,",
    "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n\ndef mul(a, b):\n",
    "Name: Ada Lovelace. Born: 1815.\nJSON: {\"name\": \"Ada Lovelace\", \"born\": 1815}\n"
    "Name: Alan Turing. Born: 1912.\nJSON:",
    "The capital of France is",
]


def complete_all(server, stream=False, parallel=True):
    c = server.client()

    def one(p):
        if not stream:
            return c.completions.create(model=server.model, prompt=p, max_tokens=32, temperature=0).choices[0].text
        return "".join(ch.choices[0].text for ch in
                       c.completions.create(model=server.model, prompt=p, max_tokens=32, temperature=0, stream=True)
                       if ch.choices)

    if not parallel:
        return [one(p) for p in PROMPTS]
    with concurrent.futures.ThreadPoolExecutor(len(PROMPTS)) as ex:
        return list(ex.map(one, PROMPTS))


def test_ngram_drafts_keep_the_greedy_text_and_count_in_metrics(server, start_server):
    spec = start_server("--kv-cache-memory", "64MiB", "--speculative-config", SPEC)
    want = complete_all(server)
    assert complete_all(spec) == want
    assert complete_all(spec, stream=True) == want
    m = spec.wait_idle()
    drafts = m["vt_spec_decode_num_drafts_total"]
    drafted = m["vt_spec_decode_num_draft_tokens_total"]
    accepted = m["vt_spec_decode_num_accepted_tokens_total"]
    assert drafts > 0 and 0 < accepted <= drafted <= 5 * drafts
    per_pos = [m[f'vt_spec_decode_num_accepted_tokens_per_pos_total{{position="{i}"}}'] for i in range(16)]
    assert sum(per_pos) == accepted
    assert all(per_pos[i] >= per_pos[i + 1] for i in range(15)) and per_pos[5] == 0
    # The plain server drafts nothing.
    assert server.metrics()["vt_spec_decode_num_drafts_total"] == 0


def test_suffix_drafts_keep_the_greedy_text_and_learn_from_earlier_outputs(server, start_server):
    spec = start_server("--kv-cache-memory", "64MiB", "--speculative-config", SUFFIX)
    want = complete_all(server)
    assert complete_all(spec) == want
    first = spec.wait_idle()["vt_spec_decode_num_accepted_tokens_total"]
    # The same requests again, one at a time (the draft policy drafts less in
    # a batch): their earlier outputs are in the suffix cache, so most of
    # each output is drafted from it and accepted.
    assert complete_all(spec, stream=True, parallel=False) == want
    m = spec.wait_idle()
    accepted = m["vt_spec_decode_num_accepted_tokens_total"]
    assert 0 < accepted <= m["vt_spec_decode_num_draft_tokens_total"] <= 8 * m["vt_spec_decode_num_drafts_total"]
    assert accepted - first > 32, (first, accepted)  # of the 4 x 32 tokens


def test_a_draft_model_keeps_the_greedy_text(server, start_server, model_path):
    # The draft is the model's own file, loaded a second time: its greedy
    # drafts agree with the model but where a batch's rounding splits a near-tie.
    spec = start_server("--kv-cache-memory", "64MiB", "--speculative-config",
                        json.dumps({"model": model_path, "num_speculative_tokens": 4}))
    want = complete_all(server)
    assert complete_all(spec) == want
    assert complete_all(spec, stream=True, parallel=False) == want
    m = spec.wait_idle()
    drafted = m["vt_spec_decode_num_draft_tokens_total"]
    accepted = m["vt_spec_decode_num_accepted_tokens_total"]
    assert 0 < drafted <= 4 * m["vt_spec_decode_num_drafts_total"]
    assert 10 * accepted >= 9 * drafted, (accepted, drafted)


def same_text_with_drafts(server_bin, model, configs):
    """A plain server and one per speculative config on model: the same text,
    streamed and not, and drafts made; the servers' /metrics after."""
    if not model.exists():
        pytest.skip(f"{model} is missing")
    servers = [Server(server_bin, str(model), "--kv-cache-memory", "64MiB")]
    try:
        want = complete_all(servers[0])
        for config in configs:
            servers.append(Server(server_bin, str(model), "--kv-cache-memory", "64MiB", "--speculative-config",
                                  json.dumps(config)))
            assert complete_all(servers[-1]) == want, config
            assert complete_all(servers[-1], stream=True) == want, config
        metrics = [s.wait_idle() for s in servers[1:]]
        for m, config in zip(metrics, configs):
            assert m["vt_spec_decode_num_drafts_total"] > 0, config
        return metrics
    finally:
        for s in servers:
            s.kill()


def test_a_model_with_recurrent_layers_drafts_and_keeps_the_greedy_text(server_bin):
    # The tiny Qwen3.5 (Gated DeltaNet layers), drafted by a second load of
    # itself and by n-grams; the same text as its plain server, which needs
    # a rollback of its state wherever a draft is rejected. Its own greedy
    # drafts are accepted.
    tiny = TINY / "qwen3_5.gguf"
    m = same_text_with_drafts(server_bin, tiny, [{"model": str(tiny), "num_speculative_tokens": 4}, json.loads(SPEC)])
    assert m[0]["vt_spec_decode_num_accepted_tokens_total"] > 0


@pytest.mark.parametrize("src", ["qwen3_5_mtp.gguf", "deepseek_v3_mtp"])
def test_a_models_own_mtp_layer_drafts_and_keeps_the_greedy_text(server_bin, src):
    # Qwen3.5's MTP layer from a GGUF, DeepSeek-V3's next-n layer from a folder.
    same_text_with_drafts(server_bin, TINY / src, [{"method": "mtp", "num_speculative_tokens": 3}])


@pytest.mark.parametrize("config, says", [
    ('{"method": "draft_model", "num_speculative_tokens": 3}', 'needs "model"'),
    ('{"model": "/nonexistent/draft.gguf", "num_speculative_tokens": 3}', "cannot load the draft model"),
    ('{"model": "x.gguf", "num_speculative_tokens": 3, "prompt_lookup_max": 2}',
     '"prompt_lookup_max" is not supported with method "draft_model"'),
    ('{"method": "suffix", "prompt_lookup_max": 3}', '"prompt_lookup_max" is not supported with method "suffix"'),
    ('{"method": "ngram", "num_speculative_tokens": 3, "suffix_decoding_max_tree_depth": 8}',
     '"suffix_decoding_max_tree_depth" is not supported with method "ngram"'),
    ('{"method": "suffix", "suffix_decoding_min_token_prob": 2}', "suffix_min_token_prob must be 0..1"),
    ('{"method": "suffix", "suffix_decoding_max_tree_depth": 1}', "suffix_max_tree_depth must be 2..1024"),
    ('{"method": "eagle", "num_speculative_tokens": 3}', 'method "eagle" is not supported'),
    ('{"method": "ngram"}', "num_speculative_tokens"),
    ('{"method": "ngram", "num_speculative_tokens": 3, "model": "x"}', '"model" is not supported'),
    ('{"method": "ngram", "num_speculative_tokens": -1}', "non-negative integer"),
    ('{"method": "ngram", "num_speculative_tokens": 99}', "num_speculative_tokens must be 1..16"),
    ('{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 5, "prompt_lookup_max": 2}',
     "prompt_lookup_min is above prompt_lookup_max"),
    ('{"method": ', "not valid JSON"),
    ('["ngram"]', "must be a JSON object"),
])
def test_bad_speculative_config_ends_the_start(server_bin, model_path, config, says):
    cmd = [server_bin, "-m", model_path, "--port", str(free_port()), "-t", THREADS, "--kv-cache-memory", "16MiB",
           "--speculative-config", config]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode != 0
    assert says in p.stderr + p.stdout, p.stderr
