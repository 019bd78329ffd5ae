// The grammar oracle gate: vt's token masks against xgrammar's, token for
// token, on real vocabularies. The goldens (tests/grammar/goldens/<vocab>.json,
// format in goldens/README.md) are written by make-grammar-goldens.py from
// xgrammar 0.2.9 run live on the tokenizer.json fixtures of
// tests/tokenizers/make-goldens.py; this test loads the same files with
// vt_tokenizer_load, compiles each constraint with vt_grammar_compile and
// replays each recorded walk: at every step the mask must have xgrammar's
// count, hash and (where recorded) ids, and after every token the matcher
// must report xgrammar's accepting / completed state.
//
// Before any mask, the token policy is checked on its own: vt's
// end-of-generation set must be the golden's stop ids and vt's control
// tokens (empty piece) its control ids, so that a tokenizer drift is told
// apart from a grammar bug.
//
// Public ABI only. A vocabulary whose fixture is absent is skipped (exit 77
// when nothing failed) with the command that makes it. On a mismatch whose
// golden step has only a hash, setting VT_GRAMMAR_DUMP_DIR writes vt's
// allowed ids there, for make-grammar-goldens.py --explain ... --against.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/skip.h"
#include "common/test-env.h"
#include "vt/vt.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct TokenizerDeleter {
    void operator()(vt_tokenizer *t) const { vt_tokenizer_destroy(t); }
};
struct GrammarDeleter {
    void operator()(vt_grammar *g) const { vt_grammar_destroy(g); }
};
struct MatcherDeleter {
    void operator()(vt_grammar_matcher *m) const { vt_grammar_matcher_destroy(m); }
};
using TokenizerPtr = std::unique_ptr<vt_tokenizer, TokenizerDeleter>;
using GrammarPtr = std::unique_ptr<vt_grammar, GrammarDeleter>;
using MatcherPtr = std::unique_ptr<vt_grammar_matcher, MatcherDeleter>;

fs::path goldens_dir() {
    const char *root = std::getenv("VT_SOURCE_ROOT");
    return fs::path(root ? root : ".") / "tests" / "grammar" / "goldens";
}

// As tests/tokenizers/stress_inputs.py fixtures_dir().
fs::path fixtures_dir() {
    if (const char *d = std::getenv("VT_TOKENIZER_FIXTURES"); d && *d) return d;
    const char *home = std::getenv("HOME");
    return fs::path(home ? home : ".") / ".cache" / "vt" / "tokenizer-fixtures";
}

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull, kFnvPrime = 0x100000001b3ull;

uint64_t fnv1a64(const unsigned char *p, size_t n, uint64_t h = kFnvOffset) {
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * kFnvPrime;
    return h;
}

// The golden's mask hash: FNV-1a 64 of the sorted ids as little-endian int32.
std::string ids_hash(const std::vector<int32_t> &ids) {
    uint64_t h = kFnvOffset;
    for (int32_t id : ids) {
        const uint32_t u = static_cast<uint32_t>(id);
        const unsigned char b[4] = {static_cast<unsigned char>(u), static_cast<unsigned char>(u >> 8),
                                    static_cast<unsigned char>(u >> 16), static_cast<unsigned char>(u >> 24)};
        h = fnv1a64(b, 4, h);
    }
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

std::string file_hash(const fs::path &p) {
    std::ifstream f(p, std::ios::binary);
    std::vector<char> buf(1 << 20);
    uint64_t h = kFnvOffset;
    while (f) {
        f.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        h = fnv1a64(reinterpret_cast<const unsigned char *>(buf.data()), static_cast<size_t>(f.gcount()), h);
    }
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
    return out;
}

std::vector<int32_t> undelta(const json &d) {
    std::vector<int32_t> out;
    int32_t cur = 0;
    for (size_t i = 0; i < d.size(); ++i) {
        cur = i == 0 ? d[i].get<int32_t>() : cur + d[i].get<int32_t>();
        out.push_back(cur);
    }
    return out;
}

std::string escaped(const std::string &s) {
    std::string out;
    for (unsigned char c : s) {
        if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c == '\r') out += "\\r";
        else if (c == '\\') out += "\\\\";
        else if (c < 0x20 || c == 0x7f) {
            char b[8];
            std::snprintf(b, sizeof b, "\\x%02x", c);
            out += b;
        } else out += static_cast<char>(c);
    }
    return out;
}

std::string piece(const vt_tokenizer *tok, vt_token id, bool render_special) {
    std::string buf(64, '\0');
    size_t need = 0;
    vt_status st = vt_token_to_piece(tok, id, render_special, buf.data(), buf.size(), &need);
    if (st == VT_ERR_BUFFER_TOO_SMALL) {
        buf.resize(need + 1);
        st = vt_token_to_piece(tok, id, render_special, buf.data(), buf.size(), &need);
    }
    if (st != VT_OK) return "<piece error>";
    buf.resize(need);
    return buf;
}

