// SPDX-License-Identifier: BSD-3-Clause
#include "diag/last_error.hpp"

#include <cstdio>
#include <map>
#include <mutex>

#include "diag/error_text.hpp"
#include "diag/log.hpp"

namespace naa::diag::last_error {
namespace {

struct Failure {
  int code = NAA_SUCCESS;
  std::string cause;
};

thread_local Failure pending;      // returned(), not yet recorded
thread_local Failure this_thread;  // the thread's last failed call

std::mutex handles_mu;
// Never destroyed: a program may fail a call from an exit handler.
std::map<uint64_t, Failure> &by_handle() {
  static auto *map = new std::map<uint64_t, Failure>;
  return *map;
}

}  // namespace

int returned(naa_error_t code, const std::string &cause) {
  NAA_LOG_INFO("%s", cause.c_str());
  pending = Failure{code, cause};
  return code;
}

void record(const char *function, uint64_t handle_id, int code, std::string cause) {
  Failure f{code, std::move(cause)};
  if (f.cause.empty() && pending.code == code)
    f.cause = std::string(function) + ": " + pending.cause;
  pending = Failure{};
  std::lock_guard<std::mutex> lock(handles_mu);
  if (f.cause.empty() && handle_id != 0) {
    // A handle that failed for good answers every later call with the same code: keep the
    // first call's cause, which tells why.
    auto it = by_handle().find(handle_id);
    if (it != by_handle().end() && it->second.code == code) f.cause = it->second.cause;
  }
  if (f.cause.empty()) f.cause = std::string(function) + ": " + error_text(code);
  if (handle_id != 0) by_handle()[handle_id] = f;
  this_thread = std::move(f);
}

void forget(uint64_t handle_id) {
  std::lock_guard<std::mutex> lock(handles_mu);
  by_handle().erase(handle_id);
}

int read(uint64_t handle_id, bool of_thread, char *buf, size_t len) {
  Failure f;
  if (of_thread) {
    f = this_thread;
  } else {
    std::lock_guard<std::mutex> lock(handles_mu);
    auto it = by_handle().find(handle_id);
    if (it != by_handle().end()) f = it->second;
  }
  if (buf != nullptr && len > 0)
    std::snprintf(buf, len, "%s", f.code == NAA_SUCCESS ? "no failure" : f.cause.c_str());
  return f.code;
}

}  // namespace naa::diag::last_error
