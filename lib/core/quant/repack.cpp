#include "core/quant/repack.h"

#include <cstring>

#include "core/quant/blocks.h"

namespace vt::quant {

void repack_q4_0_x4(const void *src, size_t src_stride, void *dst, int64_t k, int64_t n_rows) {
    const int64_t nb = k / QK;
    const uint8_t *s = static_cast<const uint8_t *>(src);
    BlockQ4_0x4 *out = static_cast<BlockQ4_0x4 *>(dst);
    for (int64_t g = 0; g < n_rows / 4; ++g)
        for (int64_t b = 0; b < nb; ++b) {
            BlockQ4_0x4 &o = out[g * nb + b];
            for (int r = 0; r < 4; ++r) {
                BlockQ4_0 x;
                std::memcpy(&x, s + (size_t)(4 * g + r) * src_stride + (size_t)b * sizeof x, sizeof x);
                o.d[r] = x.d;
                std::memcpy(o.qs[r], x.qs, sizeof x.qs);
            }
        }
}

void unpack_q4_0_x4(const void *src, void *dst, size_t dst_stride, int64_t k, int64_t n_rows) {
    const int64_t nb = k / QK;
    const BlockQ4_0x4 *in = static_cast<const BlockQ4_0x4 *>(src);
    uint8_t *d = static_cast<uint8_t *>(dst);
    for (int64_t g = 0; g < n_rows / 4; ++g)
        for (int64_t b = 0; b < nb; ++b) {
            const BlockQ4_0x4 &x = in[g * nb + b];
            for (int r = 0; r < 4; ++r) {
                BlockQ4_0 o;
                o.d = x.d[r];
                std::memcpy(o.qs, x.qs[r], sizeof o.qs);
                std::memcpy(d + (size_t)(4 * g + r) * dst_stride + (size_t)b * sizeof o, &o, sizeof o);
            }
        }
}

void unpack_row_q4_0_x4(const void *src, int r, int64_t b0, int64_t n, void *dst) {
    const BlockQ4_0x4 *in = static_cast<const BlockQ4_0x4 *>(src);
    uint8_t *d = static_cast<uint8_t *>(dst);
    for (int64_t b = b0; b < b0 + n; ++b) {
        BlockQ4_0 o;
        o.d = in[b].d[r];
        std::memcpy(o.qs, in[b].qs[r], sizeof o.qs);
        std::memcpy(d + (size_t)(b - b0) * sizeof o, &o, sizeof o);
    }
}

} // namespace vt::quant
