// GGUF reader tests: a hand-built file parsed exactly, corrupt variants that
// must throw VT_ERR_FORMAT/UNSUPPORTED with an offset, every truncation, the
// typed getters and to_string, and the real vocab files and model when present.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <unistd.h>
#include <vector>

#include "common/gguf-writer.h"
#include "core/error.h"
#include "model/gguf.h"
#include "../common/test-env.h"
#include "common/skip.h"

namespace fs = std::filesystem;
using vt::GgufFile;
using vt::GgufType;

namespace {

using vt::test::Writer;  // tests/common/gguf-writer.h

struct TensorSpec {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t type;
    uint64_t offset;
    size_t nbytes;
};

// The reference file: every value type, arrays, 3 tensors, alignment 64.
// Offsets of interesting fields are recorded so corrupt variants can patch them.
struct Sample {
    std::vector<uint8_t> bytes;
    size_t version_at = 0, n_tensors_at = 0, n_kv_at = 0;
    size_t bool_value_at = 0, str_len_at = 0, type_at_u8 = 0, arr_type_at = 0, arr_n_at = 0;
    size_t align_value_at = 0, align_type_at = 0, bool_arr_at = 0, str_arr_n_at = 0;
    size_t first_key_at = 0, second_key_at = 0;
    size_t t0_at = 0, t0_ndims_at = 0, t0_dim0_at = 0, t0_dim1_at = 0, t0_type_at = 0, t0_offset_at = 0;
    size_t t1_name_at = 0, t2_name_at = 0, t1_offset_at = 0, t2_offset_at = 0, t2_dim0_at = 0;
    size_t data_at = 0;
};

const std::vector<TensorSpec> kTensors = {
    {"tok.weight", {32, 3}, 8, 0, 3 * 34},       // Q8_0: 3 blocks of 34 bytes
    {"norm.weight", {5}, 0, 128, 20},            // F32 x5
    {"out.weight", {4, 2, 2}, 1, 192, 32},       // F16 x16
};

Sample make_sample(uint32_t version = 3) {
    Sample s;
    Writer w;
    w.magic();
    s.version_at = w.size();
    w.u32(version);
    s.n_tensors_at = w.size();
    w.u64(kTensors.size());
    s.n_kv_at = w.size();
    w.u64(19);
    s.first_key_at = w.size();
    w.key("general.architecture", GgufType::STRING).str("llama");
    s.second_key_at = w.size();
    s.type_at_u8 = w.size() + 8 + 4;
    w.key("k.u8", GgufType::UINT8).u8(200);
    w.key("k.i8", GgufType::INT8).put<int8_t>(-5);
    w.key("k.u16", GgufType::UINT16).put<uint16_t>(65535);
    w.key("k.i16", GgufType::INT16).put<int16_t>(-300);
    w.key("k.u32", GgufType::UINT32).u32(4000000000u);
    w.key("k.i32", GgufType::INT32).put<int32_t>(-70000);
    w.key("k.f32", GgufType::FLOAT32).put<float>(0.1f);
    w.key("k.bool", GgufType::BOOL);
    s.bool_value_at = w.size();
    w.u8(1);
    w.key("k.u64", GgufType::UINT64).u64(UINT64_MAX);
    w.key("k.i64", GgufType::INT64).put<int64_t>(INT64_MIN);
    w.key("k.f64", GgufType::FLOAT64).put<double>(-2.5);
    w.key("k.str", GgufType::STRING);
    s.str_len_at = w.size();
    w.str("tab\there \"q\"");
    w.key("k.arr_i32", GgufType::ARRAY);
    s.arr_type_at = w.size();
    w.u32((uint32_t)GgufType::INT32);
    s.arr_n_at = w.size();
    w.u64(3).put<int32_t>(1).put<int32_t>(-2).put<int32_t>(3);
    w.key("k.arr_str", GgufType::ARRAY).u32((uint32_t)GgufType::STRING);
    s.str_arr_n_at = w.size();
    w.u64(3).str("a").str("b\"\n").str("");
    w.key("k.arr_f32", GgufType::ARRAY).u32((uint32_t)GgufType::FLOAT32).u64(2).put<float>(1.5f).put<float>(-0.25f);
    w.key("k.arr_bool", GgufType::ARRAY).u32((uint32_t)GgufType::BOOL).u64(2);
    s.bool_arr_at = w.size();
    w.u8(1).u8(0);
    w.key("k.arr_empty", GgufType::ARRAY).u32((uint32_t)GgufType::UINT64).u64(0);
    s.align_type_at = w.size() + 8 + std::strlen("general.alignment");
    w.key("general.alignment", GgufType::UINT32);
    s.align_value_at = w.size();
    w.u32(64);
    for (size_t t = 0; t < kTensors.size(); ++t) {
        const TensorSpec &ts = kTensors[t];
        if (t == 0) s.t0_at = w.size();
        if (t == 1) s.t1_name_at = w.size();
        if (t == 2) s.t2_name_at = w.size();
        w.str(ts.name);
        if (t == 0) s.t0_ndims_at = w.size();
        w.u32((uint32_t)ts.ne.size());
        for (size_t d = 0; d < ts.ne.size(); ++d) {
            if (t == 0 && d == 0) s.t0_dim0_at = w.size();
            if (t == 0 && d == 1) s.t0_dim1_at = w.size();
            if (t == 2 && d == 0) s.t2_dim0_at = w.size();
            w.u64(ts.ne[d]);
        }
        if (t == 0) s.t0_type_at = w.size();
        w.u32(ts.type);
        if (t == 0) s.t0_offset_at = w.size();
        if (t == 1) s.t1_offset_at = w.size();
        if (t == 2) s.t2_offset_at = w.size();
        w.u64(ts.offset);
    }
    w.pad_to(64);
    s.data_at = w.size();
    for (const TensorSpec &ts : kTensors) {
        w.b.resize(s.data_at + ts.offset, 0xEE);
        for (size_t i = 0; i < ts.nbytes; ++i) w.u8((uint8_t)(i * 7 + ts.offset));
    }
    s.bytes = std::move(w.b);
    return s;
}

template <class T> void patch(std::vector<uint8_t> &b, size_t at, T v) {
    REQUIRE(at + sizeof(T) <= b.size());
    std::memcpy(b.data() + at, &v, sizeof(T));
}

vt_status status_of(const std::vector<uint8_t> &b, std::string *msg = nullptr) {
    try {
        GgufFile::parse(b.data(), b.size());
    } catch (const vt::Error &e) {
        if (msg) *msg = e.what();
        return e.status();
    }
    return VT_OK;
}

vt_status open_status(const std::string &path, std::string *msg = nullptr) {
    try {
        GgufFile::open(path);
    } catch (const vt::Error &e) {
        if (msg) *msg = e.what();
        return e.status();
    }
    return VT_OK;
}

using vt::test::shared_data;


// A scratch file removed at scope exit.
struct TempFile {
    fs::path path;
    explicit TempFile(const std::vector<uint8_t> &bytes) {
        path = fs::temp_directory_path() / ("vt-test-gguf-" + std::to_string(::getpid()) + "-" +
                                            std::to_string(counter()++) + ".gguf");
        std::ofstream(path, std::ios::binary).write((const char *)bytes.data(), (std::streamsize)bytes.size());
    }
    ~TempFile() {
        std::error_code ec;
        fs::remove(path, ec);
    }
    static int &counter() {
        static int n = 0;
        return n;
    }
};

} // namespace

