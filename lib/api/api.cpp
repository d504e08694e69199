// SPDX-License-Identifier: BSD-3-Clause
// The C ABI: argument checks, handle lookup, and the mapping of C++ errors to naa_error_t.
// No exception ever crosses this boundary.
#include "config.h"

#include <optional>

#include "session/completion.hpp"
#include "api/entry.hpp"
#include "diag/error_text.hpp"
#include "diag/last_error.hpp"
#include "diag/log.hpp"
#include "naa.h"
#include "session/open_session.hpp"
#include "api/profiling.hpp"
#include "protocol/regions.hpp"
#include "session/session.hpp"
#include "session/stats.hpp"

namespace naa::api {
namespace {

using session::Session;
using session::stats::Call;

// Never destroyed: sessions the program did not finalize must not be torn down by static
// destructors racing the fabric libraries' own exit handlers.
HandleTable<Session> &handles() {
  static auto *table = new HandleTable<Session>;
  return *table;
}

#define NAA_STR2(x) #x
#define NAA_STR(x) NAA_STR2(x)
constexpr const char kVersion[] =
    NAA_STR(NAA_VERSION_MAJOR) "." NAA_STR(NAA_VERSION_MINOR) "." NAA_STR(NAA_VERSION_PATCH);

// When the invocation handle id's call completed was seen at each stage (NAA_STATS, NAA_TRACE).
std::optional<naa::session::stats::Stages> stages_of(uint64_t id) {
  const auto session = handles().find(id);
  if (!session) return std::nullopt;
  Session::Stages s = session->last_stages();
  const auto ns = [](naa::Deadline::Clock::time_point t) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
  };
  return naa::session::stats::Stages{
      ns(s.invoked), ns(s.written),  ns(s.final_posted), ns(s.final_post_returned),
      ns(s.replied), s.naa_measured, s.naa_uj,           std::move(s.naa_source)};
}

// guarded(), and a failure's cause kept for naa_last_error(3) under the handle (if the call
// has one; its id as the caller passed it, or for a create the new one) and the calling
// thread. Each call is observed (NAA_STATS, NAA_TRACE) as `call`; *completed (may be null)
// tells whether a naa_test completed the invocation.
template <class Body>
int entry(const char *function, naa::session::stats::Call call, const naa_handle *handle, Body body,
          const bool *completed = nullptr) {
  const naa::diag::log::Deferred deferred;  // the handler sees the call's lines once it unlocked
  const uint64_t t0 = naa::session::stats::start(call);
  const uint64_t id_before = handle != nullptr ? handle->id : 0;
  std::string cause;
  const int code = guarded(function, body, &cause);
  const uint64_t id = call == Call::Create && handle != nullptr ? handle->id : id_before;
  if (t0 != 0) {
    const bool done = completed != nullptr && *completed;
    const auto stages =
        naa::session::stats::completes(call, code, done) ? stages_of(id) : std::nullopt;
    naa::session::stats::finish(call, function, t0, id, code, done, stages ? &*stages : nullptr);
  }
  if (code != NAA_SUCCESS) naa::diag::last_error::record(function, id, code, std::move(cause));
  return code;
}

std::shared_ptr<Session> lookup(const naa_handle *handle) {
  if (handle == nullptr) throw Error(NAA_ERR_INVALID_ARGUMENT, "handle is NULL");
  return live(handles(), handle->id);
}

int create(const char *function, uint32_t function_code, naa_param_t *inputs, size_t n_inputs,
           naa_param_t *outputs, size_t n_outputs, const naa_attr_t *attr, naa_handle *handle) {
  return entry(function, Call::Create, handle, [&] {
    if (handle == nullptr) throw Error(NAA_ERR_INVALID_ARGUMENT, "handle is NULL");
    handle->id = 0;
    const uint8_t code = checked_function_code(function_code);
    auto regions = naa::protocol::layout_regions(inputs, n_inputs, outputs, n_outputs);
    auto settings = naa::session::Settings::resolve_shared(attr);
    naa::session::stats::enable(settings->params);
    auto session = naa::session::open_session(code, regions, n_inputs, std::move(settings));
    const std::string naa_address = session->peer();
    handle->id = handles().insert(std::move(session));
    if (naa::session::stats::on())
      naa::session::stats::created(handle->id, code, naa_address, regions);
    return static_cast<int>(NAA_SUCCESS);
  });
}

// The handles of a naa_waitall & co. call, pinned in the table for the call (a naa_finalize
// meanwhile takes effect as it ends) rather than each held by a reference: a call over a
// thousand handles touches none of them that it need not. Null where inactive
// (NAA_HANDLE_NULL or, when `in_flight`, nothing in flight: the blocking calls learn that as
// they join the wait). A handle that is neither live nor null fails the whole call, as a bad
// request argument fails MPI's.
class Pinned {
  struct Ids {
    const naa_handle *list;
    uint64_t operator()(size_t i) const { return list[i].id; }
  };
  // The thread's array for the pinned sessions, kept across its calls: a call over a thousand
  // handles allocates none (a call from a log handler, inside another, gets its own).
  struct Kept {
    naa::session::Sessions sessions;
    bool busy = false;
  };

