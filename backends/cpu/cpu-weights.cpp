#include "cpu-weights.h"

#include "core/threadpool.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/repack.h"

namespace vt::cpu {

namespace {
// Repacking copies every weight once and faults in the copy's pages: a large
// matrix splits its 16-row groups over a few threads (loading the 1B shape
// in BF16, alternating builds: 1.3-1.9 s with 2 threads, 3.6-4.7 s with 1).
void repack_parallel(DType type, const uint8_t *src, size_t stride, uint8_t *dst, int64_t k, int64_t n_rows) {
    const size_t row = row_bytes(type, k);
    const int64_t groups = n_rows / 16;
    const int n = load_parts_for((size_t)n_rows * row, (size_t)8 << 20);
    run_load_parts(n, [&](int i) {
        const int64_t g0 = groups * i / n, g1 = groups * (i + 1) / n;
        if (g1 > g0)
            quant::repack_x16(type, src + (size_t)(16 * g0) * stride, stride, dst + (size_t)(16 * g0) * row, k,
                              16 * (g1 - g0));
    });
}
} // namespace

vt_status prepare_weight(vt_buffer_type *, Tensor *t, vt_buffer **out) {
    *out = nullptr;
    const int slot = quant::x16_slot(t->type);
    // A 3-D weight (MUL_MAT_ID's experts, contiguous) is its ne[2] matrices
    // one after the other: whole groups of 16 rows never cross two of them.
    if (t->layout != 0 || slot < 0 || t->ne[3] != 1 || !t->is_contiguous() ||
        !quant::x16_fits(t->type, t->ne[0], t->ne[1]) || !quant::active_kernels().gemm[slot])
        return VT_OK;  // no faster layout for it: read as stored
    // Page memory offered to huge pages (core/pages.h): decode streams it.
    std::unique_ptr<PageBuffer> pages = PageBuffer::allocate(t->nbytes());
    if (!pages) return VT_ERR_OUT_OF_MEMORY;
    repack_parallel(t->type, static_cast<const uint8_t *>(t->data), t->nb[1], pages->data(), t->ne[0],
                    t->ne[1] * t->ne[2]);
    uint8_t *mem = pages->data();
    vt_buffer *b = wrap_pages(std::move(pages));
    if (!b) return VT_ERR_OUT_OF_MEMORY;
    tensor_init(*t, t->type, t->ne[0], t->ne[1], t->ne[2], 1, mem, t->name);
    t->buffer = b;
    t->layout = quant::kLayoutX16;
    *out = b;
    return VT_OK;
}

} // namespace vt::cpu