TEST_CASE("gguf: a hand-built file parses exactly", "[gguf]") {
    const Sample s = make_sample();
    auto g = GgufFile::parse(s.bytes.data(), s.bytes.size());
    CHECK(g->version() == 3);
    CHECK(g->alignment() == 64);
    CHECK(g->data_offset() == s.data_at);
    REQUIRE(g->kvs().size() == 19);
    CHECK(g->kvs()[0].key == "general.architecture");
    CHECK(g->kvs()[18].key == "general.alignment");

    CHECK(g->get_string("general.architecture") == std::string_view("llama"));
    CHECK(g->get_uint("k.u8") == 200u);
    CHECK(g->get_int("k.i8") == -5);
    CHECK(g->get_uint("k.u16") == 65535u);
    CHECK(g->get_int("k.i16") == -300);
    CHECK(g->get_uint("k.u32") == 4000000000u);
    CHECK(g->get_int("k.u32") == 4000000000);
    CHECK(g->get_int("k.i32") == -70000);
    CHECK(g->get_float("k.f32") == Approx(0.1f));
    CHECK((float)*g->get_float("k.f32") == 0.1f);
    CHECK(g->get_bool("k.bool") == true);
    CHECK(g->get_uint("k.u64") == UINT64_MAX);
    CHECK(g->get_int("k.i64") == INT64_MIN);
    CHECK(g->get_float("k.f64") == -2.5);
    CHECK(g->get_float("k.u8") == 200.0);  // integers widen to float
    CHECK(g->get_string("k.str") == std::string_view("tab\there \"q\""));
    CHECK_FALSE(g->get_uint("absent").has_value());
    CHECK_FALSE(g->get_string("absent").has_value());
    CHECK(g->get_array("absent", GgufType::INT32) == nullptr);
    CHECK(g->find("absent") == nullptr);
    REQUIRE(g->find("k.u8") != nullptr);
    CHECK(g->find("k.u8")->value.type == GgufType::UINT8);

    const vt::GgufValue *ai = g->get_array("k.arr_i32", GgufType::INT32);
    REQUIRE(ai);
    REQUIRE(ai->arr_n == 3);
    CHECK(ai->int_at(0) == 1);
    CHECK(ai->int_at(1) == -2);
    CHECK(ai->int_at(2) == 3);
    CHECK(ai->float_at(1) == -2.0);
    const vt::GgufValue *as = g->get_array("k.arr_str", GgufType::STRING);
    REQUIRE(as);
    REQUIRE(as->strs.size() == 3);
    CHECK(as->strs[0] == "a");
    CHECK(as->strs[1] == "b\"\n");
    CHECK(as->strs[2] == "");
    const vt::GgufValue *af = g->get_array("k.arr_f32", GgufType::FLOAT32);
    REQUIRE(af);
    CHECK(af->float_at(0) == 1.5);
    CHECK(af->float_at(1) == -0.25);
    const vt::GgufValue *ae = g->get_array("k.arr_empty", GgufType::UINT64);
    REQUIRE(ae);
    CHECK(ae->arr_n == 0);

    REQUIRE(g->tensors().size() == 3);
    for (size_t t = 0; t < kTensors.size(); ++t) {
        const TensorSpec &ts = kTensors[t];
        const vt::GgufTensorInfo *ti = g->find_tensor(ts.name);
        REQUIRE(ti == &g->tensors()[t]);
        CHECK(ti->n_dims == ts.ne.size());
        for (size_t d = 0; d < 4; ++d) CHECK(ti->ne[d] == (d < ts.ne.size() ? (int64_t)ts.ne[d] : 1));
        CHECK((uint32_t)ti->type == ts.type);
        CHECK(ti->offset == ts.offset);
        CHECK(ti->nbytes == ts.nbytes);
        CHECK(ti->data == s.bytes.data() + s.data_at + ts.offset);
        CHECK(((const uint8_t *)ti->data)[1] == (uint8_t)(7 + ts.offset));
    }
    CHECK(g->find_tensor("nope") == nullptr);
}