 public:
  Pinned(int count, const naa_handle *list, bool in_flight) : list_(list) {
    if (count < 0) throw Error(NAA_ERR_INVALID_ARGUMENT, "count " + std::to_string(count) + " < 0");
    if (count > 0 && list == nullptr) throw Error(NAA_ERR_INVALID_ARGUMENT, "handles is NULL");
    thread_local Kept kept;
    if (!kept.busy) {
      kept_ = &kept;
      kept.busy = true;
      pinned_ = &kept.sessions;
    }
    pinned_->resize(static_cast<size_t>(count));
    if (!handles().pin_all(pinned_->size(), Ids{list_}, pinned_->data()))
      for (size_t i = 0; i < pinned_->size(); ++i)
        if (list[i].id != 0 && (*pinned_)[i] == nullptr) {
          unpin();
          live(handles(), list[i].id);  // throws, saying why
        }
    if (!in_flight) return;
    filtered_ = *pinned_;
    invocations_.assign(filtered_.size(), 0);
    for (size_t i = 0; i < filtered_.size(); ++i)
      if (filtered_[i] != nullptr && (invocations_[i] = filtered_[i]->in_flight()) == 0)
        filtered_[i] = nullptr;
  }
  ~Pinned() { unpin(); }
  Pinned(const Pinned &) = delete;
  Pinned &operator=(const Pinned &) = delete;

  const naa::session::Sessions &sessions() const {
    return filtered_.empty() ? *pinned_ : filtered_;
  }
  // With `in_flight`: the number of each one's invocation in flight (Session::in_flight).
  const std::vector<uint64_t> &invocations() const { return invocations_; }

 private:
  void unpin() {
    handles().unpin_all(pinned_->size(), Ids{list_}, pinned_->data());
    pinned_->clear();
    if (kept_ != nullptr) kept_->busy = false;
    kept_ = nullptr;
  }

  const naa_handle *list_;
  Kept *kept_ = nullptr;        // the thread's, while this call uses it
  naa::session::Sessions own_;  // else
  naa::session::Sessions *pinned_ = &own_;
  naa::session::Sessions filtered_;
  std::vector<uint64_t> invocations_;
};

}  // namespace
}  // namespace naa::api

// The C ABI is defined where naa.h declares it, at global scope: a definition inside a
// namespace would not take the visibility of naa.h's declaration, and would not be exported.
using naa::Error;
using namespace naa::api;

