// A bounds-checked reader of the protobuf wire format, enough to pull the
// handful of fields vt needs out of a SentencePiece ModelProto.
//
// NOTE: hand-written on purpose. libprotobuf would need protoc at build time
// and a copy of sentencepiece_model.proto to read five fields; the wire
// format itself is small (varints, little-endian fixed32/64, length-delimited
// bytes) and stable. The input is an untrusted file: every length and offset
// is checked against the end of the buffer, nothing reads past it, and any
// violation throws vt::Error(VT_ERR_FORMAT) naming the offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace vt::tok {

enum class WireType : uint8_t { VARINT = 0, FIXED64 = 1, LEN = 2, START_GROUP = 3, END_GROUP = 4, FIXED32 = 5 };

// One field as read from the wire. Which member is meaningful depends on
// `wire`: `varint` for VARINT, `fixed` for FIXED32/FIXED64 (raw bits),
// `bytes` (a view into the reader's buffer) for LEN.
struct ProtoField {
    uint32_t number = 0;
    WireType wire = WireType::VARINT;
    uint64_t varint = 0;
    uint64_t fixed = 0;
    std::string_view bytes;

    // Typed views; each throws VT_ERR_FORMAT when the wire type does not fit.
    bool as_bool() const;
    int32_t as_int32() const;      // int32/enum: a varint truncated to 32 bits, as protobuf does
    float as_float() const;        // fixed32
    std::string_view as_bytes() const;  // string, bytes, embedded message
};

class ProtoReader {
public:
    // `what` names the message in error messages ("ModelProto", ...);
    // `base` is the offset of `data` in the whole file, for messages.
    explicit ProtoReader(std::string_view data, const char *what = "message", size_t base = 0)
        : data_(data), what_(what), base_(base) {}

    // Reads the next field into `f`; false at the end of the buffer. Groups
    // (deprecated, unused by SentencePiece) are rejected.
    bool next(ProtoField &f);

    // Offset in the file of the next byte to read, for messages.
    size_t offset() const { return base_ + pos_; }

private:
    uint64_t read_varint();
    [[noreturn]] void bad(const char *why) const;

    std::string_view data_;
    const char *what_;
    size_t base_;
    size_t pos_ = 0;
};

} // namespace vt::tok