TEST_CASE("gguf: version 2 parses like version 3", "[gguf]") {
    const Sample s = make_sample(2);
    auto g = GgufFile::parse(s.bytes.data(), s.bytes.size());
    CHECK(g->version() == 2);
    CHECK(g->tensors().size() == 3);
}

TEST_CASE("gguf: typed getters reject other types", "[gguf]") {
    const Sample s = make_sample();
    auto g = GgufFile::parse(s.bytes.data(), s.bytes.size());
    auto status = [](const std::function<void()> &f) {
        try {
            f();
        } catch (const vt::Error &e) {
            return e.status();
        }
        return VT_OK;
    };
    CHECK(status([&] { g->get_uint("k.str"); }) == VT_ERR_FORMAT);
    CHECK(status([&] { g->get_uint("k.i8"); }) == VT_ERR_FORMAT);  // negative
    CHECK(status([&] { g->get_uint("k.f32"); }) == VT_ERR_FORMAT);
    CHECK(status([&] { g->get_uint("k.bool"); }) == VT_ERR_FORMAT);
    CHECK(status([&] { g->get_int("k.u64"); }) == VT_ERR_FORMAT);  // does not fit
    CHECK(status([&] { g->get_float("k.str"); }) == VT_ERR_FORMAT);
    CHECK(status([&] { g->get_bool("k.u8"); }) == VT_ERR_FORMAT);
    CHECK(status([&] { g->get_string("k.u8"); }) == VT_ERR_FORMAT);
    CHECK(status([&] { g->get_string("k.arr_str"); }) == VT_ERR_FORMAT);
    CHECK(status([&] { g->get_array("k.u8", GgufType::UINT8); }) == VT_ERR_FORMAT);
    CHECK(status([&] { g->get_array("k.arr_i32", GgufType::UINT32); }) == VT_ERR_FORMAT);
    CHECK(status([&] { g->get_array("k.arr_str", GgufType::INT32); }) == VT_ERR_FORMAT);
    const vt::GgufValue *as = g->get_array("k.arr_str", GgufType::STRING);
    CHECK(status([&] { as->int_at(0); }) == VT_ERR_FORMAT);
    const vt::GgufValue *ai = g->get_array("k.arr_i32", GgufType::INT32);
    CHECK(status([&] { ai->int_at(3); }) == VT_ERR_FORMAT);
    CHECK(status([&] { ai->uint_at(1); }) == VT_ERR_FORMAT);
}