extern "C" {

int pnaa_create(uint32_t function_code, naa_param_t *inputs, size_t n_inputs, naa_param_t *outputs,
                size_t n_outputs, naa_handle *handle) {
  return create("naa_create", function_code, inputs, n_inputs, outputs, n_outputs, nullptr, handle);
}

int pnaa_create_attr(uint32_t function_code, naa_param_t *inputs, size_t n_inputs,
                     naa_param_t *outputs, size_t n_outputs, const naa_attr_t *attr,
                     naa_handle *handle) {
  return create("naa_create_attr", function_code, inputs, n_inputs, outputs, n_outputs, attr,
                handle);
}

int pnaa_invoke(naa_handle *handle) {
  return entry("naa_invoke", Call::Invoke, handle, [&] { return lookup(handle)->invoke(); });
}

int pnaa_test(naa_handle *handle, bool *flag, naa_status *status) {
  return entry(
      "naa_test", Call::Test, handle,
      [&] {
        if (flag == nullptr) throw Error(NAA_ERR_INVALID_ARGUMENT, "flag is NULL");
        *flag = false;
        return lookup(handle)->test(flag, status);
      },
      flag);
}

int pnaa_wait(naa_handle *handle, naa_status *status) {
  return entry("naa_wait", Call::Wait, handle, [&] { return lookup(handle)->wait(status); });
}

int pnaa_cancel(naa_handle *handle) {
  return entry("naa_cancel", Call::Other, handle, [&] { return lookup(handle)->cancel(); });
}

int pnaa_finalize(naa_handle *handle) {
  return entry("naa_finalize", Call::Other, handle, [&] {
    lookup(handle);
    // The last reference may be held by a concurrent call on the same handle; the session is
    // then destroyed when that call returns.
    handles().remove(handle->id);
    naa::diag::last_error::forget(handle->id);
    naa::session::stats::finalized(handle->id);
    handle->id = 0;
    return static_cast<int>(NAA_SUCCESS);
  });
}

int pnaa_waitall(int count, naa_handle handles[], naa_status statuses[]) {
  return entry("naa_waitall", Call::Completion, nullptr, [&] {
    return naa::session::wait_all(Pinned(count, handles, false).sessions(), statuses);
  });
}

int pnaa_waitany(int count, naa_handle handles[], int *index, naa_status *status) {
  return entry("naa_waitany", Call::Completion, nullptr, [&] {
    if (index == nullptr) throw Error(NAA_ERR_INVALID_ARGUMENT, "index is NULL");
    *index = NAA_UNDEFINED;
    return naa::session::wait_any(Pinned(count, handles, false).sessions(), index, status);
  });
}

int pnaa_testany(int count, naa_handle handles[], int *index, bool *flag, naa_status *status) {
  return entry("naa_testany", Call::Completion, nullptr, [&] {
    if (index == nullptr || flag == nullptr)
      throw Error(NAA_ERR_INVALID_ARGUMENT, "index or flag is NULL");
    *index = NAA_UNDEFINED;
    *flag = false;
    const Pinned pinned(count, handles, true);
    return naa::session::test_any(pinned.sessions(), pinned.invocations(), index, flag, status);
  });
}

int pnaa_testall(int count, naa_handle handles[], bool *flag, naa_status statuses[]) {
  return entry("naa_testall", Call::Completion, nullptr, [&] {
    if (flag == nullptr) throw Error(NAA_ERR_INVALID_ARGUMENT, "flag is NULL");
    *flag = false;
    const Pinned pinned(count, handles, true);
    return naa::session::test_all(pinned.sessions(), pinned.invocations(), flag, statuses);
  });
}

const char *pnaa_strerror(int error) {
  return naa::diag::error_text(error);
}

const char *pnaa_rc_string(int naa_return_code) {
  return naa::diag::rc_text(naa_return_code);
}

int pnaa_last_error(const naa_handle *handle, char *buf, size_t len) {
  return naa::diag::last_error::read(handle != nullptr ? handle->id : 0, handle == nullptr, buf,
                                     len);
}

int pnaa_stats_get(naa_stats_t *totals, naa_stats_function_t *functions, size_t max_functions) {
  return entry("naa_stats_get", Call::Other, nullptr,
               [&] { return naa::session::stats::get(totals, functions, max_functions); });
}

int pnaa_stats_energy_get(naa_stats_energy_t *totals, naa_stats_energy_function_t *functions,
                          size_t max_functions) {
  return entry("naa_stats_energy_get", Call::Other, nullptr,
               [&] { return naa::session::stats::energy(totals, functions, max_functions); });
}

int pnaa_handle_info(const naa_handle *handle, naa_handle_info_t *info) {
  return entry("naa_handle_info", Call::Other, handle, [&] {
    if (info == nullptr) throw Error(NAA_ERR_INVALID_ARGUMENT, "info is NULL");
    lookup(handle)->describe(info);
    return static_cast<int>(NAA_SUCCESS);
  });
}

int pnaa_set_log_handler(naa_log_handler_t handler, void *arg) {
  naa::diag::log::set_handler(handler, arg);
  return NAA_SUCCESS;
}

const char *pnaa_version(int *major, int *minor, int *patch) {
  if (major != nullptr) *major = NAA_VERSION_MAJOR;
  if (minor != nullptr) *minor = NAA_VERSION_MINOR;
  if (patch != nullptr) *patch = NAA_VERSION_PATCH;
  return kVersion;
}

}  // extern "C"

// The public names: weak aliases of the above (pnaa(3)).
NAA_PROFILED(naa_create);
NAA_PROFILED(naa_create_attr);
NAA_PROFILED(naa_invoke);
NAA_PROFILED(naa_test);
NAA_PROFILED(naa_wait);
NAA_PROFILED(naa_cancel);
NAA_PROFILED(naa_finalize);
NAA_PROFILED(naa_waitall);
NAA_PROFILED(naa_waitany);
NAA_PROFILED(naa_testany);
NAA_PROFILED(naa_testall);
NAA_PROFILED(naa_strerror);
NAA_PROFILED(naa_version);
NAA_PROFILED(naa_rc_string);
NAA_PROFILED(naa_last_error);
NAA_PROFILED(naa_set_log_handler);
NAA_PROFILED(naa_stats_get);
NAA_PROFILED(naa_stats_energy_get);
NAA_PROFILED(naa_handle_info);
