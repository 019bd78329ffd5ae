// Hugging Face pre-tokenizers (tokenizers/src/pre_tokenizers); patterns
// come from hf-regex.h, shared with the Replace normalizer.
//
// Every pre-tokenizer here splits each incoming piece independently, as
// PreTokenizedString::split does, so they share one core: a piece is
// described by "events" (spans flagged match / non-match that cover it,
// what HF's Pattern::find_matches returns), a SplitDelimiterBehavior turns
// them into pieces, and empty pieces are dropped. Scratch vectors are per
// thread, so the hot path allocates only while buffers first grow.
#include "tokenizer/pipeline.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/byte-level.h"
#include "tokenizer/hf-json.h"
#include "tokenizer/hf-regex.h"
#include "tokenizer/hf-unicode.h"
#include "tokenizer/utf8.h"

namespace vt::tok {
namespace {

using hf::json;

// ---------------------------------------------------------------------------
// The split core
// ---------------------------------------------------------------------------

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

Behavior parse_behavior(const json &j, const char *where, Behavior def) {
    const json *v = hf::optional_member(j, "behavior");
    if (!v) return def;
    if (!v->is_string()) fail(VT_ERR_FORMAT, "%s: field \"behavior\" is not a string", where);
    const std::string &s = v->get_ref<const std::string &>();
    if (s == "Removed") return Behavior::Removed;
    if (s == "Isolated") return Behavior::Isolated;
    if (s == "MergedWithPrevious") return Behavior::MergedWithPrevious;
    if (s == "MergedWithNext") return Behavior::MergedWithNext;
    if (s == "Contiguous") return Behavior::Contiguous;
    fail(VT_ERR_FORMAT, "%s: unknown behavior \"%s\"", where, s.c_str());
}

struct Event {
    uint32_t begin, end;
    bool flag;  // is_match in events; "remove" once a behavior applied
};

struct Scratch {
    std::vector<Span> matches;
    std::vector<Event> events;
    std::vector<Event> splits;
    std::string text;
};

Scratch &scratch() {
    thread_local Scratch s;
    return s;
}

constexpr size_t kNone = static_cast<size_t>(-1);

// HF find_matches for a regex or literal: the gaps between matches become
// non-match events.
void events_from_pattern(const hf::Pattern &pat, std::string_view piece, bool invert,
                         std::vector<Event> &ev) {
    ev.clear();
    if (piece.empty()) {
        ev.push_back({0, 0, invert});
        return;
    }
    auto &m = scratch().matches;
    m.clear();
    pat.find_all(piece, m);
    uint32_t prev = 0;
    for (const Span &s : m) {
        if (s.begin != prev) ev.push_back({prev, s.begin, invert});
        ev.push_back({s.begin, s.begin + s.len, !invert});
        prev = s.begin + s.len;
    }
    if (prev != piece.size()) ev.push_back({prev, static_cast<uint32_t>(piece.size()), invert});
}

// HF find_matches for a `Fn(char) -> bool` pattern: every matching
// character is its own match.
template <class Pred>
void events_from_predicate(std::string_view piece, Pred &&pred, std::vector<Event> &ev) {
    ev.clear();
    if (piece.empty()) {
        ev.push_back({0, 0, false});
        return;
    }
    uint32_t last = 0;
    hf::for_each_cpt(piece, [&](uint32_t c, size_t at, size_t len) {
        if (!pred(c)) return;
        const auto b = static_cast<uint32_t>(at);
        if (last < b) ev.push_back({last, b, false});
        ev.push_back({b, static_cast<uint32_t>(at + len), true});
        last = static_cast<uint32_t>(at + len);
    });
    if (last < piece.size()) ev.push_back({last, static_cast<uint32_t>(piece.size()), false});
}

// NormalizedString::split: applies the behavior to the events and appends
// the surviving non-empty pieces. Returns the offset within `piece` of the
// first piece appended, or kNone.
size_t emit_split(std::string_view piece, const std::vector<Event> &ev, Behavior beh, Pieces &out) {
    auto &sp = scratch().splits;
    sp.clear();
    bool prev_match = false;
    switch (beh) {
    case Behavior::Isolated:
        for (const Event &e : ev) sp.push_back({e.begin, e.end, false});
        break;
    case Behavior::Removed:
        sp = ev;
        break;
    case Behavior::Contiguous:
        for (const Event &e : ev) {
            if (e.flag == prev_match && !sp.empty()) sp.back().end = e.end;
            else sp.push_back({e.begin, e.end, false});
            prev_match = e.flag;
        }
        break;
    case Behavior::MergedWithPrevious:
        for (const Event &e : ev) {
            if (e.flag && !prev_match && !sp.empty()) sp.back().end = e.end;
            else sp.push_back({e.begin, e.end, false});
            prev_match = e.flag;
        }
        break;
    case Behavior::MergedWithNext:
        for (size_t i = ev.size(); i-- > 0;) {
            const Event &e = ev[i];
            if (e.flag && !prev_match && !sp.empty()) sp.back().begin = e.begin;
            else sp.push_back({e.begin, e.end, false});
            prev_match = e.flag;
        }
        std::reverse(sp.begin(), sp.end());
        break;
    }
    size_t first = kNone;
    for (const Event &s : sp) {
        if (s.flag || s.end == s.begin) continue;
        if (first == kNone) first = s.begin;
        out.push(piece.substr(s.begin, s.end - s.begin));
    }
    return first;
}

// ---------------------------------------------------------------------------
// Steps
// ---------------------------------------------------------------------------

// Every step also reports whether out[0] still begins at the user's byte 0,
// as HF's offsets_original().0 == 0 would say of it, so that a Sequence can
// hand the next step (Metaspace "first") the right answer after a step that
// removed leading text.
class Step : public PreTokenizeStep {
public:
    void apply(const Pieces &in, bool at_origin, Pieces &out) const final { run(in, at_origin, out); }
    virtual bool run(const Pieces &in, bool at_origin, Pieces &out) const = 0;
};

// A step that rewrites each piece on its own.
class PieceStep : public Step {
public:
    bool run(const Pieces &in, bool at_origin, Pieces &out) const final {
        bool first_at_origin = false;
        for (size_t i = 0; i < in.size(); ++i) {
            const size_t before = out.size();
            const size_t first = split_piece(in[i], at_origin && i == 0, out);
            if (before == 0 && out.size() > 0) first_at_origin = at_origin && i == 0 && first == 0;
        }
        return first_at_origin;
    }
    // Appends the pieces `piece` becomes; returns the offset in `piece` of
    // the first one (0 when text was only added before it), or kNone.
    virtual size_t split_piece(std::string_view piece, bool at_origin, Pieces &out) const = 0;
};

constexpr const char *kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// The GPT-2 alphabet as byte -> (length, UTF-8 bytes), for the hot loop.
struct ByteAlphabet {
    uint8_t len[256];
    char bytes[256][2];
    ByteAlphabet() {
        for (int b = 0; b < 256; ++b) {
            const std::string &u = byte_to_unicode(static_cast<uint8_t>(b));
            len[b] = static_cast<uint8_t>(u.size());
            bytes[b][0] = u[0];
            bytes[b][1] = u.size() > 1 ? u[1] : 0;
        }
    }
    void append(std::string &buf, std::string_view s) const {
        const size_t at = buf.size();
        buf.resize(at + 2 * s.size());
        char *p = buf.data() + at;
        for (unsigned char c : s) {
            p[0] = bytes[c][0];
            p[1] = bytes[c][1];
            p += len[c];
        }
        buf.resize(static_cast<size_t>(p - buf.data()));
    }
};

const ByteAlphabet &byte_alphabet() {
    static const ByteAlphabet a;
    return a;
}

class ByteLevelStep : public PieceStep {
public:
    ByteLevelStep(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space) {
        if (use_regex) regex_ = hf::Pattern::regex(kGpt2Pattern);
    }
    size_t split_piece(std::string_view piece, bool, Pieces &out) const override {
        if (add_prefix_space_ && (piece.empty() || piece[0] != ' ')) {
            std::string &t = scratch().text;
            t.assign(1, ' ');
            t.append(piece);
            piece = t;
        }
        const ByteAlphabet &alpha = byte_alphabet();
        if (!regex_) {
            emit(alpha, piece, out);
            return 0;
        }
        auto &m = scratch().matches;
        m.clear();
        regex_->find_all(piece, m);
        // Isolated: matches and the gaps between them are all pieces.
        uint32_t prev = 0;
        for (const Span &s : m) {
            if (s.begin > prev) emit(alpha, piece.substr(prev, s.begin - prev), out);
            if (s.len) emit(alpha, piece.substr(s.begin, s.len), out);
            prev = s.begin + s.len;
        }
        if (prev < piece.size()) emit(alpha, piece.substr(prev), out);
        return 0;
    }

private:
    static void emit(const ByteAlphabet &alpha, std::string_view s, Pieces &out) {
        if (s.empty()) return;
        const auto begin = static_cast<uint32_t>(out.buf.size());
        alpha.append(out.buf, s);
        out.spans.push_back({begin, static_cast<uint32_t>(out.buf.size() - begin)});
    }

