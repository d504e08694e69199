// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: naa-server's per-connection message handling (Handler, the code Connection
// runs) driven from bytes. Input: a 2-byte little-endian length L (taken modulo 769), L bytes
// of MRSP message, then 4-byte big-endian invocation immediates. Built-in kernels only, run in
// process, on regions within a small memory budget.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "handler.hpp"
#include "protocol/immediate.hpp"
#include "config.h"
#include "transport/module.hpp"
#include "transport/registry.hpp"

using namespace naa;

// The handler opens no transport: the registry's rows (the parameter check of NAA_TRANSPORT
// parses names against them) link to none of the transports' code here.
namespace naa::transport {
#ifdef NAA_BUILTIN_TRANSPORTS
namespace ofi {
const Entry *ofi_entry() {
  return nullptr;
}
const Entry *shm_entry() {
  return nullptr;
}
}  // namespace ofi
namespace verbs {
const Entry *verbs_entry() {
  return nullptr;
}
}  // namespace verbs
#else
const Entry &module_entry(const std::string &, const char *row) {
  throw Error(NAA_ERR_UNSUPPORTED, std::string("transport ") + row + ": no modules here");
}
#endif
}  // namespace naa::transport

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  setenv("NAA_LOG_LEVEL", "error", 1);  // every refusal logs a warning: too slow and too loud
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const server::KernelRegistry kernels;
  static server::MemoryBudget budget(64 << 10, 256 << 10);
  if (size < 2) return -1;
  size_t len = (data[0] | size_t{data[1]} << 8) % (protocol::mrsp::kBufferSize + 1);
  data += 2, size -= 2;
  if (len > size) len = size;
  {
    server::Handler handler(kernels, budget, server::KernelPolicy{server::Isolation::None, {}},
                            nullptr);
    uint8_t *msg = new uint8_t[len ? len : 1];
    if (len) std::memcpy(msg, data, len);
    std::string why;
    uint8_t code = handler.on_mrsp(msg, len, &why);
    delete[] msg;
    if (code == 0) {
      if (handler.regions().size() != handler.request().size()) std::abort();
      for (size_t i = 0; i < handler.regions().size(); ++i)
        if (handler.regions()[i].size() != handler.request()[i].size) std::abort();
      for (size_t off = len; off + 4 <= size && off < len + 64; off += 4) {
        uint32_t v = uint32_t{data[off]} << 24 | uint32_t{data[off + 1]} << 16 |
                     uint32_t{data[off + 2]} << 8 | data[off + 3];
        std::optional<uint8_t> rc = handler.on_immediate(v, "fuzz");
        if (rc.has_value() == (v == 0)) std::abort();  // V = 0 alone goes unanswered
      }
    } else if (why.empty()) {
      std::abort();  // every refusal names its cause for the log line
    }
  }
  // Whatever happened, the handler gave back every byte it reserved: the whole total fits again,
  // one client's share at a time.
  for (int i = 0; i < 4; ++i)
    if (!budget.reserve(64 << 10)) std::abort();
  budget.release(256 << 10);
  return 0;
}