TEST_CASE("gguf: to_string", "[gguf]") {
    const Sample s = make_sample();
    auto g = GgufFile::parse(s.bytes.data(), s.bytes.size());
    auto text = [&](const char *k) { return GgufFile::to_string(g->find(k)->value); };
    CHECK(text("general.architecture") == "llama");
    CHECK(text("k.str") == "tab\there \"q\"");
    CHECK(text("k.u8") == "200");
    CHECK(text("k.i8") == "-5");
    CHECK(text("k.u64") == "18446744073709551615");
    CHECK(text("k.i64") == "-9223372036854775808");
    CHECK(text("k.f32") == "0.1");
    CHECK(text("k.f64") == "-2.5");
    CHECK(text("k.u32") == "4000000000");
    CHECK(text("k.bool") == "true");
    CHECK(text("k.arr_i32") == "[1,-2,3]");
    CHECK(text("k.arr_str") == "[\"a\",\"b\\\"\\n\",\"\"]");
    CHECK(text("k.arr_f32") == "[1.5,-0.25]");
    auto num = [](GgufType t, double f) {
        vt::GgufValue v;
        v.type = t;
        v.f = f;
        return GgufFile::to_string(v);
    };
    CHECK(num(GgufType::FLOAT32, 100000.0) == "100000.0");
    CHECK(num(GgufType::FLOAT32, 1e-5) == "1e-05");
    CHECK(num(GgufType::FLOAT32, 1e-6f) == "1e-06");
    CHECK(num(GgufType::FLOAT32, 0.0) == "0.0");
    CHECK(num(GgufType::FLOAT32, 1e20) == "1e+20");
    CHECK(num(GgufType::FLOAT64, 0.1) == "0.1");
    CHECK(num(GgufType::FLOAT64, 1.0 / 3) == "0.3333333333333333");
    CHECK(num(GgufType::FLOAT64, std::nan("")) == "NaN");
    CHECK(num(GgufType::FLOAT64, -HUGE_VAL) == "-Infinity");
    CHECK(text("k.arr_bool") == "[true,false]");
    CHECK(text("k.arr_empty") == "[]");
}

// ---------------------------------------------------------------------------
// Corrupt files