    bool add_prefix_space_;
    std::unique_ptr<hf::Pattern> regex_;
};

class SplitStep : public PieceStep {
public:
    SplitStep(std::unique_ptr<hf::Pattern> pat, Behavior beh, bool invert)
        : pat_(std::move(pat)), beh_(beh), invert_(invert) {}
    size_t split_piece(std::string_view piece, bool, Pieces &out) const override {
        auto &ev = scratch().events;
        events_from_pattern(*pat_, piece, invert_, ev);
        return emit_split(piece, ev, beh_, out);
    }

private:
    std::unique_ptr<hf::Pattern> pat_;
    Behavior beh_;
    bool invert_;
};

// Splits on characters that satisfy a predicate (WhitespaceSplit,
// Punctuation, Digits, CharDelimiterSplit, Bert's two passes).
template <class Pred> class PredicateStep : public PieceStep {
public:
    PredicateStep(Pred pred, Behavior beh) : pred_(pred), beh_(beh) {}
    size_t split_piece(std::string_view piece, bool, Pieces &out) const override {
        auto &ev = scratch().events;
        events_from_predicate(piece, pred_, ev);
        return emit_split(piece, ev, beh_, out);
    }

private:
    Pred pred_;
    Behavior beh_;
};

template <class Pred> std::unique_ptr<Step> make_predicate_step(Pred pred, Behavior beh) {
    return std::make_unique<PredicateStep<Pred>>(pred, beh);
}

enum class Prepend { Always, First, Never };

class MetaspaceStep : public PieceStep {
public:
    MetaspaceStep(uint32_t replacement, Prepend prepend, bool split) : prepend_(prepend), split_(split) {
        utf8_append(rep_, replacement);
    }
    size_t split_piece(std::string_view piece, bool at_origin, Pieces &out) const override {
        // Spaces become the replacement; then (split) every replacement
        // starts a new piece (MergedWithNext on the replacement character).
        const bool starts_with_rep = !piece.empty() && (piece[0] == ' ' || piece.substr(0, rep_.size()) == rep_);
        const bool prepend = !starts_with_rep &&
            (prepend_ == Prepend::Always || (prepend_ == Prepend::First && at_origin));
        uint32_t begin = static_cast<uint32_t>(out.buf.size());
        if (prepend) out.buf += rep_;
        size_t i = 0;
        while (i < piece.size()) {
            const bool space = piece[i] == ' ';
            const bool rep = !space && piece.compare(i, rep_.size(), rep_) == 0;
            if ((space || rep) && split_ && out.buf.size() > begin) {
                out.spans.push_back({begin, static_cast<uint32_t>(out.buf.size() - begin)});
                begin = static_cast<uint32_t>(out.buf.size());
            }
            if (space) {
                out.buf += rep_;
                ++i;
            } else if (rep) {
                out.buf += rep_;
                i += rep_.size();
            } else {
                out.buf.push_back(piece[i++]);
            }
        }
        if (out.buf.size() > begin) out.spans.push_back({begin, static_cast<uint32_t>(out.buf.size() - begin)});
        return 0;
    }

private:
    std::string rep_;
    Prepend prepend_;
    bool split_;
};

class FixedLengthStep : public PieceStep {
public:
    explicit FixedLengthStep(size_t length) : length_(length) {}
    size_t split_piece(std::string_view piece, bool, Pieces &out) const override {
        if (length_ == 0) {  // HF keeps the piece whole
            if (!piece.empty()) out.push(piece);
            return piece.empty() ? kNone : 0;
        }
        size_t start = 0, chars = 0, i = 0;
        while (i < piece.size()) {
            i += utf8_len(static_cast<uint8_t>(piece[i]));
            if (++chars == length_) {
                out.push(piece.substr(start, i - start));
                start = i;
                chars = 0;
            }
        }
        if (i > start) out.push(piece.substr(start, i - start));
        return piece.empty() ? kNone : 0;
    }

private:
    size_t length_;
};

// Intermediate pieces of a Sequence, reused per thread (and per nesting
// depth, since a Sequence may hold a Sequence).
class PiecesPool {
public:
    Pieces *acquire() {
        if (free_.empty()) {
            owned_.push_back(std::make_unique<Pieces>());
            return owned_.back().get();
        }
        Pieces *p = free_.back();
        free_.pop_back();
        p->clear();
        return p;
    }
    void release(Pieces *p) { free_.push_back(p); }

private:
    std::vector<std::unique_ptr<Pieces>> owned_;
    std::vector<Pieces *> free_;
};

PiecesPool &pieces_pool() {
    thread_local PiecesPool pool;
    return pool;
}

class SequenceStep : public Step {
public:
    explicit SequenceStep(std::vector<std::unique_ptr<Step>> steps) : steps_(std::move(steps)) {}
    bool run(const Pieces &in, bool at_origin, Pieces &out) const override {
        if (steps_.empty()) {
            out = in;
            return at_origin;
        }
        PiecesPool &pool = pieces_pool();
        Pieces *a = pool.acquire(), *b = pool.acquire();
        const Pieces *cur = &in;
        for (size_t k = 0; k < steps_.size(); ++k) {
            Pieces *dst = k + 1 == steps_.size() ? &out : (cur == a ? b : a);
            dst->clear();
            at_origin = steps_[k]->run(*cur, at_origin, *dst);
            cur = dst;
        }
        pool.release(b);
        pool.release(a);
        return at_origin;
    }

private:
    std::vector<std::unique_ptr<Step>> steps_;
};

// Whitespace: \w+|[^\w\s]+ kept, the rest removed. HF compiles this one
// with the regex crate, whose \w (UTS #18) differs from Oniguruma's.
std::unique_ptr<Step> make_whitespace() {
    return std::make_unique<SplitStep>(
        hf::Pattern::pcre2(R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]+)"
                           R"(|[^\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}\p{White_Space}]+)"),
        Behavior::Removed, true);
}

