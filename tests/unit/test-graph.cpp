// Graph memory planning: tensors alive at the same time never share bytes,
// sources of a node never alias its output, and reuse keeps the arena far
// below the sum of all intermediates.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "core/graph.h"

using namespace vt;

namespace {
struct Span {
    const uint8_t *b, *e;
};
bool overlap(Span x, Span y) { return x.b < y.e && y.b < x.e; }
Span span(const Tensor *t) {
    const uint8_t *b = static_cast<const uint8_t *>(t->data);
    return {b, b + t->nbytes()};
}
} // namespace

TEST_CASE("graph plan reuses memory without overlapping live tensors") {
    Graph g;
    Tensor *in = g.input(DType::I32, {8}, "ids");
    Tensor weight;
    std::vector<float> wdata(64 * 100);
    tensor_init(weight, DType::F32, 64, 100, 1, 1, wdata.data(), "w");
    Tensor *x = g.op<Op::GET_ROWS>(DType::F32, {64, 8}, {&weight, in});
    size_t sum = 0;
    for (int layer = 0; layer < 20; ++layer) {
        Tensor *h = g.op<Op::RMS_NORM>(DType::F32, {64, 8}, {x, &weight}, {1e-5f});
        Tensor *a = g.op<Op::SWIGLU>(DType::F32, {64, 8}, {h, h});
        x = g.op<Op::ADD>(DType::F32, {64, 8}, {x, a});
        sum += 3 * 64 * 8 * sizeof(float);
    }
    g.mark_output(x);
    size_t need = g.plan();
    REQUIRE(need > 0);
    CHECK(need < sum / 4);
    std::vector<uint8_t> arena(need);
    g.bind(arena.data());

    // Liveness by node index: a tensor is live from its definition to its
    // last reader; check every pair of simultaneously live tensors.
    const auto &nodes = g.nodes();
    std::vector<const Tensor *> defined;
    std::vector<int> def, last;
    auto index_of = [&](const Tensor *t) {
        for (size_t i = 0; i < defined.size(); ++i)
            if (defined[i] == t) return (int)i;
        return -1;
    };
    defined.push_back(in);
    def.push_back(-1);
    last.push_back(-1);
    for (size_t n = 0; n < nodes.size(); ++n) {
        for (const Tensor *s : nodes[n].src) {
            int i = s ? index_of(s) : -1;
            if (i >= 0) last[i] = (int)n;
        }
        defined.push_back(nodes[n].dst);
        def.push_back((int)n);
        last.push_back((int)n);
    }
    last[index_of(x)] = (int)nodes.size();
    for (size_t i = 0; i < defined.size(); ++i) {
        for (size_t j = i + 1; j < defined.size(); ++j) {
            bool live_together = def[j] <= last[i] && def[i] <= last[j];
            if (live_together) {
                INFO("tensors " << i << " and " << j);
                CHECK_FALSE(overlap(span(defined[i]), span(defined[j])));
            }
        }
    }
}

TEST_CASE("graph reset keeps the same plan for the same shape") {
    Graph g;
    auto build = [&] {
        g.reset();
        Tensor *a = g.input(DType::F32, {16, 4});
        Tensor *b = g.op<Op::ADD>(DType::F32, {16, 4}, {a, a});
        Tensor *c = g.op<Op::ADD>(DType::F32, {16, 4}, {b, a});
        g.mark_output(c);
        return g.plan();
    };
    size_t first = build();
    CHECK(build() == first);
}

TEST_CASE("a view keeps its base alive while it is read") {
    // b is read only through a reshaped view by the last node: its bytes must
    // not be given to the tensors made in between.
    Graph g;
    Tensor *a = g.input(DType::F32, {16, 4});
    Tensor *b = g.op<Op::ADD>(DType::F32, {16, 4}, {a, a});
    Tensor *bv = g.reshape(b, {4, 4, 4});
    Tensor *c = g.op<Op::SCALE>(DType::F32, {16, 4}, {a}, {2.0f});
    Tensor *d = g.op<Op::SCALE>(DType::F32, {16, 4}, {c}, {2.0f});
    Tensor *e = g.op<Op::ADD>(DType::F32, {4, 4, 4}, {bv, g.reshape(d, {4, 4, 4})});
    g.mark_output(e);
    std::vector<uint8_t> arena(g.plan());
    g.bind(arena.data());
    CHECK(bv->data == b->data);
    CHECK(bv->ne[0] == 4);
    CHECK(bv->ne[2] == 4);
    CHECK(bv->nb[1] == 16);
    CHECK(bv->nb[2] == 64);
    CHECK_FALSE(overlap(span(b), span(c)));
    CHECK_FALSE(overlap(span(b), span(d)));
    CHECK_FALSE(overlap(span(b), span(e)));

    // A strided view of borrowed memory points into it at once.
    std::vector<float> mem(64);
    Tensor w;
    tensor_init(w, DType::F32, 16, 4, 1, 1, mem.data(), "w");
    Tensor *cols = g.view(&w, {8, 4}, {64}, 8 * sizeof(float));
    CHECK(cols->data == mem.data() + 8);
    CHECK_FALSE(cols->is_contiguous());
}
