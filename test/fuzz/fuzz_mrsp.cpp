// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: MRSP's decoder on arbitrary bytes. Besides memory errors (ASan/UBSan), it
// checks a property: whatever the decoder accepts re-encodes to a message that decodes the same.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "protocol/mrsp.hpp"

using namespace naa::protocol::mrsp;

namespace {

bool same(const RequestEntry &a, const RequestEntry &b) {
  return a.flags == b.flags && a.naa_address == b.naa_address && a.host_address == b.host_address &&
         a.host_rkey == b.host_rkey && a.size == b.size;
}

bool same(const AdvertEntry &a, const AdvertEntry &b) {
  return a.naa_address == b.naa_address && a.rkey == b.rkey && a.size == b.size;
}

template <class Entry, class Encode>
void check_roundtrip(const std::vector<Entry> &entries, Encode encode,
                     const std::vector<Entry> Message::*field) {
  uint8_t out[kBufferSize];
  size_t len = encode(entries.data(), entries.size(), out, sizeof out);
  if (len == 0) std::abort();  // decoded entries must always be encodable
  Message again;
  if (decode(out, len, again, nullptr) != DecodeError::None) std::abort();
  const std::vector<Entry> &back = again.*field;
  if (back.size() != entries.size()) std::abort();
  for (size_t i = 0; i < entries.size(); ++i)
    if (!same(back[i], entries[i])) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The receive buffer is 768 bytes: a transport never delivers more.
  if (size > kBufferSize) return -1;
  // An exact-size heap copy, so that ASan catches a read one byte past the message.
  uint8_t *copy = new uint8_t[size ? size : 1];
  if (size) std::memcpy(copy, data, size);
  Message m;
  std::string why;
  if (decode(copy, size, m, &why) == DecodeError::None) {
    if (m.type == Type::AdvertiseRequest)
      check_roundtrip(m.request, encode_request, &Message::request);
    if (m.type == Type::Advertise) check_roundtrip(m.advert, encode_advert, &Message::advert);
  } else if (why.empty()) {
    std::abort();  // every refusal names its cause for the log line
  }
  delete[] copy;
  return 0;
}
