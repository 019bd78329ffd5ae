// The CPU backend's barrier plan (barriers_after, backends/cpu/node-barriers.cpp):
// a barrier after a node exactly where the next one needs another thread's
// work, and none where each thread reads only its own rows or nothing the
// nodes since the last barrier wrote. The plan is checked node by node on a
// decoder layer's chain; the op tests run every op on 1 and 3 threads.
#include <catch2/catch.hpp>

#include <vector>

#include "core/graph.h"
#include "cpu/cpu-ops.h"

using namespace vt;

namespace {

// barriers_after of g's nodes (bound to arena), with its acts_ready as the
// backend computes them; the scratch a separate buffer.
std::vector<int> plan_of(const Graph &g) {
    const std::vector<Node> &nodes = g.nodes();
    const int n = (int)nodes.size();
    std::vector<uint8_t> uses(n), ready(n), after(n);
    static std::vector<uint8_t> scratch(1 << 20);
    for (int i = 0; i < n; ++i) uses[i] = cpu::work_size(nodes[i], 3) > 0;
    cpu::acts_converted_before(nodes.data(), n, uses.data(), ready.data());
    cpu::barriers_after(nodes.data(), n, ready.data(), scratch.data(), scratch.size(), after.data());
    return std::vector<int>(after.begin(), after.end());
}

struct Arena {
    explicit Arena(Graph &g) : bytes(g.plan() + 64) { g.bind(bytes.data()); }
    std::vector<uint8_t> bytes;
};

RopeParams rope() {
    RopeParams r{};
    r.n_rot = 16;
    r.freq_base = 10000.0f;
    r.freq_scale = 1.0f;
    r.attn_factor = 1.0f;
    return r;
}

} // namespace

TEST_CASE("barrier plan of a decoder layer's chain", "[barriers]") {
    const int64_t E = 64, T = 3;  // 3 tokens: uneven splits over 2 or 3 threads
    Graph g;
    Tensor *x = g.input(DType::F32, {E, T}), *y = g.input(DType::F32, {E, T}), *wn = g.input(DType::F32, {E});
    Tensor *pos = g.input(DType::I32, {T});
    Tensor *wq = g.input(DType::Q8_0, {E, E}), *wk = g.input(DType::Q8_0, {E, 32}), *wv = g.input(DType::Q8_0, {E, 32});
    Tensor *a = g.op<Op::ADD>(DType::F32, {E, T}, {x, y});                         // 0
    Tensor *h = g.op<Op::RMS_NORM>(DType::F32, {E, T}, {a, wn}, {1e-5f});          // 1: a's rows, its own
    Tensor *q = g.op<Op::MUL_MAT>(DType::F32, {E, T}, {wq, h});                    // 2: converts h's own rows
    Tensor *k = g.op<Op::MUL_MAT>(DType::F32, {32, T}, {wk, h});                   // 3: h converted: reads it
    Tensor *v = g.op<Op::MUL_MAT>(DType::F32, {32, T}, {wv, h});                   // 4
    Tensor *qr = g.op<Op::ROPE>(DType::F32, {16, 4, T}, {g.reshape(q, {16, 4, T}), pos, nullptr}, rope());  // 5
    Tensor *kr = g.op<Op::ROPE>(DType::F32, {16, 2, T}, {g.reshape(k, {16, 2, T}), pos, nullptr}, rope());  // 6
    Tensor *s = g.op<Op::ADD>(DType::F32, {E, T}, {g.reshape(qr, {E, T}), a});     // 7: qr's token rows
    Tensor *o = g.op<Op::MUL_MAT>(DType::F32, {E, T}, {wq, s});                    // 8
    Tensor *r = g.op<Op::ADD>(DType::F32, {E, T}, {o, a});                         // 9
    Tensor *kv = g.op<Op::ADD>(DType::F32, {32, T}, {g.reshape(kr, {32, T}), v});  // 10
    Tensor *sc = g.op<Op::SCALE>(DType::F32, {E, T}, {r}, {2.0f});                 // 11: elements, not rows
    // All kept to the end: no tensor's memory reused by a later one (the
    // other case checks reuse).
    for (Tensor *t : {x, y, wn, pos, wq, wk, wv, a, h, q, k, v, qr, kr, s, o, r, kv, sc}) g.mark_output(t);
    Arena arena(g);
    const std::vector<int> got = plan_of(g);
    // 4: ROPE reads all of q's columns, which every thread wrote;
    // 8: r reads o's columns; 9: kv reads v, written before the last barrier
    // (none needed), but r's rows and SCALE's elements split apart: 10 -> 11.
    const std::vector<int> want = {0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 0};
    CHECK(got == want);
}

TEST_CASE("barrier plan: memory reused, scratch shared, unknown ops", "[barriers]") {
    const int64_t E = 64, T = 2;
    Graph g;
    Tensor *x = g.input(DType::F32, {E, T}), *y = g.input(DType::F32, {E, T}), *z = g.input(DType::F32, {E, T});
    Tensor *w = g.input(DType::Q8_0, {E, E}), *w2 = g.input(DType::Q8_0, {E, E});
    Tensor *a = g.op<Op::MUL_MAT>(DType::F32, {E, T}, {w, x});   // 0
    Tensor *b = g.op<Op::MUL_MAT>(DType::F32, {E, T}, {w2, y});  // 1: converts other rows into the scratch
    Tensor *c = g.op<Op::ADD>(DType::F32, {E, T}, {z, z});       // 2
    Tensor *d = g.op<Op::CPY>(DType::F32, {E, T}, {c});          // 3: not described: barriers both sides
    Tensor *e = g.op<Op::ADD>(DType::F32, {E, T}, {d, d});       // 4
    Tensor *f = g.op<Op::ADD>(DType::F32, {E, T}, {z, z});       // 5: made to write over x below
    for (Tensor *t : {x, y, z, w, w2, a, b, c, d, e, f}) g.mark_output(t);
    Arena arena(g);
    const_cast<Tensor *>(g.nodes()[5].dst)->data = x->data;  // 5 writes what 0 read (write after read)
    const std::vector<int> got = plan_of(g);
    // 0 -> 1: the second conversion overwrites the scratch the first
    // product reads; 1 -> 2: nothing shared; 2 -> 3 -> 4: CPY; 4 -> 5: x,
    // read by node 0 before the barrier after 3: no barrier.
    CHECK(got == std::vector<int>{1, 0, 1, 1, 0, 0});
    // Node 2 writing where node 1's threads write their columns (write after
    // write), and where node 1 read its input before its own barrier (none).
    const_cast<Tensor *>(g.nodes()[2].dst)->data = b->data;
    CHECK(plan_of(g)[1] == 1);
    const_cast<Tensor *>(g.nodes()[2].dst)->data = y->data;
    CHECK(plan_of(g)[1] == 0);
}
