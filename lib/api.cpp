// SPDX-License-Identifier: BSD-3-Clause
// The C ABI: argument checks, handle lookup, and the mapping of C++ errors to naa_error_t.
// No exception ever crosses this boundary.
#include "config.h"
#include "completion.hpp"
#include "entry.hpp"
#include "naa.h"
#include "open_session.hpp"
#include "regions.hpp"
#include "session.hpp"

namespace {

using naa::Error;
using naa::guarded;
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

std::shared_ptr<Session> lookup(const naa_handle *handle) {
  if (handle == nullptr) throw Error(NAA_ERR_INVALID_ARGUMENT, "handle is NULL");
  return naa::live(handles(), handle->id);
}

int create(const char *function, uint32_t function_code, naa_param_t *inputs, size_t n_inputs,
           naa_param_t *outputs, size_t n_outputs, const naa_attr_t *attr, naa_handle *handle) {
  return guarded(function, [&] {
    if (handle == nullptr) throw Error(NAA_ERR_INVALID_ARGUMENT, "handle is NULL");
    handle->id = 0;
    const uint8_t code = naa::checked_function_code(function_code);
    auto regions = naa::layout_regions(inputs, n_inputs, outputs, n_outputs);
    const auto settings = naa::Settings::resolve(attr);
    handle->id = handles().insert(naa::open_session(code, std::move(regions), n_inputs, settings));
    return static_cast<int>(NAA_SUCCESS);
  });
}

// The handles of a naa_waitall & co. call, null where inactive (NAA_HANDLE_NULL or nothing in
// flight). A handle that is neither live nor null fails the whole call, as a bad request
// argument fails MPI's.
naa::Sessions sessions_of(int count, const naa_handle *list) {
  if (count < 0) throw Error(NAA_ERR_INVALID_ARGUMENT, "count " + std::to_string(count) + " < 0");
  if (count > 0 && list == nullptr) throw Error(NAA_ERR_INVALID_ARGUMENT, "handles is NULL");
  naa::Sessions sessions(static_cast<size_t>(count));
  for (size_t i = 0; i < sessions.size(); ++i) {
    if (list[i].id == 0) continue;
    auto s = naa::live(handles(), list[i].id);
    if (s->in_flight()) sessions[i] = std::move(s);
  }
  return sessions;
}

}  // namespace

extern "C" {

int naa_create(uint32_t function_code, naa_param_t *inputs, size_t n_inputs, naa_param_t *outputs,
               size_t n_outputs, naa_handle *handle) {
  return create("naa_create", function_code, inputs, n_inputs, outputs, n_outputs, nullptr, handle);
}

int naa_create_attr(uint32_t function_code, naa_param_t *inputs, size_t n_inputs,
                    naa_param_t *outputs, size_t n_outputs, const naa_attr_t *attr,
                    naa_handle *handle) {
  return create("naa_create_attr", function_code, inputs, n_inputs, outputs, n_outputs, attr,
                handle);
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

int naa_cancel(naa_handle *handle) {
  return guarded("naa_cancel", [&] { return lookup(handle)->cancel(); });
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

int naa_waitall(int count, naa_handle handles[], naa_status statuses[]) {
  return guarded("naa_waitall", [&] { return naa::wait_all(sessions_of(count, handles), statuses); });
}

int naa_waitany(int count, naa_handle handles[], int *index, naa_status *status) {
  return guarded("naa_waitany", [&] {
    if (index == nullptr) throw Error(NAA_ERR_INVALID_ARGUMENT, "index is NULL");
    *index = NAA_UNDEFINED;
    return naa::wait_any(sessions_of(count, handles), index, status);
  });
}

int naa_testany(int count, naa_handle handles[], int *index, bool *flag, naa_status *status) {
  return guarded("naa_testany", [&] {
    if (index == nullptr || flag == nullptr)
      throw Error(NAA_ERR_INVALID_ARGUMENT, "index or flag is NULL");
    *index = NAA_UNDEFINED;
    *flag = false;
    return naa::test_any(sessions_of(count, handles), index, flag, status);
  });
}

int naa_testall(int count, naa_handle handles[], bool *flag, naa_status statuses[]) {
  return guarded("naa_testall", [&] {
    if (flag == nullptr) throw Error(NAA_ERR_INVALID_ARGUMENT, "flag is NULL");
    *flag = false;
    return naa::test_all(sessions_of(count, handles), flag, statuses);
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
    case NAA_ERR_IN_STATUS: return "some handles failed: see each naa_status.error";
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
