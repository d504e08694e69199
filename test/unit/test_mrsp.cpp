// SPDX-License-Identifier: BSD-3-Clause
// MRSP codec and immediates against the byte-exact examples of doc/protocol.md §8 (and §3.5's).
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
// cmocka 1.1.5 does not declare its functions extern "C" itself.
extern "C" {
#include <cmocka.h>
}

#include <arpa/inet.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "protocol/connect_data.hpp"
#include "protocol/energy_report.hpp"
#include "protocol/kernel_list.hpp"
#include "protocol/immediate.hpp"
#include "protocol/mrsp.hpp"

using namespace naa;

namespace {

// Spec 8: INPUT|OUTPUT region, NAA address 0x112233445566, host address 0x00007F0011223344,
// rkey 0xAABBCCDD, size 4096.
const protocol::mrsp::RequestEntry kExampleEntry{protocol::mrsp::kInput | protocol::mrsp::kOutput,
                                                 0x112233445566, 0x00007F0011223344, 0xAABBCCDD,
                                                 4096};
const uint8_t kExampleEntryBytes[24] = {0x0c, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66,
                                        0x00, 0x00, 0x7f, 0x00, 0x11, 0x22, 0x33, 0x44,
                                        0xaa, 0xbb, 0xcc, 0xdd, 0x00, 0x00, 0x10, 0x00};

// Decodes from a heap copy of exactly len bytes so that AddressSanitizer catches any read past it.
bool decode_exact(const uint8_t *bytes, size_t len, protocol::mrsp::Message &msg,
                  std::string *why = nullptr, protocol::mrsp::DecodeError *error = nullptr) {
  std::vector<uint8_t> copy(bytes, bytes + len);
  const protocol::mrsp::DecodeError e = protocol::mrsp::decode(copy.data(), copy.size(), msg, why);
  if (error != nullptr) *error = e;
  return e == protocol::mrsp::DecodeError::None;
}

// A well-formed AAR of n entries, used as the base for corrupted variants.
std::vector<uint8_t> valid_request(size_t n) {
  std::vector<protocol::mrsp::RequestEntry> entries(n, kExampleEntry);
  std::vector<uint8_t> buf(protocol::mrsp::kBufferSize);
  buf.resize(protocol::mrsp::encode_request(entries.data(), n, buf.data(), buf.size()));
  assert_int_equal(buf.size(), protocol::mrsp::kHeaderSize + n * protocol::mrsp::kRequestEntrySize);
  return buf;
}

// Refused as `expected` says: the enum, not the log phrase, is what a server answers by.
void assert_rejected(const std::vector<uint8_t> &bytes, protocol::mrsp::DecodeError expected) {
  protocol::mrsp::Message msg;
  std::string why;
  protocol::mrsp::DecodeError error = protocol::mrsp::DecodeError::None;
  assert_false(decode_exact(bytes.data(), bytes.size(), msg, &why, &error));
  assert_int_equal(static_cast<int>(error), static_cast<int>(expected));
  assert_false(why.empty());
  assert_false(decode_exact(bytes.data(), bytes.size(), msg, nullptr));
}

void assert_entry_equal(const protocol::mrsp::RequestEntry &a,
                        const protocol::mrsp::RequestEntry &b) {
  assert_int_equal(a.flags, b.flags);
  assert_int_equal(a.naa_address, b.naa_address);
  assert_int_equal(a.host_address, b.host_address);
  assert_int_equal(a.host_rkey, b.host_rkey);
  assert_int_equal(a.size, b.size);
}

void aar_example_bytes(void **) {
  uint8_t buf[protocol::mrsp::kBufferSize];
  memset(buf, 0xee, sizeof buf);
  assert_int_equal(protocol::mrsp::encode_request(&kExampleEntry, 1, buf, sizeof buf), 28);
  const uint8_t header[4] = {0x01, 0x01, 0x00, 0x00};
  assert_memory_equal(buf, header, 4);
  assert_memory_equal(buf + 4, kExampleEntryBytes, 24);
  assert_int_equal(buf[28], 0xee);  // nothing written beyond the message
}

void aar_example_decodes(void **) {
  uint8_t bytes[28] = {0x01, 0x01, 0x00, 0x00};
  memcpy(bytes + 4, kExampleEntryBytes, 24);
  protocol::mrsp::Message msg;
  std::string why;
  assert_true(decode_exact(bytes, sizeof bytes, msg, &why));
  assert_int_equal(static_cast<int>(msg.type),
                   static_cast<int>(protocol::mrsp::Type::AdvertiseRequest));
  assert_int_equal(msg.request.size(), 1);
  assert_int_equal(msg.advert.size(), 0);
  assert_entry_equal(msg.request[0], kExampleEntry);
}

void host_immediate_examples(void **) {
  constexpr uint32_t v = protocol::imm::host_request(3, 0xA1, 0xB2, 0xC3);
  static_assert(v == 0xC3B2A183);
  const uint32_t wire = htonl(v);
  const uint8_t expected[4] = {0xc3, 0xb2, 0xa1, 0x83};
  assert_memory_equal(&wire, expected, 4);

  const uint32_t plain = htonl(protocol::imm::host_request(3));
  const uint8_t expected_plain[4] = {0x00, 0x00, 0x00, 0x83};
  assert_memory_equal(&plain, expected_plain, 4);

  assert_int_equal(protocol::imm::function_code(v), 3);
  assert_int_equal(protocol::imm::user_data(v), 0xC3B2A100);
  assert_true(protocol::imm::is_start(v));
  assert_false(protocol::imm::is_start(0));
  assert_int_equal(protocol::imm::function_code(protocol::imm::host_request(127)), 127);
  assert_int_equal(protocol::imm::host_request(127), 0xff);
}

void naa_immediate_examples(void **) {
  const uint32_t success = htonl(protocol::imm::naa_reply(0));
  const uint8_t expected_success[4] = {0x00, 0x00, 0x00, 0x00};
  assert_memory_equal(&success, expected_success, 4);

  static_assert(protocol::imm::naa_reply(0x10) == 0x1000);
  const uint32_t error = htonl(protocol::imm::naa_reply(0x10));
  const uint8_t expected_error[4] = {0x00, 0x00, 0x10, 0x00};
  assert_memory_equal(&error, expected_error, 4);

  assert_int_equal(protocol::imm::return_code(0x1000), 0x10);
  assert_int_equal(protocol::imm::reply_low_byte(0x1000), 0);
  // A low byte (e.g. an echoed function code) does not change the return code.
  assert_int_equal(protocol::imm::return_code(0x1083), 0x10);
  assert_int_equal(protocol::imm::reply_low_byte(0x1083), 0x83);
  assert_int_equal(protocol::imm::return_code(0xff00ab00), 0xab);  // only 8 bits of R >> 8
}

void request_round_trip(void **) {
  const protocol::mrsp::RequestEntry entries[] = {
      {protocol::mrsp::kInput, 0, 0x1000, 0x11, 1},
      {protocol::mrsp::kInput | protocol::mrsp::kSingleSend, 0x2000, 0xffffffffffffffff, 0xffffffff,
       0xffffffff},
      {protocol::mrsp::kOutput, protocol::mrsp::kMaxNaaAddress, 0x3000, 0x33, 4096},
      {0, 0x4000, 0x4000, 0x44, 7},  // neither INPUT nor OUTPUT: legal but useless
      {protocol::mrsp::kInternal, 0x5000, 0, 0, 8192},
  };
  uint8_t buf[protocol::mrsp::kBufferSize];
  const size_t len = protocol::mrsp::encode_request(entries, 5, buf, sizeof buf);
  assert_int_equal(len, 4 + 5 * 24);
  // flags and the 56-bit address share the first 8 bytes.
  const uint8_t third[8] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  assert_memory_equal(buf + 4 + 2 * 24, third, 8);

  protocol::mrsp::Message msg;
  assert_true(decode_exact(buf, len, msg));
  assert_int_equal(msg.request.size(), 5);
  for (size_t k = 0; k < 5; ++k) assert_entry_equal(msg.request[k], entries[k]);
}

void advert_round_trip(void **) {
  const protocol::mrsp::AdvertEntry entries[] = {{0x00007f0011223344, 0xaabbccdd, 4096},
                                                 {0xfedcba9876543210, 0x01020304, 0x05060708}};
  uint8_t buf[protocol::mrsp::kBufferSize];
  const size_t len = protocol::mrsp::encode_advert(entries, 2, buf, sizeof buf);
  assert_int_equal(len, 36);
  const uint8_t expected[36] = {0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x7f, 0x00, 0x11,
                                0x22, 0x33, 0x44, 0xaa, 0xbb, 0xcc, 0xdd, 0x00, 0x00,
                                0x10, 0x00, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32,
                                0x10, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
  assert_memory_equal(buf, expected, 36);

  protocol::mrsp::Message msg;
  assert_true(decode_exact(buf, len, msg));
  assert_int_equal(static_cast<int>(msg.type), static_cast<int>(protocol::mrsp::Type::Advertise));
  assert_int_equal(msg.advert.size(), 2);
  assert_int_equal(msg.request.size(), 0);
  for (size_t k = 0; k < 2; ++k) {
    assert_int_equal(msg.advert[k].naa_address, entries[k].naa_address);
    assert_int_equal(msg.advert[k].rkey, entries[k].rkey);
    assert_int_equal(msg.advert[k].size, entries[k].size);
  }
}

void error_round_trip(void **) {
  uint8_t buf[4];
  assert_int_equal(protocol::mrsp::encode_error(protocol::mrsp::ErrorCode::TooManyRegions, buf, 4),
                   4);
  const uint8_t expected[4] = {0x00, 0x03, 0x00, 0x00};
  assert_memory_equal(buf, expected, 4);
  assert_int_equal(protocol::mrsp::encode_error(protocol::mrsp::ErrorCode::NoMemory, buf, 3), 0);

  protocol::mrsp::Message msg;
  assert_true(decode_exact(buf, 4, msg));
  assert_int_equal(static_cast<int>(msg.type), static_cast<int>(protocol::mrsp::Type::Error));
  assert_int_equal(msg.error_code, 0x03);

  assert_false(msg.has_memory_limit);

  // libnaa's memory refusal: 16 more bytes, the figures; the first 4 an ordinary error.
  uint8_t refusal[protocol::mrsp::kMemoryLimitSize];
  assert_int_equal(protocol::mrsp::encode_memory_refusal({4096, 1024}, refusal, sizeof refusal - 1),
                   0);
  assert_int_equal(protocol::mrsp::encode_memory_refusal({4096, 1024}, refusal, sizeof refusal),
                   protocol::mrsp::kMemoryLimitSize);
  assert_true(decode_exact(refusal, 4, msg));
  assert_int_equal(msg.error_code, 0x01);
  assert_false(msg.has_memory_limit);
  assert_true(decode_exact(refusal, sizeof refusal, msg));
  assert_true(msg.has_memory_limit);
  assert_int_equal(msg.memory_limit.requested, 4096);
  assert_int_equal(msg.memory_limit.available, 1024);

  // The reference sender leaves the padding uninitialised.
  const uint8_t dirty[4] = {0x00, 0x02, 0xde, 0xad};
  assert_true(decode_exact(dirty, 4, msg));
  assert_int_equal(msg.error_code, 0x02);
  assert_rejected({0x00, 0x01, 0x00}, protocol::mrsp::DecodeError::Truncated);

  assert_string_equal(protocol::mrsp::error_code_name(0x01), "not enough memory");
  assert_string_equal(protocol::mrsp::error_code_name(0x02), "invalid address");
  assert_string_equal(protocol::mrsp::error_code_name(0x03), "too many regions");
  assert_string_equal(protocol::mrsp::error_code_name(0x00), "unknown MRSP error");
  assert_string_equal(protocol::mrsp::error_code_name(0xff), "unknown MRSP error");
}

void max_counts(void **) {
  uint8_t buf[1200];  // room for a 32nd / 48th entry, so only the count can be refused
  const std::vector<protocol::mrsp::RequestEntry> requests(32, kExampleEntry);
  const std::vector<protocol::mrsp::AdvertEntry> adverts(
      48, protocol::mrsp::AdvertEntry{0x1000, 1, 4096});
  protocol::mrsp::Message msg;

  assert_int_equal(
      protocol::mrsp::encode_request(requests.data(), 31, buf, protocol::mrsp::kBufferSize), 748);
  assert_true(decode_exact(buf, 748, msg));
  assert_int_equal(msg.request.size(), 31);
  assert_int_equal(protocol::mrsp::encode_request(requests.data(), 32, buf, sizeof buf), 0);

  assert_int_equal(
      protocol::mrsp::encode_advert(adverts.data(), 47, buf, protocol::mrsp::kBufferSize), 756);
  assert_true(decode_exact(buf, 756, msg));
  assert_int_equal(msg.advert.size(), 47);
  assert_int_equal(protocol::mrsp::encode_advert(adverts.data(), 48, buf, sizeof buf), 0);
}

void encoder_limits(void **) {
  uint8_t buf[protocol::mrsp::kBufferSize];
  const protocol::mrsp::AdvertEntry advert{0x1000, 1, 4096};
  assert_int_equal(protocol::mrsp::encode_request(&kExampleEntry, 0, buf, sizeof buf), 0);
  assert_int_equal(protocol::mrsp::encode_advert(&advert, 0, buf, sizeof buf), 0);
  assert_int_equal(protocol::mrsp::encode_request(&kExampleEntry, 1, buf, 27), 0);
  assert_int_equal(protocol::mrsp::encode_request(&kExampleEntry, 1, buf, 28), 28);
  assert_int_equal(protocol::mrsp::encode_advert(&advert, 1, buf, 19), 0);
  assert_int_equal(protocol::mrsp::encode_advert(&advert, 1, buf, 20), 20);

  protocol::mrsp::RequestEntry wide = kExampleEntry;
  wide.naa_address = protocol::mrsp::kMaxNaaAddress + 1;
  assert_int_equal(protocol::mrsp::encode_request(&wide, 1, buf, sizeof buf), 0);
}

void decode_rejects_truncation(void **) {
  for (size_t len = 0; len < 4; ++len)
    assert_rejected(std::vector<uint8_t>(len, 0x00), protocol::mrsp::DecodeError::Truncated);

  std::vector<uint8_t> request = valid_request(2);
  request.pop_back();
  assert_rejected(request, protocol::mrsp::DecodeError::Truncated);
  assert_rejected({0x01, 0x01, 0x00, 0x00}, protocol::mrsp::DecodeError::Truncated);

  uint8_t buf[protocol::mrsp::kBufferSize];
  const protocol::mrsp::AdvertEntry advert{0x1000, 1, 4096};
  const size_t len = protocol::mrsp::encode_advert(&advert, 1, buf, sizeof buf);
  assert_rejected(std::vector<uint8_t>(buf, buf + len - 1), protocol::mrsp::DecodeError::Truncated);

  protocol::mrsp::Message msg;
  std::string why;
  request = valid_request(1);
  request[1] = 2;  // claims an entry that was never sent
  assert_false(decode_exact(request.data(), request.size(), msg, &why));
  assert_string_equal(why.c_str(), "advertise-request of 2 entries needs 52 bytes, got 28");
}

void decode_rejects_counts(void **) {
  // Full 768-byte buffers, so that only the count itself can be the reason.
  for (uint8_t type : {0x01, 0x02})
    for (uint8_t count : {0, 32, 48, 255}) {
      if (type == 0x02 && count == 32) continue;  // 32 adverts are fine
      std::vector<uint8_t> bytes(protocol::mrsp::kBufferSize, 0x00);
      bytes[0] = type;
      bytes[1] = count;
      for (size_t k = 4; k < bytes.size(); k += 24) bytes[k] = protocol::mrsp::kInput;
      assert_rejected(bytes, count == 0 ? protocol::mrsp::DecodeError::NoEntries
                                        : protocol::mrsp::DecodeError::TooManyEntries);
    }

  protocol::mrsp::Message msg;
  std::string why;
  std::vector<uint8_t> bytes(protocol::mrsp::kBufferSize, 0x00);
  bytes[0] = 0x01;
  bytes[1] = 40;
  assert_false(decode_exact(bytes.data(), bytes.size(), msg, &why));
  assert_string_equal(why.c_str(), "advertise-request count 40 exceeds 31");
}

void decode_rejects_types(void **) {
  std::vector<uint8_t> bytes = valid_request(1);
  for (uint8_t type : {0x03, 0x04, 0x7f, 0x80, 0xff}) {
    bytes[0] = type;
    assert_rejected(bytes, protocol::mrsp::DecodeError::UnknownType);
  }
  protocol::mrsp::Message msg;
  std::string why;
  bytes[0] = 0x03;
  assert_false(decode_exact(bytes.data(), bytes.size(), msg, &why));
  assert_string_equal(why.c_str(), "message type 0x03 (request only) is reserved");
}

void decode_checks_flags(void **) {
  std::vector<uint8_t> bytes = valid_request(3);
  const size_t last_flags = 4 + 2 * 24;  // a bad entry after good ones
  for (uint8_t flags : {0x03, 0x05, 0x09, 0x0d, 0x0f, 0x02, 0x0a, 0x10, 0x80, 0x14}) {
    bytes[last_flags] = flags;
    assert_rejected(bytes, protocol::mrsp::DecodeError::BadFlags);
  }
  protocol::mrsp::Message msg;
  for (uint8_t flags : {0x00, 0x01, 0x04, 0x08, 0x0c, 0x06, 0x0e}) {
    bytes[last_flags] = flags;
    assert_true(decode_exact(bytes.data(), bytes.size(), msg));
    assert_int_equal(msg.request[2].flags, flags);
  }
  std::string why;
  bytes[last_flags] = 0x03;
  assert_false(decode_exact(bytes.data(), bytes.size(), msg, &why));
  assert_string_equal(why.c_str(),
                      "advertise-request entry 2 flags 0x03: INTERNAL combined with other flags");
}

void decode_tolerates_extra_bytes(void **) {
  std::vector<uint8_t> bytes = valid_request(1);
  bytes[2] = bytes[3] = 0xff;                       // header padding
  bytes.resize(protocol::mrsp::kBufferSize, 0xab);  // trailing garbage
  protocol::mrsp::Message msg;
  assert_true(decode_exact(bytes.data(), bytes.size(), msg));
  assert_int_equal(msg.request.size(), 1);
  assert_entry_equal(msg.request[0], kExampleEntry);
}

void placeholder_examples(void **) {
  const uint32_t sizes[] = {1, 4096, 4097, 0, 8192};
  uint64_t out[5];
  assert_true(protocol::mrsp::placeholder_addresses(sizes, 3, 0, out));
  assert_int_equal(out[0], 0);
  assert_int_equal(out[1], 4096);
  assert_int_equal(out[2], 8192);

  assert_true(protocol::mrsp::placeholder_addresses(sizes, 5, 0x100000, out));
  const uint64_t expected[5] = {0x100000, 0x101000, 0x102000, 0x104000, 0x104000};
  assert_memory_equal(out, expected, sizeof expected);
  assert_true(protocol::mrsp::placeholder_addresses(sizes, 0, 0, out));
}

void placeholder_overflow(void **) {
  const uint64_t last_page = protocol::mrsp::kMaxNaaAddress + 1 - 4096;
  const uint32_t page[] = {4096, 1};
  uint64_t out[2];
  assert_true(protocol::mrsp::placeholder_addresses(page, 1, last_page, out));
  assert_int_equal(out[0], last_page);
  assert_false(protocol::mrsp::placeholder_addresses(page, 2, last_page, out));
  assert_false(protocol::mrsp::placeholder_addresses(page, 1, last_page + 1, out));

  const uint32_t empty[] = {0};
  assert_true(protocol::mrsp::placeholder_addresses(empty, 1, protocol::mrsp::kMaxNaaAddress, out));
  assert_false(
      protocol::mrsp::placeholder_addresses(empty, 1, protocol::mrsp::kMaxNaaAddress + 1, out));
  assert_false(protocol::mrsp::placeholder_addresses(empty, 1, UINT64_MAX, out));

  const uint32_t huge[] = {0xffffffff};
  assert_false(protocol::mrsp::placeholder_addresses(
      huge, 1, protocol::mrsp::kMaxNaaAddress - 0xffffe000, out));
  assert_true(protocol::mrsp::placeholder_addresses(
      huge, 1, protocol::mrsp::kMaxNaaAddress + 1 - 0x100000000, out));
}

// doc/protocol.md §3.4: the tag, then the message; nothing where it does not fit the room.
void connect_data_round_trip(void **) {
  const uint8_t advert[] = {0x02, 0x01, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 9, 0, 0, 0x10, 0};
  std::string tail = protocol::mrsp::in_connect_data(advert, sizeof advert, 4 + sizeof advert);
  assert_int_equal(tail.size(), 4 + sizeof advert);
  assert_memory_equal(tail.data(), "MRSP", 4);
  const std::string identity("libnaa-server/1", 16);  // its NUL included
  const std::string data = identity + tail;
  size_t len = 0;
  const uint8_t *msg = protocol::mrsp::from_connect_data(data, identity.size(), &len);
  assert_non_null(msg);
  assert_int_equal(len, sizeof advert);
  assert_memory_equal(msg, advert, sizeof advert);
  protocol::mrsp::Message m;
  assert_int_equal(protocol::mrsp::decode(msg, len, m, nullptr), protocol::mrsp::DecodeError::None);
  assert_int_equal(m.advert.size(), 1);
  assert_int_equal(m.advert[0].rkey, 9);
}

void connect_data_limits(void **) {
  const uint8_t msg[8] = {0x01, 1};
  assert_true(protocol::mrsp::in_connect_data(msg, sizeof msg, 11).empty());  // one byte short
  assert_int_equal(protocol::mrsp::in_connect_data(msg, sizeof msg, 12).size(), 12);
  assert_true(protocol::mrsp::in_connect_data(msg, 0, 256).empty());
  assert_true(protocol::mrsp::in_connect_data(msg, sizeof msg, 3).empty());
  size_t len = 99;
  // No tag, the tag alone, a tag elsewhere, an offset past the end: no message.
  assert_null(protocol::mrsp::from_connect_data(std::string("libnaa-server/1", 16), 16, &len));
  assert_null(protocol::mrsp::from_connect_data("MRSP", 0, &len));
  assert_null(protocol::mrsp::from_connect_data("xMRSP\x01", 0, &len));
  assert_null(protocol::mrsp::from_connect_data("MRSP\x01", 6, &len));
  assert_int_equal(len, 99);
  assert_non_null(protocol::mrsp::from_connect_data("MRSP\x01", 0, &len));
  assert_int_equal(len, 1);
}

// doc/protocol.md §3.5: 2.5 J beside return code 0x10 is 1c c4 10 b4 on the wire; the ask and
// the answer after an MRSP message, where the decoder reads nothing.
void energy_report_examples(void **) {
  const uint32_t r =
      protocol::imm::naa_reply(0x10) | protocol::energy_report::in_immediate(2500000);
  assert_int_equal(r, 0x1cc410b4);
  assert_int_equal(protocol::imm::return_code(r), 0x10);
  assert_int_equal(*protocol::energy_report::from_immediate(r), 2500000);
  assert_int_equal(r & ~protocol::energy_report::kEnergyBits, protocol::imm::naa_reply(0x10));
  for (uint64_t uj : {uint64_t{0}, uint64_t{1}, uint64_t{524287}, uint64_t{1000000}})
    assert_int_equal(
        *protocol::energy_report::from_immediate(protocol::energy_report::in_immediate(uj)), uj);
  const uint64_t big = 123456789012;  // 123 kJ: within 4 ppm, never above
  const uint64_t back =
      *protocol::energy_report::from_immediate(protocol::energy_report::in_immediate(big));
  assert_true(back <= big && big - back <= big / 250000);
  assert_false(
      protocol::energy_report::from_immediate(protocol::energy_report::in_immediate(std::nullopt))
          .has_value());
  assert_int_equal(protocol::energy_report::in_immediate(std::nullopt),
                   protocol::energy_report::kEnergyBits);
  assert_true(
      protocol::energy_report::from_immediate(protocol::energy_report::in_immediate(UINT64_MAX))
          .has_value());

  std::vector<uint8_t> aar(4 + 24 + protocol::energy_report::kAskSize);
  protocol::mrsp::encode_request(&kExampleEntry, 1, aar.data(), 28);
  std::memcpy(aar.data() + 28, protocol::energy_report::kTag, protocol::energy_report::kAskSize);
  protocol::mrsp::Message m;
  assert_true(decode_exact(aar.data(), aar.size(), m));  // the decoder ignores the ask
  assert_int_equal(m.request.size(), 1);
  assert_true(protocol::energy_report::find_ask(aar.data() + 28, 4));
  assert_false(protocol::energy_report::find_ask(aar.data() + 28, 3));  // cut short
  assert_false(protocol::energy_report::find_ask(aar.data(), 4));       // no tag

  const std::string answer = protocol::energy_report::encode_answer("powercap (package-0)");
  assert_int_equal(answer.size(), 4 + 1 + 20);
  std::string source;
  const auto *a = reinterpret_cast<const uint8_t *>(answer.data());
  assert_true(protocol::energy_report::find_answer(a, answer.size(), &source));
  assert_string_equal(source.c_str(), "powercap (package-0)");
  assert_false(
      protocol::energy_report::find_answer(a, answer.size() - 1, &source));  // name cut short
  assert_int_equal(protocol::energy_report::encode_answer(std::string(100, 'x')).size(),
                   4 + 1 + protocol::energy_report::kMaxSourceName);
}

// doc/protocol.md §3.6: the example answer's bytes, paging where the room ends, and the host's
// checks of what it reads.
void kernel_list_examples(void **) {
  uint8_t ask[protocol::kernel_list::kAskSize];
  protocol::kernel_list::encode_ask(10, ask);
  uint8_t from = 0;
  assert_true(protocol::kernel_list::find_ask(ask, sizeof ask, &from));
  assert_int_equal(from, 10);
  assert_false(protocol::kernel_list::find_ask(ask, sizeof ask - 1, &from));  // cut short

  const std::vector<protocol::kernel_list::Kernel> builtin = {
      {1, protocol::kernel_list::kBuiltin, "add1"},
      {2, protocol::kernel_list::kBuiltin, "add2"},
      {3, protocol::kernel_list::kBuiltin, "noop"},
      {10, protocol::kernel_list::kBuiltin, "vecadd_f64"},
      {11, protocol::kernel_list::kBuiltin, "daxpy"},
      {12, protocol::kernel_list::kBuiltin, "dgemm"},
      {100, protocol::kernel_list::kPlugin, "xor_ff"}};
  const std::string all = protocol::kernel_list::encode_answer(builtin, 1, 768);
  const uint8_t head[] = {0x4b, 0x4c, 0x53, 0x54, 7, 0, 1, 0, 4, 'a', 'd', 'd', '1'};
  assert_true(all.size() > sizeof head);
  assert_memory_equal(all.data(), head, sizeof head);
  const auto *a = reinterpret_cast<const uint8_t *>(all.data());
  protocol::kernel_list::Page page;
  assert_true(protocol::kernel_list::find_answer(a, all.size(), 1, &page));
  assert_int_equal(page.kernels.size(), 7);
  assert_int_equal(page.next, 0);
  assert_string_equal(page.kernels[3].name.c_str(), "vecadd_f64");
  assert_int_equal(page.kernels[6].kind, protocol::kernel_list::kPlugin);
  assert_false(
      protocol::kernel_list::find_answer(a, all.size() - 1, 1, &page));       // a name cut short
  assert_false(protocol::kernel_list::find_answer(a, all.size(), 2, &page));  // code 1 below F = 2

  // Room for the header and two entries: the rest from code 3 on, on the next page.
  const std::string first = protocol::kernel_list::encode_answer(builtin, 1, 6 + 7 + 7);
  assert_true(protocol::kernel_list::find_answer(reinterpret_cast<const uint8_t *>(first.data()),
                                                 first.size(), 1, &page));
  assert_int_equal(page.kernels.size(), 2);
  assert_int_equal(page.next, 3);
  const std::string rest = protocol::kernel_list::encode_answer(builtin, 11, 768);
  assert_true(protocol::kernel_list::find_answer(reinterpret_cast<const uint8_t *>(rest.data()),
                                                 rest.size(), 11, &page));
  assert_int_equal(page.kernels.size(), 3);
  assert_int_equal(page.kernels[0].function_code, 11);
  // Room for no entry while one is due: nothing, never an empty page that names a next code.
  assert_true(protocol::kernel_list::encode_answer(builtin, 1, 8).empty());
  // Nothing from the code asked on: an empty, complete list.
  const std::string none = protocol::kernel_list::encode_answer(builtin, 101, 768);
  assert_int_equal(none.size(), protocol::kernel_list::kAnswerHeaderSize);

  // Checks: codes ascending, kinds known, a next code beyond the last listed.
  std::string bad = all;
  bad[6 + 7 + 0] = 1;  // the second entry's code equals the first's
  assert_false(protocol::kernel_list::find_answer(reinterpret_cast<const uint8_t *>(bad.data()),
                                                  bad.size(), 1, &page));
  bad = all;
  bad[6 + 1] = 2;  // an unknown kind
  assert_false(protocol::kernel_list::find_answer(reinterpret_cast<const uint8_t *>(bad.data()),
                                                  bad.size(), 1, &page));
  bad = none;
  bad[5] = 5;  // more to come after an empty page
  assert_false(protocol::kernel_list::find_answer(reinterpret_cast<const uint8_t *>(bad.data()),
                                                  bad.size(), 101, &page));
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(aar_example_bytes),       cmocka_unit_test(aar_example_decodes),
      cmocka_unit_test(host_immediate_examples), cmocka_unit_test(naa_immediate_examples),
      cmocka_unit_test(request_round_trip),      cmocka_unit_test(advert_round_trip),
      cmocka_unit_test(error_round_trip),        cmocka_unit_test(max_counts),
      cmocka_unit_test(encoder_limits),          cmocka_unit_test(decode_rejects_truncation),
      cmocka_unit_test(decode_rejects_counts),   cmocka_unit_test(decode_rejects_types),
      cmocka_unit_test(decode_checks_flags),     cmocka_unit_test(decode_tolerates_extra_bytes),
      cmocka_unit_test(placeholder_examples),    cmocka_unit_test(placeholder_overflow),
      cmocka_unit_test(connect_data_round_trip), cmocka_unit_test(connect_data_limits),
      cmocka_unit_test(energy_report_examples),  cmocka_unit_test(kernel_list_examples),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
