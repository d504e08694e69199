// The C ABI: argument checks, handle lookup, and the mapping of C++ errors to naa_error_t.
// No exception ever crosses this boundary.
#include <new>

#include "config.h"
#include "error.hpp"
#include "handle_table.hpp"
#include "log.hpp"
#include "naa.h"
#include "options.hpp"
#include "regions.hpp"
#include "rm/resolver.hpp"
#include "session.hpp"
#include "transport/transport.hpp"

namespace {

using naa::Error;
using naa::Session;

// Never destroyed: sessions the program did not finalize must not be torn down by static
// destructors racing the fabric libraries' own exit handlers.
naa::HandleTable<Session> &handles() {
  static auto *table = new naa::HandleTable<Session>;
  return *table;
}

#define NAA_STR2(x) #x
#define NAA_STR(x) NAA_STR2(x)
constexpr const char kVersion[] =
    NAA_STR(NAA_VERSION_MAJOR) "." NAA_STR(NAA_VERSION_MINOR) "." NAA_STR(NAA_VERSION_PATCH);

template <class Body>
int guarded(const char *function, Body body) {
  try {
    return body();
  } catch (const Error &e) {
    NAA_LOG_ERROR("%s: %s", function, e.what());
    return e.code();
  } catch (const std::bad_alloc &) {
    NAA_LOG_ERROR("%s: out of memory", function);
    return NAA_ERR_NO_RESOURCES;
  } catch (const std::exception &e) {
    NAA_LOG_ERROR("%s: internal error: %s", function, e.what());
    return NAA_ERR_INTERNAL;
  } catch (...) {
    NAA_LOG_ERROR("%s: internal error", function);
    return NAA_ERR_INTERNAL;
  }
}

std::shared_ptr<Session> lookup(const naa_handle *handle) {
  if (handle == nullptr) throw Error(NAA_ERR_INVALID_ARGUMENT, "handle is NULL");
  auto session = handles().find(handle->id);
  if (!session) {
    char id[32];
    snprintf(id, sizeof id, "0x%016llx", static_cast<unsigned long long>(handle->id));
    if (handles().inherited(handle->id))
      throw Error(NAA_ERR_INVALID_HANDLE, std::string("handle ") + id +
                                              " belongs to the parent process (used after fork()); "
                                              "it stays the parent's, untouched");
    throw Error(NAA_ERR_INVALID_HANDLE, std::string("handle ") + id +
                                            " is not a live handle (never created, finalized, or stale)");
  }
  return session;
}

}  // namespace

extern "C" {

int naa_create(uint32_t function_code, naa_param_t *inputs, size_t n_inputs, naa_param_t *outputs,
               size_t n_outputs, naa_handle *handle) {
  return guarded("naa_create", [&] {
    if (handle == nullptr) throw Error(NAA_ERR_INVALID_ARGUMENT, "handle is NULL");
    handle->id = 0;
    if (function_code < 1 || function_code > 127)
      throw Error(NAA_ERR_INVALID_ARGUMENT,
                  "function code " + std::to_string(function_code) + " is not in 1..127");
    auto regions = naa::layout_regions(inputs, n_inputs, outputs, n_outputs);
    auto timeout = naa::timeout_from_environment();
    auto progress = naa::progress_from_environment();
    auto pacing = naa::pacing_from_environment();
    auto transport = naa::transport::open_transport(naa::transport::transport_from_environment());
    auto target = naa::rm::resolve(static_cast<uint8_t>(function_code), n_inputs);
    auto session = std::make_shared<Session>(*transport, static_cast<uint8_t>(function_code),
                                             std::move(regions), std::move(target), timeout,
                                             progress, pacing);
    handle->id = handles().insert(std::move(session));
    return static_cast<int>(NAA_SUCCESS);
  });
}

int naa_invoke(naa_handle *handle) {
  return guarded("naa_invoke", [&] { return lookup(handle)->invoke(); });
}

int naa_test(naa_handle *handle, bool *flag, naa_status *status) {
  return guarded("naa_test", [&] {
    if (flag == nullptr) throw Error(NAA_ERR_INVALID_ARGUMENT, "flag is NULL");
    *flag = false;
    return lookup(handle)->test(flag, status);
  });
}

int naa_wait(naa_handle *handle, naa_status *status) {
  return guarded("naa_wait", [&] { return lookup(handle)->wait(status); });
}

int naa_finalize(naa_handle *handle) {
  return guarded("naa_finalize", [&] {
    lookup(handle);
    // The last reference may be held by a concurrent call on the same handle; the session is
    // then destroyed when that call returns.
    handles().remove(handle->id);
    handle->id = 0;
    return static_cast<int>(NAA_SUCCESS);
  });
}

const char *naa_strerror(int error) {
  switch (error) {
    case NAA_SUCCESS: return "success";
    case NAA_ERR_INVALID_ARGUMENT: return "invalid argument";
    case NAA_ERR_INVALID_HANDLE: return "invalid handle (never created, finalized, or stale)";
    case NAA_ERR_NO_NAA: return "no NAA is configured for this function code";
    case NAA_ERR_CONNECTION: return "cannot connect to the NAA, or the connection was lost";
    case NAA_ERR_TRANSPORT: return "transport (RDMA/libfabric) error";
    case NAA_ERR_TIMEOUT: return "timed out (see NAA_TIMEOUT)";
    case NAA_ERR_NAA: return "the NAA returned an error code (see naa_status)";
    case NAA_ERR_NO_RESOURCES: return "out of resources (memory or memory registration)";
    case NAA_ERR_PROTOCOL: return "NAA protocol (MRSP) error";
    case NAA_ERR_STATE: return "operation not valid in the handle's current state";
    case NAA_ERR_CONFIG: return "malformed runtime configuration (NAA_SPEC, NAA_TRANSPORT, ...)";
    case NAA_ERR_UNSUPPORTED: return "not supported by this build or on this machine";
    case NAA_ERR_INTERNAL: return "internal libnaa error";
    default: return "unknown error";
  }
}

const char *naa_version(int *major, int *minor, int *patch) {
  if (major != nullptr) *major = NAA_VERSION_MAJOR;
  if (minor != nullptr) *minor = NAA_VERSION_MINOR;
  if (patch != nullptr) *patch = NAA_VERSION_PATCH;
  return kVersion;
}

}  // extern "C"
