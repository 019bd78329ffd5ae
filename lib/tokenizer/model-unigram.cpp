#include "tokenizer/model-unigram.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"
#include "tokenizer/piece-cache.h"
#include "tokenizer/utf8.h"

namespace vt::tok {

namespace {

constexpr double kUnkPenalty = 10.0;
constexpr double kScoreResetThreshold = 100000.0;  // SentencePiece's, see rebase()

} // namespace

// The best path ending at one byte offset of the piece.
struct UnigramModel::BestPath {
    double score;
    int32_t start;  // -1: no path ends here yet
    int32_t id;
};


UnigramModel::UnigramModel(const Vocab &vocab, const UnigramOptions &options)
    : vocab_(vocab), opt_(options), cache_owner_(PieceCache::new_owner()) {
    n_model_ = std::min(opt_.model_vocab_size, vocab.size());
    if (opt_.unk_id >= 0 && static_cast<uint32_t>(opt_.unk_id) >= n_model_) {
        fail(VT_ERR_FORMAT, "Unigram: unk_id %d is not in the vocabulary of %u pieces", opt_.unk_id, n_model_);
    }
    scores_ = std::move(opt_.scores);
    opt_.scores.clear();
    if (scores_.size() < n_model_) {
        const size_t have = scores_.size();
        scores_.resize(n_model_);
        for (size_t id = have; id < n_model_; ++id) scores_[id] = vocab.score(static_cast<int32_t>(id));
    }
    double min_score = std::numeric_limits<double>::infinity();
    for (uint32_t id = 0; id < n_model_; ++id) min_score = std::min(min_score, scores_[id]);
    unk_score_ = min_score - kUnkPenalty;
    if (opt_.float_scores) {
        for (double &x : scores_) x = static_cast<float>(x);
        unk_score_ = static_cast<float>(static_cast<float>(min_score) - static_cast<float>(kUnkPenalty));
    }

    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        byte_id_[b] = find_model(name);
    }

    node_id_.push_back(-1);  // the root
    for (uint32_t id = 0; id < n_model_; ++id) {
        // Control and unused pieces are never matched in text, as in
        // SentencePiece: "<s>" typed by a user stays characters (special
        // added tokens are cut out before the model when parse_special asks).
        if (vocab.attr(static_cast<int32_t>(id)) & (ATTR_CONTROL | ATTR_UNUSED)) continue;
        uint32_t node = 0;
        for (unsigned char c : vocab.text(static_cast<int32_t>(id))) {
            const uint64_t key = uint64_t(node) << 8 | c;
            if (const uint64_t *child = edges_.find(key)) {
                node = static_cast<uint32_t>(*child);
            } else {
                const auto next = static_cast<uint32_t>(node_id_.size());
                node_id_.push_back(-1);
                edges_.set(key, next);
                node = next;
            }
        }
        if (node != 0) node_id_[node] = static_cast<int32_t>(id);
    }
}

// SentencePiece keeps its float path scores near zero: once the score where
// the next pieces start passes 1e5 in magnitude, it is subtracted (in float)
// from every score already set between there and the furthest offset
// reached. That changes which near-ties float rounding breaks, so .model
// files are only reproduced by doing the same.
void UnigramModel::rebase(std::vector<BestPath> &best, uint32_t start, uint32_t max_frontier) const {
    const auto offset = static_cast<float>(best[start].score);
    for (uint32_t i = start; i <= max_frontier && i < best.size(); ++i) {
        if (i == start || best[i].start >= 0) best[i].score = static_cast<float>(best[i].score) - offset;
    }
}

double UnigramModel::add(double a, double b) const {
    // float + float rounded to float, exactly what SentencePiece computes.
    return opt_.float_scores ? static_cast<double>(static_cast<float>(a) + static_cast<float>(b)) : a + b;
}

int32_t UnigramModel::find_model(std::string_view text) const {
    const int32_t id = vocab_.find(text);
    return id >= 0 && static_cast<uint32_t>(id) < n_model_ ? id : -1;
}

