/* vt_sampler.h - choosing the next token from logits.
 *
 * A sampler chain applies its stages in the order they were added to a list
 * of candidates (token, logit) built from the logits, then picks a token with
 * its final stage: greedy (argmax) or dist (a seeded draw from the softmax).
 * A chain is externally synchronized (it holds the RNG and the penalty
 * history). The usual order, as in llama.cpp: penalties, top-k, top-p,
 * min-p, temperature, dist.
 */
#ifndef VT_SAMPLER_H
#define VT_SAMPLER_H

#include "vt_common.h"
#include "vt_grammar.h"
#include "vt_tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vt_sampler vt_sampler;

/* CONSTRUCTOR. An empty chain. */
VT_API vt_status vt_sampler_create(vt_sampler **out);
/* DESTRUCTOR. Accepts NULL. */
VT_API void vt_sampler_destroy(vt_sampler *smpl);

/* Stages. Each returns VT_ERR_INVALID_ARGUMENT for values out of range and
 * VT_ERR_INVALID_STATE if added after a final stage. */
/* Repetition (divides positive logits, multiplies negative ones, as in CTRL),
 * frequency and presence penalties over the last `last_n` accepted tokens
 * (0 = none, -1 = all). repeat 1.0, freq 0.0 and present 0.0 are off. */
VT_API vt_status vt_sampler_add_penalties(vt_sampler *smpl, int32_t last_n,
                                          float repeat, float freq, float present);
/* Keep the k most likely (k <= 0: keep all). */
VT_API vt_status vt_sampler_add_top_k(vt_sampler *smpl, int32_t k);
/* Keep the smallest set whose probability reaches p (1.0: keep all), at least min_keep. */
VT_API vt_status vt_sampler_add_top_p(vt_sampler *smpl, float p, size_t min_keep);
/* Keep tokens with probability >= p * max probability (0.0: keep all), at least min_keep. */
VT_API vt_status vt_sampler_add_min_p(vt_sampler *smpl, float p, size_t min_keep);
/* Divide logits by t; t <= 0 keeps only the most likely token. */
VT_API vt_status vt_sampler_add_temp(vt_sampler *smpl, float t);
/* Since ABI 1.8. Adds bias[i] to the logit of tokens[i] (OpenAI's
 * logit_bias; -INFINITY bans a token). A token listed twice gets both.
 * VT_ERR_INVALID_ARGUMENT for a negative id or a NaN or +inf bias; ids past
 * the logits row are ignored when sampling. */
VT_API vt_status vt_sampler_add_logit_bias(vt_sampler *smpl, const vt_token *tokens,
                                           const float *bias, size_t n);
/* Since ABI 1.8. Removes the tokens the grammar does not allow next
 * (vt_grammar.h). The chain keeps its own matcher of the grammar (which it
 * holds), advanced by vt_sampler_accept and rewound by vt_sampler_reset.
 * Add it before truncating stages (top-k, top-p, min-p), as the server does,
 * so that they see only allowed tokens; a chain has at most one. If no token
 * is allowed (a grammar whose language has no continuation), every
 * end-of-generation token is. */
VT_API vt_status vt_sampler_add_grammar(vt_sampler *smpl, const vt_grammar *grammar);
/* Final: the most likely token. */
VT_API vt_status vt_sampler_add_greedy(vt_sampler *smpl);
/* Final: a draw from the softmax with a seeded RNG (mt19937; same seed, same
 * logits, same draws on every platform). */
VT_API vt_status vt_sampler_add_dist(vt_sampler *smpl, uint32_t seed);

/* METHOD. Picks a token from n_vocab logits. The chain must end in greedy or
 * dist (VT_ERR_INVALID_STATE otherwise). Does not accept the token. */
VT_API vt_status vt_sampler_sample(vt_sampler *smpl, const float *logits,
                                   size_t n_vocab, vt_token *out);

/* METHOD. Records a token in the penalty history (prompt and output tokens)
 * and advances the grammar stage's matcher (output tokens only: a chain with
 * a grammar must not be given the prompt). VT_ERR_INVALID_ARGUMENT, with
 * nothing recorded, if the grammar does not allow the token. */
VT_API vt_status vt_sampler_accept(vt_sampler *smpl, vt_token token);

/* METHOD. Clears the history, rewinds the grammar and reseeds the RNG with
 * its original seed. */
VT_API vt_status vt_sampler_reset(vt_sampler *smpl);

#ifdef __cplusplus
}
#endif

#endif /* VT_SAMPLER_H */
