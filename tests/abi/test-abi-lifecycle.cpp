// Every handle of the public ABI made and freed in loops, on the tiny
// random-weight Llama (tests/common/gguf-writer.h): models, contexts,
// sequences, the serving engine (submit, step, cancel, and a context
// destroyed with requests still running or queued), tokenizers,
// detokenizers, samplers, grammars and chat templates. In the normal build
// the checks below hold; in the ASan build (README, "Sanitizers")
// LeakSanitizer runs at exit and fails the test on any leak, so the loops
// show that destroy frees what create took, also on the unfinished paths.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "common/temp-file.h"
#include "vt/vt.h"

namespace {

constexpr int kRounds = 3;

std::string last_error() { return vt_last_error(); }

const std::string &tiny_path() {
    static vt::test::TempFile f(vt::test::tiny_llama_gguf());
    static const std::string path = f.path.string();
    return path;
}

std::vector<vt_token> prompt_of(int i) {
    std::vector<vt_token> p;
    for (int k = 0; k < 5 + i % 7; ++k) p.push_back((vt_token)(40 + (i * 13 + k * 7) % 80));
    return p;
}

vt_context *make_context(const vt_model *m) {
    vt_context_params p;
    vt_context_params_init_v2(&p, sizeof p);
    p.n_threads = 2;
    p.n_batch = 32;
    p.kv_cache_bytes = 1 << 20;
    p.max_num_seqs = 4;
    vt_context *c = nullptr;
    INFO(last_error());
    REQUIRE(vt_context_create(m, &p, &c) == VT_OK);
    REQUIRE(c != nullptr);
    return c;
}

uint64_t submit(vt_context *c, int i, uint32_t max_tokens, vt_sampler *sampler = nullptr) {
    const std::vector<vt_token> prompt = prompt_of(i);
    const char *stops[] = {"zz"};
    vt_request_params p;
    vt_request_params_init(&p);
    p.prompt = prompt.data();
    p.n_prompt = prompt.size();
    p.max_tokens = max_tokens;
    p.ignore_eos = true;
    p.stop_strings = stops;
    p.n_stop_strings = 1;
    p.logprobs = true;
    p.top_logprobs = 3;
    p.sampler = sampler;
    uint64_t id = 0;
    INFO(last_error());
    REQUIRE(vt_context_submit(c, &p, &id) == VT_OK);
    REQUIRE(id > 0);
    return id;
}

vt_sampler *random_sampler(uint32_t seed) {
    vt_sampler *s = nullptr;
    REQUIRE(vt_sampler_create(&s) == VT_OK);
    REQUIRE(vt_sampler_add_penalties(s, 16, 1.1f, 0.0f, 0.0f) == VT_OK);
    REQUIRE(vt_sampler_add_top_k(s, 20) == VT_OK);
    REQUIRE(vt_sampler_add_temp(s, 0.8f) == VT_OK);
    REQUIRE(vt_sampler_add_dist(s, seed) == VT_OK);
    return s;
}

} // namespace

TEST_CASE("lifecycle: models, contexts, sequences and engines made and freed in loops", "[tiny]") {
    for (int round = 0; round < kRounds; ++round) {
        vt_model *m = nullptr;
        INFO(last_error());
        REQUIRE(vt_model_load(tiny_path().c_str(), nullptr, &m) == VT_OK);
        vt_model_info info{};
        info.struct_size = sizeof info;
        REQUIRE(vt_model_get_info(m, &info) == VT_OK);

        // A context used only for a sequence, destroyed with the sequence alive
        // first destroyed by the caller (the documented order).
        {
            vt_context *c = make_context(m);
            vt_seq_params sp;
            vt_seq_params_init(&sp);
            vt_seq *s = nullptr;
            REQUIRE(vt_seq_create(c, &sp, &s) == VT_OK);
            const std::vector<vt_token> p = prompt_of(round);
            REQUIRE(vt_seq_feed(s, p.data(), p.size()) == VT_OK);
            REQUIRE(vt_seq_step(s) == VT_OK);
            const float *logits = nullptr;
            size_t n = 0;
            REQUIRE(vt_seq_logits(s, -1, &logits, &n) == VT_OK);
            CHECK(n == info.n_vocab);
            vt_seq_destroy(s);
            vt_context_destroy(c);
        }

        // The engine: one request finished, one cancelled, and the context
        // destroyed with one running (its sampler owned by the engine now) and
        // one still in the inbox.
        {
            vt_context *c = make_context(m);
            const uint64_t done = submit(c, round, 3);
            const uint64_t cancelled = submit(c, round + 1, 100);
            int finals = 0;
            bool done_ok = false, cancel_ok = false;
            for (int i = 0; i < 200 && finals < 2; ++i) {
                REQUIRE(vt_context_step(c, 0, nullptr) == VT_OK);
                if (i == 2) REQUIRE(vt_context_cancel(c, cancelled) == VT_OK);
                const vt_request_output *o = nullptr;
                while (vt_context_poll(c, &o) == VT_OK && o) {
                    if (o->finish_reason == VT_FINISH_NONE) continue;
                    ++finals;
                    if (o->request_id == done) done_ok = o->finish_reason == VT_FINISH_LENGTH;
                    if (o->request_id == cancelled) cancel_ok = o->finish_reason == VT_FINISH_CANCELLED;
                }
            }
            CHECK(done_ok);
            CHECK(cancel_ok);
            submit(c, round + 2, 100, random_sampler(7 + round));
            REQUIRE(vt_context_step(c, 0, nullptr) == VT_OK);
            REQUIRE(vt_context_step(c, 0, nullptr) == VT_OK);
            submit(c, round + 3, 100, random_sampler(8 + round));  // never stepped
            vt_engine_stats st{};
            st.struct_size = sizeof st;
            REQUIRE(vt_context_stats(c, &st) == VT_OK);
            CHECK(st.n_running == 1);
            CHECK(st.n_waiting == 1);
            vt_context_destroy(c);
        }
        vt_model_destroy(m);
    }
}