std::string text_of(const vt_tokenizer *tok, const std::vector<vt_token> &ids) {
    std::string buf(256, '\0');
    size_t need = 0;
    vt_status st = vt_detokenize(tok, ids.data(), ids.size(), true, buf.data(), buf.size(), &need);
    if (st == VT_ERR_BUFFER_TOO_SMALL) {
        buf.resize(need + 1);
        st = vt_detokenize(tok, ids.data(), ids.size(), true, buf.data(), buf.size(), &need);
    }
    if (st != VT_OK) return "<detokenize error>";
    buf.resize(need);
    return buf;
}

// "id 'piece'" for up to `limit` ids.
std::string describe(const vt_tokenizer *tok, const std::vector<int32_t> &ids, size_t limit = 12) {
    std::ostringstream os;
    for (size_t i = 0; i < ids.size() && i < limit; ++i)
        os << (i ? ", " : "") << ids[i] << " '" << escaped(piece(tok, ids[i], true)) << "'";
    if (ids.size() > limit) os << ", ... (" << ids.size() << " in all)";
    return os.str();
}

std::vector<int32_t> minus(const std::vector<int32_t> &a, const std::vector<int32_t> &b) {
    std::vector<int32_t> out;
    size_t j = 0;
    for (int32_t x : a) {
        while (j < b.size() && b[j] < x) ++j;
        if (j == b.size() || b[j] != x) out.push_back(x);
    }
    return out;
}

std::vector<int32_t> complement(const std::vector<int32_t> &ids, uint32_t n) {
    std::vector<int32_t> all(n);
    for (uint32_t i = 0; i < n; ++i) all[i] = static_cast<int32_t>(i);
    return minus(all, ids);
}

// The allowed ids of a mask, sorted.
std::vector<int32_t> mask_ids(const std::vector<uint32_t> &mask, uint32_t n_vocab) {
    std::vector<int32_t> ids;
    for (uint32_t t = 0; t < n_vocab; ++t)
        if (mask[t / 32] >> (t % 32) & 1u) ids.push_back(static_cast<int32_t>(t));
    return ids;
}

bool kind_of(const std::string &s, vt_grammar_kind &k) {
    if (s == "gbnf") k = VT_GRAMMAR_GBNF;
    else if (s == "json_schema") k = VT_GRAMMAR_JSON_SCHEMA;
    else if (s == "json") k = VT_GRAMMAR_JSON;
    else if (s == "regex") k = VT_GRAMMAR_REGEX;
    else if (s == "choice") k = VT_GRAMMAR_CHOICE;
    else return false;
    return true;
}

// Checks vt's end-of-generation and control sets against the golden's.
void check_policy(const vt_tokenizer *tok, const json &g) {
    const uint32_t n = vt_tokenizer_n_vocab(tok);
    std::vector<int32_t> eog, control;
    for (uint32_t t = 0; t < n; ++t) {
        const vt_token id = static_cast<vt_token>(t);
        if (vt_token_is_eog(tok, id)) eog.push_back(id);
        if (piece(tok, id, false).empty()) control.push_back(id);
    }
    const auto stop = g["stop_ids"].get<std::vector<int32_t>>();
    std::vector<int32_t> want_control;
    for (const json &r : g["control_ranges"])
        for (int32_t i = r[0].get<int32_t>(); i <= r[1].get<int32_t>(); ++i) want_control.push_back(i);
    INFO("golden stop ids: the end-of-generation set vt derived when the golden was made "
         "(make-grammar-goldens.py vt_policy); control ids: added tokens marked special");
    if (eog != stop) {
        FAIL_CHECK("end-of-generation ids differ: only vt: " << describe(tok, minus(eog, stop))
                                                            << "; only golden: " << describe(tok, minus(stop, eog)));
    }
    if (control != want_control) {
        FAIL_CHECK("control ids (empty piece) differ: only vt: "
                   << describe(tok, minus(control, want_control))
                   << "; only golden: " << describe(tok, minus(want_control, control)));
    }
}

struct Step {
    size_t count = 0;
    std::string hash;
    bool has_allowed = false, has_rejected = false;
    std::vector<int32_t> ids;  // allowed or rejected ids, as recorded
};

Step read_step(const json &s) {
    Step st;
    st.count = s["n"].get<size_t>();
    st.hash = s["h"].get<std::string>();
    if (s.contains("a")) {
        st.has_allowed = true;
        st.ids = undelta(s["a"]);
    } else if (s.contains("r")) {
        st.has_rejected = true;
        st.ids = undelta(s["r"]);
    }
    return st;
}