namespace {

struct Corruption {
    const char *name;
    vt_status want;
    std::function<void(std::vector<uint8_t> &, const Sample &)> mutate;
};

// Rewrites the tensor section of the sample with one tensor of the given shape.
std::vector<uint8_t> one_tensor(const std::vector<uint64_t> &ne, uint32_t type, uint64_t offset,
                                size_t data_bytes = 64) {
    Writer w;
    w.magic();
    w.u32(3).u64(1).u64(0);
    w.str("t").u32((uint32_t)ne.size());
    for (uint64_t d : ne) w.u64(d);
    w.u32(type).u64(offset);
    w.pad_to(32);
    w.b.resize(w.b.size() + data_bytes, 0);
    return w.b;
}

const std::vector<Corruption> &corruptions() {
    static const std::vector<Corruption> list = {
        {"wrong magic", VT_ERR_FORMAT, [](auto &b, auto &) { b[0] = 'X'; }},
        {"version 1", VT_ERR_UNSUPPORTED, [](auto &b, auto &s) { patch<uint32_t>(b, s.version_at, 1); }},
        {"version 4", VT_ERR_FORMAT, [](auto &b, auto &s) { patch<uint32_t>(b, s.version_at, 4); }},
        {"version 0", VT_ERR_FORMAT, [](auto &b, auto &s) { patch<uint32_t>(b, s.version_at, 0); }},
        {"big-endian version", VT_ERR_FORMAT, [](auto &b, auto &s) { patch<uint32_t>(b, s.version_at, 0x03000000); }},
        {"absurd kv count", VT_ERR_FORMAT, [](auto &b, auto &s) { patch<uint64_t>(b, s.n_kv_at, UINT64_MAX / 2); }},
        {"kv count just too big", VT_ERR_FORMAT,
         [](auto &b, auto &s) { patch<uint64_t>(b, s.n_kv_at, b.size() / 13 + 1); }},
        {"absurd tensor count", VT_ERR_FORMAT,
         [](auto &b, auto &s) { patch<uint64_t>(b, s.n_tensors_at, (uint64_t)1 << 60); }},
        {"kv count above the 2^20 cap", VT_ERR_FORMAT,
         [](auto &b, auto &s) {
             patch<uint64_t>(b, s.n_kv_at, (1u << 20) + 1);
             b.resize(b.size() + 14 * ((1u << 20) + 1), 0);
         }},
        {"one tensor too many", VT_ERR_FORMAT, [](auto &b, auto &s) { patch<uint64_t>(b, s.n_tensors_at, 4); }},
        {"key length past end", VT_ERR_FORMAT,
         [](auto &b, auto &s) { patch<uint64_t>(b, s.first_key_at, b.size()); }},
        {"huge key length", VT_ERR_FORMAT, [](auto &b, auto &s) { patch<uint64_t>(b, s.first_key_at, UINT64_MAX); }},
        {"string value length past end", VT_ERR_FORMAT,
         [](auto &b, auto &s) { patch<uint64_t>(b, s.str_len_at, b.size()); }},
        {"invalid bool", VT_ERR_FORMAT, [](auto &b, auto &s) { b[s.bool_value_at] = 2; }},
        {"invalid bool in array", VT_ERR_FORMAT, [](auto &b, auto &s) { b[s.bool_arr_at + 1] = 0x80; }},
        {"unknown value type", VT_ERR_FORMAT, [](auto &b, auto &s) { patch<uint32_t>(b, s.type_at_u8, 13); }},
        {"huge value type", VT_ERR_FORMAT, [](auto &b, auto &s) { patch<uint32_t>(b, s.type_at_u8, 0xffffffff); }},
        {"unknown array element type", VT_ERR_FORMAT,
         [](auto &b, auto &s) { patch<uint32_t>(b, s.arr_type_at, 77); }},
        {"nested array", VT_ERR_UNSUPPORTED,
         [](auto &b, auto &s) { patch<uint32_t>(b, s.arr_type_at, (uint32_t)GgufType::ARRAY); }},
        {"array length past end", VT_ERR_FORMAT,
         [](auto &b, auto &s) { patch<uint64_t>(b, s.arr_n_at, b.size() / 4 + 1); }},
        {"array byte size overflows", VT_ERR_FORMAT,
         [](auto &b, auto &s) { patch<uint64_t>(b, s.arr_n_at, (uint64_t)1 << 62); }},
        {"string array length past end", VT_ERR_FORMAT,
         [](auto &b, auto &s) { patch<uint64_t>(b, s.str_arr_n_at, b.size() / 8 + 1); }},
        {"string array length misread", VT_ERR_FORMAT,
         [](auto &b, auto &s) { patch<uint64_t>(b, s.str_arr_n_at, 40); }},
        {"duplicate key", VT_ERR_FORMAT,
         [](auto &b, auto &s) { b[s.second_key_at + 8 + 2] = 'i'; }},  // "k.u8" -> "k.i8"
        {"alignment not a power of two", VT_ERR_FORMAT,
         [](auto &b, auto &s) { patch<uint32_t>(b, s.align_value_at, 48); }},
        {"alignment zero", VT_ERR_FORMAT, [](auto &b, auto &s) { patch<uint32_t>(b, s.align_value_at, 0); }},
        {"alignment of the wrong type", VT_ERR_FORMAT,
         [](auto &b, auto &s) { patch<uint32_t>(b, s.align_type_at, (uint32_t)GgufType::INT32); }},
        {"tensor name past end", VT_ERR_FORMAT, [](auto &b, auto &s) { patch<uint64_t>(b, s.t0_at, 1u << 30); }},
        {"duplicate tensor name", VT_ERR_FORMAT,  // "out.weight" -> "tok.weight", same length
         [](auto &b, auto &s) { std::memcpy(b.data() + s.t2_name_at + 8, "tok", 3); }},
        {"zero dims", VT_ERR_FORMAT, [](auto &b, auto &s) { patch<uint32_t>(b, s.t0_ndims_at, 0); }},
        {"five dims", VT_ERR_FORMAT, [](auto &b, auto &s) { patch<uint32_t>(b, s.t0_ndims_at, 5); }},
        {"huge dims", VT_ERR_FORMAT, [](auto &b, auto &s) { patch<uint32_t>(b, s.t0_ndims_at, 0x80000000u); }},
        {"zero dimension", VT_ERR_FORMAT, [](auto &b, auto &s) { patch<uint64_t>(b, s.t0_dim1_at, 0); }},
        {"negative dimension", VT_ERR_FORMAT,
         [](auto &b, auto &s) { patch<int64_t>(b, s.t0_dim1_at, -3); }},
        {"element count overflow", VT_ERR_FORMAT,
         [](auto &b, auto &s) { patch<uint64_t>(b, s.t0_dim1_at, (uint64_t)1 << 60); }},
        {"row not a multiple of the block", VT_ERR_FORMAT,
         [](auto &b, auto &s) { patch<uint64_t>(b, s.t0_dim0_at, 33); }},
        {"unknown tensor type", VT_ERR_FORMAT, [](auto &b, auto &s) { patch<uint32_t>(b, s.t0_type_at, 1000); }},
        {"removed tensor type 4", VT_ERR_UNSUPPORTED, [](auto &b, auto &s) { patch<uint32_t>(b, s.t0_type_at, 4); }},
        {"ggml-only tensor type I8", VT_ERR_UNSUPPORTED,
         [](auto &b, auto &s) { patch<uint32_t>(b, s.t0_type_at, 24); }},
        {"tensor offset not aligned", VT_ERR_FORMAT,
         [](auto &b, auto &s) { patch<uint64_t>(b, s.t1_offset_at, 130); }},
        {"tensor data past end", VT_ERR_FORMAT,
         [](auto &b, auto &s) { patch<uint64_t>(b, s.t2_offset_at, 256); }},
        {"tensor offset huge", VT_ERR_FORMAT,
         [](auto &b, auto &s) { patch<uint64_t>(b, s.t2_offset_at, UINT64_MAX - 63); }},
        {"overlapping tensors", VT_ERR_FORMAT, [](auto &b, auto &s) { patch<uint64_t>(b, s.t1_offset_at, 64); }},
        {"same offset twice", VT_ERR_FORMAT, [](auto &b, auto &s) { patch<uint64_t>(b, s.t2_offset_at, 128); }},
        {"tensor grows into the next", VT_ERR_FORMAT,  // 4 Q8_0 rows = 136 bytes > 128
         [](auto &b, auto &s) { patch<uint64_t>(b, s.t0_dim1_at, 4); }},
        {"last tensor grows past the end", VT_ERR_FORMAT,
         [](auto &b, auto &s) { patch<uint64_t>(b, s.t2_dim0_at, 16); }},
        {"data section missing", VT_ERR_FORMAT, [](auto &b, auto &s) { b.resize(s.data_at - 1); }},
        {"last tensor cut short", VT_ERR_FORMAT, [](auto &b, auto &) { b.pop_back(); }},
        {"empty buffer", VT_ERR_FORMAT, [](auto &b, auto &) { b.clear(); }},
        {"F32 tensor 2^61 elements", VT_ERR_FORMAT,
         [](auto &b, auto &) { b = one_tensor({(uint64_t)1 << 31, (uint64_t)1 << 30}, 0, 0); }},
        {"Q8_0 byte size beyond the file", VT_ERR_FORMAT,
         [](auto &b, auto &) { b = one_tensor({(uint64_t)1 << 40, (uint64_t)1 << 20}, 8, 0); }},
        {"dimension above INT64_MAX", VT_ERR_FORMAT,
         [](auto &b, auto &) { b = one_tensor({(uint64_t)INT64_MAX + 1}, 0, 0); }},
    };
    return list;
}

} // namespace

