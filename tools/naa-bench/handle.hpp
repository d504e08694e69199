// SPDX-License-Identifier: BSD-3-Clause
// One libnaa handle for the benchmark: an input and an output region of the same size (or one
// in-place region), created through the public API only, exactly as an application would:
// naa_create_attr with the server of --host (attr.naa) and per-handle runtime parameters
// (attr.params), so that handles differ without touching the environment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "buffer.hpp"
#include "naa.h"
#include "settings.hpp"

namespace naa::bench {

// A failed libnaa call: the benchmark stops with the call's name, naa_strerror text and the
// cause (naa_last_error: this thread's failure is the call's).
class CallFailed : public std::runtime_error {
 public:
  CallFailed(const char *call, int rc)
      : std::runtime_error(std::string(call) + ": " + naa_strerror(rc) + " (" + std::to_string(rc) +
                           "): " + cause()) {}

 private:
  static std::string cause() {
    char text[512];
    (void)naa_last_error(nullptr, text, sizeof text);
    return text;
  }
};

inline void check_call(const char *call, int rc) {
  if (rc != NAA_SUCCESS) throw CallFailed(call, rc);
}

// How many naa_create calls this process has made: the setup test times the first one of the
// process (which opens the transport Context) apart from the warm ones.
inline size_t &creates_made() {
  static size_t n = 0;
  return n;
}

// naa_create_attr for the server s.naa (empty: NAA_SPEC) with `params` ("NAME=value") set.
inline int create(const Settings &s, naa_param_t *in, naa_param_t *out, naa_handle *h,
                  const std::vector<std::string> &params = {}) {
  std::vector<const char *> list;
  for (const std::string &p : params) list.push_back(p.c_str());
  list.push_back(nullptr);
  naa_attr_t attr = NAA_ATTR_INIT;
  attr.naa = s.naa.empty() ? nullptr : s.naa.c_str();
  attr.params = list.data();
  ++creates_made();
  return naa_create_attr(s.function_code, in, 1, out, 1, &attr, h);
}

class Handle {
 public:
  Handle(const Settings &s, size_t size, const std::vector<std::string> &params = {})
      : input_(size), output_(s.in_place ? nullptr : std::make_unique<Buffer>(size)) {
    naa_param_t in{input_.data(), size, false};
    naa_param_t out{output_ ? output_->data() : input_.data(), size, false};
    check_call("naa_create", create(s, &in, &out, &h_, params));
  }
  ~Handle() { naa_finalize(&h_); }
  Handle(const Handle &) = delete;
  Handle &operator=(const Handle &) = delete;

  void invoke() { check_call("naa_invoke", naa_invoke(&h_)); }
  void wait() { check_call("naa_wait", naa_wait(&h_, nullptr)); }
  bool test() {
    bool done = false;
    check_call("naa_test", naa_test(&h_, &done, nullptr));
    return done;
  }
  naa_handle_info_t info() const {
    naa_handle_info_t i{};
    check_call("naa_handle_info", naa_handle_info(&h_, &i));
    return i;
  }
  void round_trip() {
    invoke();
    wait();
  }

 private:
  Buffer input_;
  std::unique_ptr<Buffer> output_;
  naa_handle h_ = NAA_HANDLE_NULL_INIT;
};

}  // namespace naa::bench
