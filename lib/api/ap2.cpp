// SPDX-License-Identifier: BSD-3-Clause
// The NAAICE reference middleware's interface (include/naaice_ap2.h, naaice_ap2(3)) on libnaa's
// sessions: the reference's types, counts and 0/-1 convention at the boundary, libnaa inside.
#include <cstddef>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "config.h"
#include "api/entry.hpp"
#include "diag/error_text.hpp"
#include "protocol/mrsp.hpp"
#include "naa.h"
#include "session/open_session.hpp"
#include "api/profiling.hpp"
#include "protocol/regions.hpp"
#include "session/session.hpp"

// naaice_ap2.h names its types as the reference does, which are also naa.h's names; inside a
// namespace both sets fit in this one file. The exported functions keep C linkage and their
// naaice_* symbols (a namespace does not change an extern "C" name).
#define NAAICE_AP2_BESIDE_NAA_H
#define NAAICE_NO_REFERENCE_NAMES
namespace naa::api {
namespace ref {
#include "naaice_ap2.h"
}

namespace {

// Programs compiled against the reference's header pass these layouts (its x86-64 figures,
// naaice_ap2(3); the same on every LP64 target).
static_assert(sizeof(ref::naa_param_t) == 24 && offsetof(ref::naa_param_t, single_send) == 16);
static_assert(sizeof(ref::naa_handle) == 16 && offsetof(ref::naa_handle, naaice_session) == 8);
static_assert(sizeof(ref::naa_status) == 16 && offsetof(ref::naa_status, naa_error) == 4 &&
              offsetof(ref::naa_status, bytes_received) == 8);

#define SAME_CODE(name) static_assert(static_cast<int>(ref::NAAICE_ERR_##name) == NAA_ERR_##name)
SAME_CODE(INVALID_ARGUMENT);
SAME_CODE(INVALID_HANDLE);
SAME_CODE(NO_NAA);
SAME_CODE(CONNECTION);
SAME_CODE(TRANSPORT);
SAME_CODE(TIMEOUT);
SAME_CODE(NAA);
SAME_CODE(NO_RESOURCES);
SAME_CODE(PROTOCOL);
SAME_CODE(STATE);
SAME_CODE(CONFIG);
SAME_CODE(UNSUPPORTED);
SAME_CODE(INTERNAL);
static_assert(NAA_ERR_INTERNAL == 13, "a new naa_error_t code belongs in naaice_ap2.h too");
#undef SAME_CODE

struct Ap2Session {
  explicit Ap2Session(std::unique_ptr<naa::session::Session> s) : session(std::move(s)) {}
  std::mutex mu;  // taken before the session's own
  const std::unique_ptr<naa::session::Session> session;
  // After completion the reference's naa_test reports the invocation again but its naa_wait
  // blocks until an alarm; here both report it again, at once, until the next naa_invoke.
  bool finished = false;
  ref::naa_status last{};
};

// Never destroyed, for the reason api.cpp gives for its table.
HandleTable<Ap2Session> &handles() {
  static auto *table = new HandleTable<Ap2Session>;
  return *table;
}

// The last failure per handle storage (its address: the storage is the program's, the
// library may not write more into it than the reference's 16 bytes). Only failures take the
// lock, so test-then-wait loops stay lock-free here.
struct LastError {
  int code;
  std::string cause;
};
std::mutex last_errors_mu;
std::map<const void *, LastError> &last_errors() {
  static auto *map = new std::map<const void *, LastError>;
  return *map;
}

void forget_error(const ref::naa_handle *handle) {
  std::lock_guard<std::mutex> lock(last_errors_mu);
  last_errors().erase(handle);
}

// The reference's convention: 0 or -1; libnaa's code and cause stay with the handle.
template <class Body>
int ap2_call(const char *function, ref::naa_handle *handle, Body body) {
  const naa::diag::log::Deferred deferred;  // the handler sees the call's lines once it unlocked
  std::string cause;
  const int code = guarded(function, body, &cause);
  if (code == NAA_SUCCESS) return 0;
  if (handle != nullptr) {
    if (cause.empty()) cause = std::string(function) + ": " + naa::diag::error_text(code);
    std::lock_guard<std::mutex> lock(last_errors_mu);
    last_errors()[handle] = LastError{code, std::move(cause)};
  }
  return -1;
}

std::shared_ptr<Ap2Session> lookup(const ref::naa_handle *handle) {
  if (handle == nullptr) throw Error(NAA_ERR_INVALID_ARGUMENT, "handle is NULL");
  return live(handles(), handle->naaice_session);
}

std::vector<naa_param_t> params(const ref::naa_param_t *p, unsigned n) {
  std::vector<naa_param_t> out;
  if (p != nullptr)
    for (unsigned i = 0; i < n; ++i) out.push_back({p[i].addr, p[i].size, p[i].single_send});
  return out;
}

// single_send on an output that is no input makes it an input sent on the first invocation,
// as the reference does (naa.h ignores the flag there).
void promote_single_send_outputs(std::vector<naa::protocol::Region> &regions,
                                 const std::vector<naa_param_t> &outputs) {
  for (const naa_param_t &o : outputs)
    for (naa::protocol::Region &r : regions)
      if (o.single_send && r.addr == o.addr && !(r.flags & naa::protocol::mrsp::kInput))
        r.flags |= naa::protocol::mrsp::kInput | naa::protocol::mrsp::kSingleSend;
}

// naa_test (poll: the session's test) and naa_wait (its wait) in the reference's terms: a
// finished invocation is reported again at once, and the NAA's return code is no failure
// (the session reports it as NAA_ERR_NAA).
template <class Poll>
int completion(Ap2Session &s, bool *flag, ref::naa_status *status, Poll poll) {
  std::lock_guard<std::mutex> lock(s.mu);
  *flag = s.finished;
  if (!s.finished) {
    ::naa_status st{};
    const int code = poll(flag, &st);
    if (!*flag || (code != NAA_SUCCESS && code != NAA_ERR_NAA)) return code;
    s.finished = true;
    s.last.state = ref::NAAICE_STATE_FINISHED;
    s.last.naa_error = static_cast<ref::naa_error>(st.naa_return_code);
    s.last.bytes_received = st.bytes_received;
  }
  if (status != nullptr) *status = s.last;
  return NAA_SUCCESS;
}

}  // namespace

namespace ref {
extern "C" {

int pnaaice_create(const naa_function_code_t function_code, naa_param_t *input_params,
                   unsigned int input_amount, naa_param_t *output_params,
                   unsigned int output_amount, naa_handle *handle) {
  if (handle != nullptr) forget_error(handle);  // a new life for this storage
  return ap2_call("naa_create", handle, [&] {
    if (handle == nullptr) throw Error(NAA_ERR_INVALID_ARGUMENT, "handle is NULL");
    handle->function_code = function_code;
    handle->naaice_session = 0;
    const uint8_t code = checked_function_code(function_code);
    const auto inputs = params(input_params, input_amount);
    const auto outputs = params(output_params, output_amount);
    auto regions = naa::protocol::layout_regions(
        input_params != nullptr ? inputs.data() : nullptr, input_amount,
        output_params != nullptr ? outputs.data() : nullptr, output_amount);
    promote_single_send_outputs(regions, outputs);
    // NAA_SPEC's param_count is the number of inputs the program passed, as in the reference.
    auto session = naa::session::open_session(code, std::move(regions), input_amount,
                                              naa::session::Settings::resolve_shared(nullptr));
    handle->naaice_session = handles().insert(std::make_shared<Ap2Session>(std::move(session)));
    return static_cast<int>(NAA_SUCCESS);
  });
}

int pnaaice_invoke(naa_handle *handle) {
  return ap2_call("naa_invoke", handle, [&] {
    auto s = lookup(handle);
    std::lock_guard<std::mutex> lock(s->mu);
    const int code = s->session->invoke();
    if (code == NAA_SUCCESS) s->finished = false;
    return code;
  });
}

int pnaaice_test(naa_handle *handle, bool *flag, naa_status *status) {
  return ap2_call("naa_test", handle, [&] {
    if (flag == nullptr) throw Error(NAA_ERR_INVALID_ARGUMENT, "flag is NULL");
    *flag = false;
    auto s = lookup(handle);
    return completion(*s, flag, status,
                      [&](bool *done, ::naa_status *st) { return s->session->test(done, st); });
  });
}

int pnaaice_wait(naa_handle *handle, naa_status *status) {
  return ap2_call("naa_wait", handle, [&] {
    auto s = lookup(handle);
    bool finished;
    return completion(*s, &finished, status, [&](bool *done, ::naa_status *st) {
      const int code = s->session->wait(st);
      *done = code == NAA_SUCCESS || code == NAA_ERR_NAA;
      return code;
    });
  });
}

int pnaaice_finalize(naa_handle *handle) {
  const int rc = ap2_call("naa_finalize", handle, [&] {
    lookup(handle);
    // A concurrent call on the same handle may hold the last reference; the session then
    // goes when that call returns.
    handles().remove(handle->naaice_session);
    handle->naaice_session = 0;
    return static_cast<int>(NAA_SUCCESS);
  });
  if (rc == 0) forget_error(handle);
  return rc;
}

int pnaaice_last_error(const naa_handle *handle, const char **message) {
  static const char kNullHandle[] = "handle is NULL";
  if (handle == nullptr) {
    if (message != nullptr) *message = kNullHandle;
    return NAA_ERR_INVALID_ARGUMENT;
  }
  std::lock_guard<std::mutex> lock(last_errors_mu);
  auto it = last_errors().find(handle);
  if (it == last_errors().end()) {
    if (message != nullptr) *message = naa::diag::error_text(NAA_SUCCESS);
    return NAA_SUCCESS;
  }
  if (message != nullptr) *message = it->second.cause.c_str();
  return it->second.code;
}

// The public names: weak aliases of the above (pnaa(3)).
NAA_PROFILED(naaice_create);
NAA_PROFILED(naaice_invoke);
NAA_PROFILED(naaice_test);
NAA_PROFILED(naaice_wait);
NAA_PROFILED(naaice_finalize);
NAA_PROFILED(naaice_last_error);

}  // extern "C"
}  // namespace ref
}  // namespace naa::api
