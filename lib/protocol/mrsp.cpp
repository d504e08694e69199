// SPDX-License-Identifier: BSD-3-Clause
#include "protocol/mrsp.hpp"

#include <cstdarg>
#include <cstdio>

namespace naa::protocol::mrsp {
namespace {

constexpr uint8_t kKnownFlags = kInternal | kSingleSend | kInput | kOutput;

void put_be(uint8_t *p, uint64_t value, size_t bytes) {
  for (size_t i = bytes; i-- > 0; value >>= 8) p[i] = static_cast<uint8_t>(value);
}

uint64_t get_be(const uint8_t *p, size_t bytes) {
  uint64_t value = 0;
  for (size_t i = 0; i < bytes; ++i) value = value << 8 | p[i];
  return value;
}

void put_header(uint8_t *out, Type type, uint8_t count_or_code) {
  out[0] = static_cast<uint8_t>(type);
  out[1] = count_or_code;
  out[2] = out[3] = 0;
}

DecodeError fail(DecodeError error, std::string *why, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
DecodeError fail(DecodeError error, std::string *why, const char *fmt, ...) {
  if (why != nullptr) {
    char text[128];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    *why = text;
  }
  return error;
}

// Checks the announced entry count against the limit and the received length, so that the entry
// loops that follow cannot read past the buffer.
DecodeError check_entries(const char *what, size_t count, size_t max, size_t entry_size, size_t len,
                          std::string *why) {
  if (count == 0) return fail(DecodeError::NoEntries, why, "%s without entries", what);
  if (count > max)
    return fail(DecodeError::TooManyEntries, why, "%s count %zu exceeds %zu", what, count, max);
  const size_t needed = kHeaderSize + count * entry_size;
  if (len < needed)
    return fail(DecodeError::Truncated, why, "%s of %zu entries needs %zu bytes, got %zu", what,
                count, needed, len);
  return DecodeError::None;
}

const char *flags_problem(uint8_t flags) {
  if ((flags & ~kKnownFlags) != 0) return "unknown flag bits";
  if ((flags & kInternal) != 0 && flags != kInternal) return "INTERNAL combined with other flags";
  if ((flags & kSingleSend) != 0 && (flags & kInput) == 0) return "SINGLESEND without INPUT";
  return nullptr;
}

DecodeError decode_request(const uint8_t *buf, size_t len, Message &out, std::string *why) {
  const size_t count = buf[1];
  if (DecodeError e = check_entries("advertise-request", count, kMaxRequestEntries,
                                    kRequestEntrySize, len, why);
      e != DecodeError::None)
    return e;
  out.request.reserve(count);
  for (size_t k = 0; k < count; ++k) {
    const uint8_t *p = buf + kHeaderSize + k * kRequestEntrySize;
    if (const char *problem = flags_problem(p[0]))
      return fail(DecodeError::BadFlags, why, "advertise-request entry %zu flags 0x%02x: %s", k,
                  p[0], problem);
    out.request.push_back(RequestEntry{p[0], get_be(p + 1, 7), get_be(p + 8, 8),
                                       static_cast<uint32_t>(get_be(p + 16, 4)),
                                       static_cast<uint32_t>(get_be(p + 20, 4))});
  }
  return DecodeError::None;
}

DecodeError decode_advert(const uint8_t *buf, size_t len, Message &out, std::string *why) {
  const size_t count = buf[1];
  if (DecodeError e =
          check_entries("advertise", count, kMaxAdvertEntries, kAdvertEntrySize, len, why);
      e != DecodeError::None)
    return e;
  out.advert.reserve(count);
  for (size_t k = 0; k < count; ++k) {
    const uint8_t *p = buf + kHeaderSize + k * kAdvertEntrySize;
    out.advert.push_back(AdvertEntry{get_be(p, 8), static_cast<uint32_t>(get_be(p + 8, 4)),
                                     static_cast<uint32_t>(get_be(p + 12, 4))});
  }
  return DecodeError::None;
}

}  // namespace

size_t encode_request(const RequestEntry *entries, size_t n, uint8_t *out, size_t cap) {
  if (n == 0 || n > kMaxRequestEntries) return 0;
  const size_t len = kHeaderSize + n * kRequestEntrySize;
  if (len > cap) return 0;
  for (size_t k = 0; k < n; ++k)
    if (entries[k].naa_address > kMaxNaaAddress) return 0;

  put_header(out, Type::AdvertiseRequest, static_cast<uint8_t>(n));
  for (size_t k = 0; k < n; ++k) {
    const RequestEntry &e = entries[k];
    uint8_t *p = out + kHeaderSize + k * kRequestEntrySize;
    put_be(p, uint64_t{e.flags} << 56 | e.naa_address, 8);
    put_be(p + 8, e.host_address, 8);
    put_be(p + 16, e.host_rkey, 4);
    put_be(p + 20, e.size, 4);
  }
  return len;
}

size_t encode_advert(const AdvertEntry *entries, size_t n, uint8_t *out, size_t cap) {
  if (n == 0 || n > kMaxAdvertEntries) return 0;
  const size_t len = kHeaderSize + n * kAdvertEntrySize;
  if (len > cap) return 0;

  put_header(out, Type::Advertise, static_cast<uint8_t>(n));
  for (size_t k = 0; k < n; ++k) {
    uint8_t *p = out + kHeaderSize + k * kAdvertEntrySize;
    put_be(p, entries[k].naa_address, 8);
    put_be(p + 8, entries[k].rkey, 4);
    put_be(p + 12, entries[k].size, 4);
  }
  return len;
}

size_t encode_error(ErrorCode code, uint8_t *out, size_t cap) {
  if (cap < kErrorSize) return 0;
  put_header(out, Type::Error, static_cast<uint8_t>(code));
  return kErrorSize;
}

size_t encode_memory_refusal(const MemoryLimit &limit, uint8_t *out, size_t cap) {
  if (cap < kMemoryLimitSize) return 0;
  put_header(out, Type::Error, static_cast<uint8_t>(ErrorCode::NoMemory));
  put_be(out + kErrorSize, limit.requested, 8);
  put_be(out + kErrorSize + 8, limit.available, 8);
  return kMemoryLimitSize;
}

DecodeError decode(const uint8_t *buf, size_t len, Message &out, std::string *why) {
  out = Message{};
  if (len < kHeaderSize)
    return fail(DecodeError::Truncated, why, "message of %zu bytes is shorter than its header",
                len);
  switch (buf[0]) {
    case static_cast<uint8_t>(Type::Error):
      out.type = Type::Error;
      out.error_code = buf[1];
      out.has_memory_limit =
          buf[1] == static_cast<uint8_t>(ErrorCode::NoMemory) && len >= kMemoryLimitSize;
      if (out.has_memory_limit)
        out.memory_limit = {get_be(buf + kErrorSize, 8), get_be(buf + kErrorSize + 8, 8)};
      return DecodeError::None;
    case static_cast<uint8_t>(Type::AdvertiseRequest):
      out.type = Type::AdvertiseRequest;
      return decode_request(buf, len, out, why);
    case static_cast<uint8_t>(Type::Advertise):
      out.type = Type::Advertise;
      return decode_advert(buf, len, out, why);
    case static_cast<uint8_t>(Type::Request):
      return fail(DecodeError::UnknownType, why, "message type 0x03 (request only) is reserved");
    default:
      return fail(DecodeError::UnknownType, why, "unknown message type 0x%02x", buf[0]);
  }
}

bool placeholder_addresses(const uint32_t *sizes, size_t n, uint64_t offset, uint64_t *out) {
  constexpr uint64_t kSpace = kMaxNaaAddress + 1;
  uint64_t next = offset;
  for (size_t k = 0; k < n; ++k) {
    const uint64_t rounded = (uint64_t{sizes[k]} + kPlaceholderAlignment - 1) /
                             kPlaceholderAlignment * kPlaceholderAlignment;
    // Written as a difference so that a huge offset cannot wrap around.
    if (next > kMaxNaaAddress || rounded > kSpace - next) return false;
    out[k] = next;
    next += rounded;
  }
  return true;
}

const char *error_code_name(uint8_t code) {
  switch (code) {
    case static_cast<uint8_t>(ErrorCode::NoMemory):
      return "not enough memory";
    case static_cast<uint8_t>(ErrorCode::InvalidAddress):
      return "invalid address";
    case static_cast<uint8_t>(ErrorCode::TooManyRegions):
      return "too many regions";
    default:
      return "unknown MRSP error";
  }
}

}  // namespace naa::protocol::mrsp
