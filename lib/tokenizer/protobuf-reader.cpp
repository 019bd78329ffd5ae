#include "tokenizer/protobuf-reader.h"

#include <cstring>

#include "core/error.h"

namespace vt::tok {

bool ProtoField::as_bool() const {
    if (wire != WireType::VARINT) fail(VT_ERR_FORMAT, "protobuf field %u: expected a varint (bool)", number);
    return varint != 0;
}

int32_t ProtoField::as_int32() const {
    if (wire != WireType::VARINT) fail(VT_ERR_FORMAT, "protobuf field %u: expected a varint (int32)", number);
    return static_cast<int32_t>(static_cast<uint32_t>(varint));
}

float ProtoField::as_float() const {
    if (wire != WireType::FIXED32) fail(VT_ERR_FORMAT, "protobuf field %u: expected a fixed32 (float)", number);
    const uint32_t bits = static_cast<uint32_t>(fixed);
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

std::string_view ProtoField::as_bytes() const {
    if (wire != WireType::LEN) fail(VT_ERR_FORMAT, "protobuf field %u: expected a length-delimited value", number);
    return bytes;
}

void ProtoReader::bad(const char *why) const {
    fail(VT_ERR_FORMAT, "%s: %s at offset %zu", what_, why, base_ + pos_);
}

uint64_t ProtoReader::read_varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (pos_ >= data_.size()) bad("truncated varint");
        const uint8_t b = static_cast<uint8_t>(data_[pos_++]);
        // The tenth byte may carry only the top bit of a 64-bit value.
        if (shift == 63 && b > 1) bad("varint longer than 64 bits");
        v |= static_cast<uint64_t>(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
    bad("varint longer than 10 bytes");
}

bool ProtoReader::next(ProtoField &f) {
    if (pos_ >= data_.size()) return false;
    const uint64_t key = read_varint();
    const uint64_t number = key >> 3;
    if (number == 0 || number > 0x1fffffff) bad("invalid field number");
    f = ProtoField{};
    f.number = static_cast<uint32_t>(number);
    f.wire = static_cast<WireType>(key & 7);
    switch (f.wire) {
    case WireType::VARINT:
        f.varint = read_varint();
        return true;
    case WireType::FIXED64:
    case WireType::FIXED32: {
        const size_t n = f.wire == WireType::FIXED64 ? 8 : 4;
        if (data_.size() - pos_ < n) bad("truncated fixed-size field");
        uint64_t v = 0;
        for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
        pos_ += n;
        f.fixed = v;
        return true;
    }
    case WireType::LEN: {
        const uint64_t len = read_varint();
        if (len > data_.size() - pos_) bad("length-delimited field runs past the end");
        f.bytes = data_.substr(pos_, static_cast<size_t>(len));
        pos_ += static_cast<size_t>(len);
        return true;
    }
    default:
        bad("unsupported wire type (group or invalid)");
    }
}

} // namespace vt::tok
