// SPDX-License-Identifier: BSD-3-Clause
#include "transport/ofi/ofi_control.hpp"

#include <cstring>

namespace naa::transport::ofi::control {
namespace {

constexpr uint8_t kMagic[4] = {'N', 'A', 'A', 'c'};
constexpr uint8_t kVersion = 1;

void put16(uint8_t *p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}

void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint16_t get16(const uint8_t *p) {
  return static_cast<uint16_t>(p[0] | p[1] << 8);
}

uint32_t get32(const uint8_t *p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

}  // namespace

size_t encode(const Message &m, uint8_t *out, size_t capacity) {
  if (m.name.size() > kMaxName || m.data.size() > kMaxData) return 0;
  const size_t len = kHeaderSize + m.name.size() + m.data.size();
  if (len > capacity) return 0;
  std::memcpy(out, kMagic, sizeof kMagic);
  out[4] = kVersion;
  out[5] = static_cast<uint8_t>(m.type);
  out[6] = out[7] = 0;
  put32(out + 8, m.pid);
  put16(out + 12, static_cast<uint16_t>(m.name.size()));
  put16(out + 14, static_cast<uint16_t>(m.data.size()));
  std::memcpy(out + kHeaderSize, m.name.data(), m.name.size());
  std::memcpy(out + kHeaderSize + m.name.size(), m.data.data(), m.data.size());
  return len;
}

bool decode(const uint8_t *buf, size_t len, Message *m, std::string *why) {
  if (len < kHeaderSize) {
    *why = "shorter than its header (" + std::to_string(len) + " bytes)";
    return false;
  }
  if (std::memcmp(buf, kMagic, sizeof kMagic) != 0) {
    *why = "not a libnaa control message";
    return false;
  }
  if (buf[4] != kVersion) {
    *why = "control message version " + std::to_string(buf[4]) + " (this libnaa speaks 1)";
    return false;
  }
  const uint8_t type = buf[5];
  if (type < static_cast<uint8_t>(Type::Request) || type > static_cast<uint8_t>(Type::Goodbye)) {
    *why = "unknown control message type " + std::to_string(type);
    return false;
  }
  if (buf[6] != 0 || buf[7] != 0) {  // free for a later version, which will say so in byte 4
    *why = "reserved bytes are not zero";
    return false;
  }
  const size_t name_len = get16(buf + 12), data_len = get16(buf + 14);
  if (name_len > kMaxName || data_len > kMaxData) {
    *why = "name or data longer than allowed";
    return false;
  }
  if (kHeaderSize + name_len + data_len != len) {
    *why = "lengths do not add up to the message's " + std::to_string(len) + " bytes";
    return false;
  }
  m->type = static_cast<Type>(type);
  m->pid = get32(buf + 8);
  m->name.assign(reinterpret_cast<const char *>(buf + kHeaderSize), name_len);
  m->data.assign(reinterpret_cast<const char *>(buf + kHeaderSize + name_len), data_len);
  return true;
}

const char *type_name(Type t) {
  switch (t) {
    case Type::Request:
      return "connection request";
    case Type::Accept:
      return "accept";
    case Type::Reject:
      return "reject";
    case Type::Goodbye:
      return "goodbye";
  }
  return "?";
}

}  // namespace naa::transport::ofi::control