void UnigramModel::tokenize(std::string_view piece, std::vector<int32_t> &out) const {
    if (piece.empty()) return;
    tokenize_cached(cache_owner_, piece, out,
                    [this](std::string_view p, std::vector<int32_t> &ids) { encode(p, ids); });
}

// Tokenizers' Unigram::encode_optimized (SentencePiece's EncodeOptimized):
// one forward pass over character starts keeps the best path ending at
// each byte offset; a candidate replaces it only when strictly better.
void UnigramModel::encode(std::string_view piece, std::vector<int32_t> &out) const {
    thread_local std::vector<BestPath> best;
    thread_local std::vector<std::pair<uint32_t, uint32_t>> segments;  // [start, end) backwards
    thread_local std::vector<int32_t> segment_ids;
    const auto *p = reinterpret_cast<const uint8_t *>(piece.data());
    const auto size = static_cast<uint32_t>(piece.size());
    best.assign(size + 1, BestPath{0.0, -1, 0});

    uint32_t max_frontier = 0;  // the furthest offset a path reaches so far
    for (uint32_t start = 0; start < size;) {
        double score_here = best[start].score;
        if (opt_.float_scores && std::fabs(score_here) > kScoreResetThreshold) rebase(best, start, max_frontier);
        score_here = best[start].score;
        const auto char_len = static_cast<uint32_t>(std::min<size_t>(utf8_len(p[start]), size - start));
        bool has_single = false;
        uint32_t node = 0;
        for (uint32_t end = start; end < size;) {
            const uint64_t *child = edges_.find(uint64_t(node) << 8 | p[end]);
            if (!child) break;
            node = static_cast<uint32_t>(*child);
            ++end;
            const int32_t id = node_id_[node];
            if (id < 0) continue;
            max_frontier = std::max(max_frontier, end);
            BestPath &target = best[end];
            const double candidate = add(scores_[id], score_here);
            if (target.start < 0 || candidate > target.score) target = {candidate, int32_t(start), id};
            has_single = has_single || end - start == char_len;
        }
        if (!has_single) {
            max_frontier = std::max(max_frontier, start + char_len);
            BestPath &target = best[start + char_len];
            const double candidate = add(unk_score_, score_here);
            if (target.start < 0 || candidate > target.score) {
                if (opt_.unk_id < 0) {
                    fail(VT_ERR_INVALID_ARGUMENT, "Unigram: the piece has a character with no token and the model "
                         "has no unk_id");
                }
                target = {candidate, int32_t(start), opt_.unk_id};
            }
        }
        start += char_len;
    }

    // Walk back; a run of unk nodes becomes one segment (id -1: look up).
    segments.clear();
    segment_ids.clear();
    for (uint32_t end = size; end > 0;) {
        const BestPath &b = best[end];
        const auto start = static_cast<uint32_t>(b.start);
        if (opt_.unk_id >= 0 && b.id == opt_.unk_id) {
            if (!segment_ids.empty() && segment_ids.back() == -1) {
                segments.back().first = start;
            } else {
                segments.push_back({start, end});
                segment_ids.push_back(-1);
            }
        } else {
            segments.push_back({start, end});
            segment_ids.push_back(b.id);
        }
        end = start;
    }
    for (size_t k = segments.size(); k-- > 0;) {
        if (segment_ids[k] >= 0) {
            out.push_back(segment_ids[k]);
        } else {
            emit_unknown(piece.substr(segments[k].first, segments[k].second - segments[k].first), out);
        }
    }
}

// A fused run of unk nodes: HF maps its text back through the vocabulary
// (it can be a token, e.g. the literal unk text), else bytes, else unk.
void UnigramModel::emit_unknown(std::string_view text, std::vector<int32_t> &out) const {
    if (const int32_t id = find_model(text); id >= 0) {
        out.push_back(id);
        return;
    }
    if (opt_.byte_fallback) {
        bool all = true;
        for (unsigned char c : text) all = all && byte_id_[c] >= 0;
        if (all) {
            for (unsigned char c : text) out.push_back(byte_id_[c]);
            return;
        }
    }
    out.push_back(opt_.unk_id);
}

} // namespace vt::tok