// Walks whose matcher, after taking an end-of-generation token, answers
// is_accepting differently from xgrammar's is_completed (run_golden reports).
size_t terminated_accepting_differs = 0;

// Replays one walk; returns false at the first difference (reported).
bool replay(const vt_tokenizer *tok, const vt_grammar *grammar, const json &g, size_t wi, const json &w,
            const std::string &cname) {
    const uint32_t n_vocab = g["n_vocab"].get<uint32_t>();
    const auto tokens = w["tokens"].get<std::vector<int32_t>>();
    const json &steps = w["steps"], &after = w["after"];
    vt_grammar_matcher *raw = nullptr;
    vt_status st = vt_grammar_matcher_create(grammar, &raw);
    MatcherPtr m(raw);
    if (st != VT_OK) {
        FAIL_CHECK("vt_grammar_matcher_create: " << vt_status_str(st) << ": " << vt_last_error());
        return false;
    }
    std::vector<uint32_t> mask((n_vocab + 31) / 32 + 1);
    std::vector<vt_token> walked;
    const std::string where = g["vocab"].get<std::string>() + " " + cname + " walk " + std::to_string(wi);
    auto context = [&](size_t i) {
        std::ostringstream os;
        os << where << " step " << i << ", text so far \"" << escaped(text_of(tok, walked)) << "\"";
        return os.str();
    };

    for (size_t i = 0; i <= tokens.size(); ++i) {
        std::fill(mask.begin(), mask.end(), 0xffffffffu);
        st = vt_grammar_matcher_fill_mask(m.get(), mask.data(), mask.size());
        if (st != VT_OK) {
            FAIL_CHECK(context(i) << ": vt_grammar_matcher_fill_mask: " << vt_status_str(st) << ": "
                                  << vt_last_error());
            return false;
        }
        for (size_t b = n_vocab; b < mask.size() * 32; ++b) {
            if (mask[b / 32] >> (b % 32) & 1u) {
                FAIL_CHECK(context(i) << ": fill_mask left bit " << b << " past the vocabulary set");
                return false;
            }
        }
        const std::vector<int32_t> got = mask_ids(mask, n_vocab);
        if (i == steps.size()) {  // terminated: nothing may follow
            if (!got.empty()) {
                FAIL_CHECK(context(i) << ": after an end-of-generation token vt allows " << describe(tok, got));
                return false;
            }
            break;
        }
        const Step want = read_step(steps[i]);
        const std::string got_hash = ids_hash(got);
        if (got.size() != want.count || got_hash != want.hash) {
            std::ostringstream os;
            os << context(i) << ": vt allows " << got.size() << " tokens, xgrammar " << want.count;
            if (want.has_allowed || want.has_rejected) {
                const std::vector<int32_t> want_allowed =
                    want.has_allowed ? want.ids : complement(want.ids, n_vocab);
                os << "\n  only vt:       " << describe(tok, minus(got, want_allowed))
                   << "\n  only xgrammar: " << describe(tok, minus(want_allowed, got));
            } else {
                os << " (the golden has only the hash of this mask";
                if (const char *dir = std::getenv("VT_GRAMMAR_DUMP_DIR"); dir && *dir) {
                    const fs::path p = fs::path(dir) / (g["vocab"].get<std::string>() + "-w" +
                                                       std::to_string(wi) + "-s" + std::to_string(i) + ".txt");
                    std::ofstream f(p);
                    for (int32_t id : got) f << id << '\n';
                    os << "; vt's ids are in " << p.string()
                       << "; tests/grammar/make-grammar-goldens.py --explain " << g["vocab"].get<std::string>()
                       << ":" << wi << ":" << i << " --against " << p.string() << " shows the difference)";
                } else {
                    os << "; set VT_GRAMMAR_DUMP_DIR to write vt's ids for make-grammar-goldens.py --explain "
                       << g["vocab"].get<std::string>() << ":" << wi << ":" << i << " --against FILE)";
                }
            }
            FAIL_CHECK(os.str());
            return false;
        }
        if (i == tokens.size()) break;  // walk ended by its step limit

        const vt_token t = tokens[i];
        st = vt_grammar_matcher_accept(m.get(), t);
        walked.push_back(t);
        if (st != VT_OK) {
            FAIL_CHECK(context(i) << ": vt_grammar_matcher_accept(" << describe(tok, {t})
                                  << "): " << vt_status_str(st) << ": " << vt_last_error());
            return false;
        }
        const bool want_accepting = after[i][0].get<int>() != 0, want_completed = after[i][2].get<int>() != 0;
        const bool accepting = vt_grammar_matcher_is_accepting(m.get());
        const bool completed = vt_grammar_matcher_is_completed(m.get());
        if (after[i][1].get<int>() && completed && accepting != want_accepting) {
            // After an end-of-generation token: xgrammar's is_completed()
            // stays true (the text before it is a whole string of the
            // language). Counted apart, once per vocabulary (run_golden), so
            // that this one question does not hide the walk's masks.
            ++terminated_accepting_differs;
        } else if (accepting != want_accepting || completed != want_completed) {
            FAIL_CHECK(context(i + 1) << " (after " << describe(tok, {t}) << "): vt is_accepting " << accepting
                                      << " is_completed " << completed << ", xgrammar " << want_accepting << " "
                                      << want_completed
                                      << (after[i][1].get<int>() ? " (xgrammar terminated)" : ""));
            return false;
        }
    }
    return true;
}

