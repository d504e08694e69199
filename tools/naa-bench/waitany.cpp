// SPDX-License-Identifier: BSD-3-Clause
#include "waitany.hpp"

#include <sys/resource.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "buffer.hpp"
#include "clock.hpp"
#include "handle.hpp"

namespace naa::bench {
namespace {

// The slow handles' nap: longer than the measurement, short enough for naa-server to end it.
constexpr uint32_t kNapMs = 30000;

// 1000 handles hold about 7 descriptors each: the soft limit is raised to the hard one.
void raise_descriptor_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

// A handle of its own function code, 5-byte input (the nap in ms and a fill byte), 1-byte output.
class Raw {
 public:
  Raw(const Settings &s, uint32_t code) : in_(5), out_(1) {
    naa_param_t in{in_.data(), 5, false}, out{out_.data(), 1, false};
    Settings own = s;
    own.function_code = code;
    check_call("naa_create", create(own, &in, &out, &h_));
    std::memcpy(in_.data(), &kNapMs, 4);  // little-endian hosts: nap_fill reads it so
  }
  ~Raw() { naa_finalize(&h_); }
  naa_handle &handle() { return h_; }

 private:
  Buffer in_, out_;
  naa_handle h_ = NAA_HANDLE_NULL_INIT;
};

}  // namespace

void run_waitany(const Settings &s, FILE *out) {
  raise_descriptor_limit();
  Table table(out, s.csv, "waitany",
              "waitany: the wake-up of naa_waitany over Handles handles, all in flight, the one "
              "answered at once (function code --function, the others napping in --slow-code), "
              "against naa_wait on that one handle alone, medians",
              {{"Handles", "", "", 0},
               {"Iters", "iterations", "libnaa", 0},
               {"Wait(us)", "wait_us", "libnaa", 2},
               {"Waitany(us)", "waitany_us", "libnaa", 2},
               {"Ratio", "waitany_ratio", "libnaa", 2}});
  const size_t n = s.waitany_handles;
  std::vector<std::unique_ptr<Raw>> handles;
  handles.push_back(std::make_unique<Raw>(s, s.function_code));
  for (size_t i = 1; i < n; ++i) handles.push_back(std::make_unique<Raw>(s, s.slow_code));
  naa_handle &fast = handles[0]->handle();
  const size_t iters = s.iters, warmup = s.warmup_for(iters);

  Samples wait(iters);
  for (size_t i = 0; i < warmup + iters; ++i) {
    int64_t t0 = now_ns();
    check_call("naa_invoke", naa_invoke(&fast));
    check_call("naa_wait", naa_wait(&fast, nullptr));
    if (i >= warmup) wait.add(now_ns() - t0);
  }
  for (size_t i = 1; i < n; ++i) check_call("naa_invoke", naa_invoke(&handles[i]->handle()));
  std::vector<naa_handle> all(n);
  Samples any(iters);
  for (size_t i = 0; i < warmup + iters; ++i) {
    for (size_t k = 0; k < n; ++k) all[k] = handles[k]->handle();
    int64_t t0 = now_ns();
    check_call("naa_invoke", naa_invoke(&fast));
    int index = -1;
    check_call("naa_waitany", naa_waitany(static_cast<int>(n), all.data(), &index, nullptr));
    if (index != 0) throw CallFailed("naa_waitany returned a slow handle", NAA_ERR_INTERNAL);
    if (i >= warmup) any.add(now_ns() - t0);
  }
  for (size_t i = 1; i < n; ++i) naa_cancel(&handles[i]->handle());
  table.row({double(n), double(iters), wait.median_us(), any.median_us(),
             any.median_us() / wait.median_us()});
}

}  // namespace naa::bench
