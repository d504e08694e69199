// SPDX-License-Identifier: BSD-3-Clause
// What the files of the libfabric transport (ofi*.cpp) share: owners of libfabric objects, error
// reporting, the provider query with libnaa's hints, address text. Private to lib/transport.
#pragma once

#include <rdma/fabric.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "naa.h"

namespace naa::transport::ofi {

inline constexpr uint32_t kApiVersion = FI_VERSION(1, 9);
// The longest a blocking read sleeps before re-checking the event queue for a disconnect.
inline constexpr int kWaitSliceMs = 100;
// Room for a CM event's private data (the auth key and naa-server's identity are far smaller).
inline constexpr size_t kMaxPrivateData = 256;

std::string fi_error_text(int rc);

[[noreturn]] void fail(naa_error_t code, const std::string &what, int rc);

void check(int rc, const char *what);

struct InfoDeleter {
  void operator()(fi_info *info) const { fi_freeinfo(info); }
};
using InfoPtr = std::unique_ptr<fi_info, InfoDeleter>;

void close_fid(fid_t f);

// Owns a fabric object: closed on destruction, also when a constructor throws half way.
struct FidCloser {
  template <class T>
  void operator()(T *p) const {
    fi_close(&p->fid);
  }
};
template <class T>
using FidPtr = std::unique_ptr<T, FidCloser>;

std::string sockaddr_name(const void *addr);

// The text of an endpoint name, for log lines: FI_ADDR_STR names are text already.
std::string address_text(uint32_t format, const std::string &name);

// " 'PROVIDER'" for error messages, or nothing for no provider.
std::string provider_phrase(const std::string &provider);

// What both sides ask of a provider. The mr_mode bits are the ones we can honour (verbs needs
// them); providers drop the bits they do not need, and we adapt to what remains. A domain is
// shared by every endpoint of the process on it (ofi_context.hpp), from any thread: hence
// FI_THREAD_SAFE. MSG endpoints must keep a chain's writes in order and complete them in order
// (a write-with-immediate tells the peer that the writes before it have landed, and its
// completion stands for the chain's): msg_order FI_ORDER_WAW, comp_order FI_ORDER_STRICT. RDM
// providers that do not promise them (shm) get the final write fenced instead (post_writes).
// RDM endpoints also need tagged messages: the connection's control messages travel apart
// from MRSP's (ofi_control.hpp).
InfoPtr make_hints(const std::string &provider, bool auto_progress = false,
                   fi_ep_type type = FI_EP_MSG);

// fi_getinfo with our hints for `type`; nullptr when no provider matches.
InfoPtr find_info(const std::string &provider, bool auto_progress, fi_ep_type type,
                  const char *node, const char *service, uint64_t flags, int *rc_out = nullptr);

}  // namespace naa::transport::ofi