void run_golden(const fs::path &path) {
    std::ifstream f(path);
    const json g = json::parse(f);
    const std::string vocab = g["vocab"].get<std::string>();
    const fs::path fixture = fixtures_dir() / g["loads"]["path"].get<std::string>();
    if (!fs::exists(fixture)) {
        VT_NOTE_SKIP(vocab << ": " << fixture.string()
                           << " is absent; run tests/tokenizers/make-goldens.py --fixtures-only "
                              "(tests/run.sh does; it needs ../shared/data and the cached models)");
        return;
    }
    if (const std::string h = file_hash(fixture); h != g["loads"]["fnv1a64"].get<std::string>()) {
        WARN(vocab << ": " << fixture.string() << " is not byte for byte the file the golden was made from (fnv1a64 "
                   << h << ", golden " << g["loads"]["fnv1a64"].get<std::string>()
                   << "); the vocabulary checks below tell whether it matters");
    }
    vt_tokenizer *raw = nullptr;
    vt_status st = vt_tokenizer_load(fixture.string().c_str(), &raw);
    TokenizerPtr tok(raw);
    if (st != VT_OK) FAIL("vt_tokenizer_load(" << fixture.string() << "): " << vt_status_str(st) << ": " << vt_last_error());
    REQUIRE(vt_tokenizer_n_vocab(tok.get()) == g["n_vocab"].get<uint32_t>());
    check_policy(tok.get(), g);

    const json &constraints = g["constraints"];
    std::vector<GrammarPtr> grammars(constraints.size());
    for (size_t ci = 0; ci < constraints.size(); ++ci) {
        const json &c = constraints[ci];
        vt_grammar_kind kind{};
        REQUIRE(kind_of(c["kind"].get<std::string>(), kind));
        const std::string src = c["source"].get<std::string>();
        vt_grammar *gr = nullptr;
        st = vt_grammar_compile(tok.get(), kind, kind == VT_GRAMMAR_JSON ? nullptr : src.data(),
                                kind == VT_GRAMMAR_JSON ? 0 : src.size(), &gr);
        grammars[ci].reset(gr);
        if (st != VT_OK) {
            FAIL_CHECK(vocab << " " << c["name"].get<std::string>() << ": vt_grammar_compile: " << vt_status_str(st)
                             << ": " << vt_last_error() << "\nsource:\n" << src);
            continue;
        }
        CHECK(vt_grammar_n_vocab(gr) == g["n_vocab"].get<size_t>());
    }

    size_t ok = 0, n = 0;
    terminated_accepting_differs = 0;
    for (size_t wi = 0; wi < g["walks"].size(); ++wi) {
        const json &w = g["walks"][wi];
        const size_t ci = w["constraint"].get<size_t>();
        if (!grammars[ci]) continue;
        ++n;
        ok += replay(tok.get(), grammars[ci].get(), g, wi, w, constraints[ci]["name"].get<std::string>());
    }
    if (terminated_accepting_differs) {
        FAIL_CHECK(vocab << ": in " << terminated_accepting_differs << " walks, after the end-of-generation token "
                         << "vt_grammar_matcher_is_accepting is false where xgrammar's is_completed() is true "
                         << "(the text before the token is a whole string of the language)");
    }
    INFO(vocab << ": " << ok << " of " << n << " walks equal xgrammar's, " << g["walks"].size() << " recorded");
    CHECK(ok == g["walks"].size());
}

} // namespace

TEST_CASE("grammar masks equal xgrammar's on real vocabularies", "[grammar][oracle]") {
    std::vector<fs::path> files;
    for (const auto &e : fs::directory_iterator(goldens_dir()))
        if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    REQUIRE(!files.empty());
    for (const fs::path &p : files) {
        DYNAMIC_SECTION(p.stem().string()) { run_golden(p); }
    }
}