TEST_CASE("lifecycle: tokenizers, detokenizers, samplers, grammars and chat templates in loops", "[tiny]") {
    for (int round = 0; round < kRounds; ++round) {
        vt_model *m = nullptr;
        INFO(last_error());
        REQUIRE(vt_model_load(tiny_path().c_str(), nullptr, &m) == VT_OK);
        const vt_tokenizer *tok = nullptr;
        REQUIRE(vt_model_tokenizer(m, &tok) == VT_OK);
        const char text[] = "the thin hen";
        std::vector<vt_token> ids(64);
        size_t n = 0;
        REQUIRE(vt_tokenize(tok, text, std::strlen(text), VT_TOKENIZE_ADD_SPECIAL, ids.data(), ids.size(), &n) ==
                VT_OK);
        ids.resize(n);
        char buf[256];
        size_t needed = 0;
        REQUIRE(vt_detokenize(tok, ids.data(), ids.size(), false, buf, sizeof buf, &needed) == VT_OK);
        CHECK(std::string(buf, needed) == text);

        // A detokenizer destroyed with text pending (half a character).
        vt_detokenizer *d = nullptr;
        REQUIRE(vt_detokenizer_create(tok, false, &d) == VT_OK);
        for (vt_token t : ids) REQUIRE(vt_detokenizer_push(d, t, buf, sizeof buf, &needed) == VT_OK);
        REQUIRE(vt_detokenizer_push(d, 0xC3, buf, sizeof buf, &needed) == VT_OK);  // byte token: a lead byte
        vt_detokenizer_destroy(d);

        // A sampler used and destroyed; one without a final stage refused.
        vt_sampler *s = nullptr;
        REQUIRE(vt_sampler_create(&s) == VT_OK);
        REQUIRE(vt_sampler_add_top_k(s, 5) == VT_OK);
        REQUIRE(vt_sampler_add_dist(s, 3) == VT_OK);
        std::vector<float> logits(vt_tokenizer_n_vocab(tok), 0.0f);
        logits[65] = 5.0f;
        vt_token t = -1;
        REQUIRE(vt_sampler_sample(s, logits.data(), logits.size(), &t) == VT_OK);
        CHECK(t >= 0);
        vt_sampler_destroy(s);
        REQUIRE(vt_sampler_create(&s) == VT_OK);
        REQUIRE(vt_sampler_add_top_k(s, 5) == VT_OK);
        CHECK(vt_sampler_sample(s, logits.data(), logits.size(), &t) == VT_ERR_INVALID_STATE);
        vt_sampler_destroy(s);

        // A grammar, a matcher and a sampler that holds the grammar beyond its
        // handle's destroy; then a grammar that does not compile.
        vt_grammar *g = nullptr;
        const char re[] = "(the|hen)+";
        REQUIRE(vt_grammar_compile(tok, VT_GRAMMAR_REGEX, re, std::strlen(re), &g) == VT_OK);
        vt_grammar_matcher *gm = nullptr;
        REQUIRE(vt_grammar_matcher_create(g, &gm) == VT_OK);
        std::vector<uint32_t> mask((vt_grammar_n_vocab(g) + 31) / 32);
        REQUIRE(vt_grammar_matcher_fill_mask(gm, mask.data(), mask.size()) == VT_OK);
        REQUIRE(vt_grammar_matcher_accept_text(gm, "the", 3) == VT_OK);
        CHECK(vt_grammar_matcher_is_accepting(gm));
        REQUIRE(vt_sampler_create(&s) == VT_OK);
        REQUIRE(vt_sampler_add_grammar(s, g) == VT_OK);
        REQUIRE(vt_sampler_add_greedy(s) == VT_OK);
        vt_grammar_destroy(g);
        vt_grammar_matcher_destroy(gm);
        vt_sampler_destroy(s);
        vt_grammar *bad = nullptr;
        CHECK(vt_grammar_compile(tok, VT_GRAMMAR_REGEX, "(", 1, &bad) != VT_OK);
        CHECK(bad == nullptr);

        // Chat templates: one rendered, one that fails to parse, one that
        // raises at render time.
        vt_chat_template *tmpl = nullptr;
        const char *src = "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}";
        REQUIRE(vt_chat_template_create(src, m, &tmpl) == VT_OK);
        const vt_chat_message msgs[] = {{"user", "hi"}, {"assistant", "hello"}};
        REQUIRE(vt_chat_template_apply(tmpl, msgs, 2, nullptr, buf, sizeof buf, &needed) == VT_OK);
        CHECK(std::string(buf, needed) == "<user>hi\n<assistant>hello\n");
        vt_chat_template_destroy(tmpl);
        tmpl = nullptr;
        CHECK(vt_chat_template_create("{% for %}", m, &tmpl) != VT_OK);
        CHECK(tmpl == nullptr);
        REQUIRE(vt_chat_template_create("{{ raise_exception('no') }}", nullptr, &tmpl) == VT_OK);
        CHECK(vt_chat_template_apply(tmpl, msgs, 2, nullptr, buf, sizeof buf, &needed) != VT_OK);
        vt_chat_template_destroy(tmpl);

        // A standalone tokenizer from the same file.
        vt_tokenizer *own = nullptr;
        REQUIRE(vt_tokenizer_load(tiny_path().c_str(), &own) == VT_OK);
        CHECK(vt_tokenizer_n_vocab(own) == vt_tokenizer_n_vocab(tok));
        vt_tokenizer_destroy(own);
        vt_model_destroy(m);
    }
}
