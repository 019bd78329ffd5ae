#include "models/mtp-head.h"

#include <string>

namespace vt {

MtpHead load_mtp_head(Model &m, uint32_t il, const Tensor *tok_embd, const Tensor *output,
                      const Tensor *output_norm) {
    const int64_t E = m.hparams.n_embd, V = m.hparams.n_vocab;
    const std::string p = "blk." + std::to_string(il) + ".nextn.";
    MtpHead h;
    h.eh_proj = m.matmul_weight(p + "eh_proj.weight", {2 * E, E});
    h.enorm = load_norm(m, p + "enorm.weight", E);
    h.hnorm = load_norm(m, p + "hnorm.weight", E);
    h.head_norm = load_norm(m, p + "shared_head_norm.weight", E, false);
    if (!h.head_norm) h.head_norm = output_norm;
    h.embd = m.gguf().find_tensor(p + "embed_tokens.weight") ? m.embedding_weight(p + "embed_tokens.weight", {E, V})
                                                             : tok_embd;
    h.head = m.gguf().find_tensor(p + "shared_head_head.weight")
                 ? m.matmul_weight(p + "shared_head_head.weight", {E, V}) : output;
    return h;
}

Tensor *mtp_block_input(LayerBuilder &b, const MtpHead &h) {
    Graph &g = b.graph();
    const int64_t E = b.model().hparams.n_embd, n = b.n_tokens();
    Tensor *e = b.rms_norm(b.embed(h.embd), h.enorm);
    Tensor *hid = b.rms_norm(b.args().hidden_in, h.hnorm);
    return b.linear(h.eh_proj, g.op<Op::CONCAT>(DType::F32, {2 * E, n}, {e, hid}));
}

} // namespace vt