std::unique_ptr<Step> make_step(const json &j) {
    if (!j.is_object()) fail(VT_ERR_FORMAT, "pre_tokenizer: node is not an object");
    const std::string type = hf::type_of(j, "pre_tokenizer");
    const std::string where_s = "pre_tokenizer " + type;
    const char *where = where_s.c_str();

    if (type == "ByteLevel") {
        return std::make_unique<ByteLevelStep>(hf::bool_member(j, "add_prefix_space", where, true),
                                               hf::bool_member(j, "use_regex", where, true));
    }
    if (type == "Split") {
        return std::make_unique<SplitStep>(hf::Pattern::from_json(hf::member(j, "pattern", where), where),
                                           parse_behavior(j, where, Behavior::Removed),
                                           hf::bool_member(j, "invert", where, false));
    }
    if (type == "Metaspace") {
        const uint32_t rep = hf::char_member(j, "replacement", where, 0x2581);
        Prepend scheme = Prepend::Always;
        if (const json *ps = hf::optional_member(j, "prepend_scheme")) {
            const std::string s = ps->is_string() ? ps->get<std::string>() : "";
            if (s == "always") scheme = Prepend::Always;
            else if (s == "first") scheme = Prepend::First;
            else if (s == "never") scheme = Prepend::Never;
            else fail(VT_ERR_FORMAT, "%s: unknown prepend_scheme", where);
        } else if (!hf::bool_member(j, "add_prefix_space", where, true)) {
            scheme = Prepend::Never;  // the legacy field
        }
        return std::make_unique<MetaspaceStep>(rep, scheme, hf::bool_member(j, "split", where, true));
    }
    if (type == "Whitespace") return make_whitespace();
    if (type == "WhitespaceSplit") return make_predicate_step(hf::is_white_space, Behavior::Removed);
    if (type == "Punctuation")
        return make_predicate_step(hf::is_punctuation, parse_behavior(j, where, Behavior::Isolated));
    if (type == "Digits") {
        const bool individual = hf::bool_member(j, "individual_digits", where, false);
        return make_predicate_step(hf::is_numeric, individual ? Behavior::Isolated : Behavior::Contiguous);
    }
    if (type == "CharDelimiterSplit") {
        const uint32_t d = hf::char_member(j, "delimiter", where, 0);
        if (!hf::optional_member(j, "delimiter")) fail(VT_ERR_FORMAT, "%s: missing field \"delimiter\"", where);
        return make_predicate_step([d](uint32_t c) { return c == d; }, Behavior::Removed);
    }
    if (type == "BertPreTokenizer") {
        std::vector<std::unique_ptr<Step>> steps;
        steps.push_back(make_predicate_step(hf::is_white_space, Behavior::Removed));
        steps.push_back(make_predicate_step(hf::is_punctuation, Behavior::Isolated));
        return std::make_unique<SequenceStep>(std::move(steps));
    }
    if (type == "FixedLength") return std::make_unique<FixedLengthStep>(hf::uint_member(j, "length", where, 5));
    if (type == "Sequence") {
        const json &list = hf::member(j, "pretokenizers", where);
        if (!list.is_array()) fail(VT_ERR_FORMAT, "%s: field \"pretokenizers\" is not an array", where);
        std::vector<std::unique_ptr<Step>> steps;
        for (const json &s : list) steps.push_back(make_step(s));
        return std::make_unique<SequenceStep>(std::move(steps));
    }
    fail(VT_ERR_UNSUPPORTED, "pre_tokenizer type \"%s\" is not supported", type.c_str());
}

} // namespace

std::unique_ptr<PreTokenizeStep> make_pre_tokenizer(const nlohmann::json &j) {
    if (j.is_null()) return nullptr;
    try {
        return make_step(j);
    } catch (const nlohmann::json::exception &e) {
        fail(VT_ERR_FORMAT, "pre_tokenizer: malformed node: %s", e.what());
    }
}

} // namespace vt::tok
