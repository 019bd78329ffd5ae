// A tokenizer that ends generation at more ids than its own files say:
// generation_config.json often lists several (Llama 3's <|eot_id|> and
// <|end_of_text|>, Gemma's <end_of_turn>), while tokenizer files name one.
#include <algorithm>

#include "tokenizer/tokenizer.h"

namespace vt {

namespace {
class ExtraEog final : public Tokenizer {
public:
    ExtraEog(std::unique_ptr<Tokenizer> base, std::vector<int32_t> ids) : base_(std::move(base)), ids_(std::move(ids)) {}
    std::vector<int32_t> encode(std::string_view text, bool add_special, const SpecialGate &specials) const override {
        return base_->encode(text, add_special, specials);
    }
    std::string token_to_piece(int32_t id, bool render_special) const override {
        return base_->token_to_piece(id, render_special);
    }
    std::string decode(const int32_t *ids, size_t n, bool render_special) const override {
        return base_->decode(ids, n, render_special);
    }
    uint32_t n_vocab() const override { return base_->n_vocab(); }
    int32_t bos() const override { return base_->bos(); }
    int32_t eos() const override { return base_->eos() >= 0 ? base_->eos() : ids_.front(); }
    bool is_eog(int32_t id) const override {
        return base_->is_eog(id) || std::find(ids_.begin(), ids_.end(), id) != ids_.end();
    }

private:
    std::unique_ptr<Tokenizer> base_;
    std::vector<int32_t> ids_;
};
} // namespace

std::unique_ptr<Tokenizer> with_end_of_generation(std::unique_ptr<Tokenizer> base, std::vector<int32_t> ids) {
    if (ids.empty()) return base;
    return std::make_unique<ExtraEog>(std::move(base), std::move(ids));
}

} // namespace vt