TEST_CASE("gguf: corrupt files throw with an offset", "[gguf]") {
    const Sample s = make_sample();
    REQUIRE(status_of(s.bytes) == VT_OK);
    REQUIRE(status_of(one_tensor({16}, 0, 0)) == VT_OK);
    for (const Corruption &c : corruptions()) {
        SECTION(c.name) {
            std::vector<uint8_t> b = s.bytes;
            c.mutate(b, s);
            std::string msg;
            const vt_status st = status_of(b, &msg);
            INFO(c.name << ": " << msg);
            CHECK(st == c.want);
            CHECK(msg.find("offset") != std::string::npos);
            CHECK(msg.rfind("gguf: ", 0) == 0);
        }
    }
}

TEST_CASE("gguf: MXFP4 tensors (type 39) read as 17-byte blocks of 32", "[gguf]") {
    // 64 x 3 elements: 2 blocks per row, 6 blocks, 102 bytes.
    const std::vector<uint8_t> b = one_tensor({64, 3}, 39, 0, 102);
    auto g = GgufFile::parse(b.data(), b.size());
    const auto *t = g->find_tensor("t");
    REQUIRE(t);
    CHECK(t->type == vt::DType::MXFP4);
    CHECK(t->nbytes == 102);
    std::string msg;
    CHECK(status_of(one_tensor({48}, 39, 0), &msg) == VT_ERR_FORMAT);  // rows of 1.5 blocks
    CHECK(msg.find("MXFP4") != std::string::npos);
    CHECK(status_of(one_tensor({64, 4}, 39, 0, 102)) == VT_ERR_FORMAT); // 136 bytes past the end
}

