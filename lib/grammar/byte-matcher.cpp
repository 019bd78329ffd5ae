// ByteMatcher (grammar.h): the automaton without a vocabulary.
#include "grammar/grammar-ir.h"
#include "grammar/grammar.h"
#include "grammar/pda.h"

namespace vt::grammar {

struct ByteMatcher::State {
    explicit State(std::shared_ptr<const Grammar> g) : grammar(std::move(g)), pda(*grammar, arena) {}
    std::shared_ptr<const Grammar> grammar;
    StackArena arena;
    Pda pda;
    PdaState cur, next;
};

ByteMatcher::ByteMatcher(std::shared_ptr<const Grammar> grammar) : s_(std::make_unique<State>(std::move(grammar))) {
    reset();
}
ByteMatcher::~ByteMatcher() = default;
ByteMatcher::ByteMatcher(ByteMatcher &&) noexcept = default;
ByteMatcher &ByteMatcher::operator=(ByteMatcher &&) noexcept = default;

void ByteMatcher::reset() {
    s_->arena.clear();
    s_->pda.start(s_->cur);
}

bool ByteMatcher::accept(std::string_view bytes) {
    size_t mark = s_->arena.size();
    PdaState cur = s_->cur;
    for (size_t k = 0; k < bytes.size(); ++k) {
        s_->pda.advance(cur, uint8_t(bytes[k]), s_->next);
        if (s_->next.dead() && !(s_->next.accept && k + 1 == bytes.size())) {
            s_->arena.truncate(mark);
            return false;
        }
        std::swap(cur, s_->next);
    }
    s_->cur = std::move(cur);
    return true;
}

bool ByteMatcher::is_accepting() const { return s_->cur.accept; }
bool ByteMatcher::is_completed() const { return s_->cur.accept && s_->cur.dead(); }

bool gbnf_matches(std::string_view gbnf, std::string_view text) {
    ByteMatcher m(compile_gbnf(gbnf));
    return m.accept(text) && m.is_accepting();
}

} // namespace vt::grammar