TEST_CASE("gguf: every truncation of a valid file throws VT_ERR_FORMAT", "[gguf]") {
    const Sample s = make_sample();
    size_t failures = 0;
    for (size_t n = 0; n < s.bytes.size(); ++n) {
        // A copy of exactly n bytes, so ASan-style tools see any overread.
        std::vector<uint8_t> b(s.bytes.begin(), s.bytes.begin() + (ptrdiff_t)n);
        std::string msg;
        const vt_status st = status_of(b, &msg);
        if (st != VT_ERR_FORMAT || msg.find("offset") == std::string::npos) {
            ++failures;
            INFO("prefix " << n << ": " << msg);
            CHECK(st == VT_ERR_FORMAT);
        }
    }
    CHECK(failures == 0);
}

TEST_CASE("gguf: a vocab-only file needs no data section padding", "[gguf]") {
    Writer w;
    w.magic();
    w.u32(3).u64(0).u64(1).key("x", GgufType::UINT8).u8(1);
    auto g = GgufFile::parse(w.b.data(), w.b.size());
    CHECK(g->tensors().empty());
    CHECK(g->get_uint("x") == 1u);
}

// ---------------------------------------------------------------------------
// Files on disk

TEST_CASE("gguf: open reports I/O errors", "[gguf]") {
    std::string msg;
    CHECK(open_status("/nonexistent/dir/model.gguf", &msg) == VT_ERR_IO);
    CHECK(msg.find("/nonexistent/dir/model.gguf") != std::string::npos);
    CHECK(open_status(fs::temp_directory_path().string(), &msg) == VT_ERR_IO);
    {
        TempFile empty({});
        CHECK(open_status(empty.path.string(), &msg) == VT_ERR_FORMAT);  // readable, but not GGUF
        CHECK(msg.find("empty") != std::string::npos);
        CHECK(msg.find("offset") != std::string::npos);
    }
    CHECK(open_status("", &msg) == VT_ERR_IO);
}

TEST_CASE("gguf: open from disk, mapped and read", "[gguf]") {
    const Sample s = make_sample();
    TempFile f(s.bytes);
    for (bool use_mmap : {true, false}) {
        auto g = GgufFile::open(f.path.string(), use_mmap);
        REQUIRE(g->tensors().size() == 3);
        const vt::GgufTensorInfo *t = g->find_tensor("out.weight");
        REQUIRE(t);
        CHECK(std::memcmp(t->data, s.bytes.data() + s.data_at + 192, 32) == 0);
        CHECK(g->get_string("general.architecture") == std::string_view("llama"));
    }
    std::vector<uint8_t> bad = s.bytes;
    bad[0] = 'g';
    TempFile fb(bad);
    std::string msg;
    CHECK(open_status(fb.path.string(), &msg) == VT_ERR_FORMAT);
    CHECK(msg.rfind(fb.path.string() + ": ", 0) == 0);  // errors name the path
    CHECK(msg.find("offset 0") != std::string::npos);
}

TEST_CASE("gguf: llama.cpp vocab files", "[gguf][data]") {
    const fs::path dir = shared_data() / "tokenizers" / "llama.cpp-vocab";
    if (!fs::is_directory(dir)) {
        VT_SKIP("no vocab directory at " << dir.string() << " (set VT_SHARED_DATA)");
    }
    int n = 0;
    for (const auto &e : fs::directory_iterator(dir)) {
        if (e.path().extension() != ".gguf") continue;
        INFO(e.path().string());
        auto g = GgufFile::open(e.path().string());
        CHECK(g->get_string("tokenizer.ggml.model").has_value());
        const vt::GgufValue *toks = g->get_array("tokenizer.ggml.tokens", GgufType::STRING);
        REQUIRE(toks);
        CHECK(toks->strs.size() == toks->arr_n);
        CHECK(toks->arr_n > 100);
        ++n;
    }
    if (n == 0) VT_SKIP("no .gguf files in " << dir.string());
}

TEST_CASE("gguf: SmolLM2 model", "[gguf][data]") {
    const fs::path path = vt::test::default_model();
    if (path.empty()) {
        VT_SKIP(vt::test::default_model_hint());
    }
    auto g = GgufFile::open(path.string());
    CHECK(g->version() == 3);
    CHECK(g->tensors().size() == 272);
    CHECK(g->get_string("general.architecture") == std::string_view("llama"));
    CHECK(g->get_uint("llama.block_count") == 30u);
    const vt::GgufTensorInfo *t = g->find_tensor("token_embd.weight");
    REQUIRE(t);
    CHECK(t->type == vt::DType::Q8_0);
    CHECK(t->n_dims == 2);
    CHECK(t->ne[0] == 576);
    CHECK(t->ne[1] == 49152);
    CHECK(t->nbytes == (size_t)576 / 32 * 34 * 49152);
    const vt::GgufValue *toks = g->get_array("tokenizer.ggml.tokens", GgufType::STRING);
    REQUIRE(toks);
    CHECK(toks->arr_n == 49152);
}
