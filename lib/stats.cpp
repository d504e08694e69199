// SPDX-License-Identifier: BSD-3-Clause
#include "stats.hpp"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "error_text.hpp"
#include "last_error.hpp"
#include "mrsp.hpp"
#include "params.hpp"
#include "rank.hpp"

namespace naa::stats {
namespace detail {
std::atomic<int> state{-1};
}  // namespace detail

namespace {

constexpr size_t kCodes = sizeof(naa_stats_t::errors) / sizeof(naa_stats_t::errors[0]);

struct Handle {
  size_t line;
  uint64_t first_out, steady_out, back;
  bool started;
};

std::mutex mu;
naa_stats_t totals_{};
std::vector<naa_stats_function_t> &lines() {  // never destroyed: the exit handler prints it
  static auto *v = new std::vector<naa_stats_function_t>;
  return *v;
}
std::unordered_map<uint64_t, Handle> &handles() {
  static auto *m = new std::unordered_map<uint64_t, Handle>;
  return *m;
}

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

double ms(double seconds) { return seconds * 1e3; }

// One block per process on stderr, each line prefixed with who wrote it, in one write(2).
void print() {
  std::lock_guard<std::mutex> lock(mu);
  char who[64];
  const int r = rank();
  if (r >= 0) snprintf(who, sizeof who, "naa-stats[%d, rank %d]", static_cast<int>(getpid()), r);
  else snprintf(who, sizeof who, "naa-stats[%d]", static_cast<int>(getpid()));
  std::string out;
  char line[512];
  snprintf(line, sizeof line, "%s: %llu naa_create in %.3f ms\n", who,
           static_cast<unsigned long long>(totals_.creates), ms(totals_.create_s));
  out += line;
  for (const naa_stats_function_t &f : lines()) {
    snprintf(line, sizeof line,
             "%s: function %u at %s: %llu invocations, %llu bytes out, %llu bytes back; "
             "naa_invoke %.3f ms, naa_wait %llu calls %.3f ms, naa_test %llu polls %.3f ms\n",
             who, f.function_code, f.naa, static_cast<unsigned long long>(f.invocations),
             static_cast<unsigned long long>(f.bytes_out),
             static_cast<unsigned long long>(f.bytes_back), ms(f.invoke_s),
             static_cast<unsigned long long>(f.waits), ms(f.wait_s),
             static_cast<unsigned long long>(f.tests), ms(f.test_s));
    out += line;
  }
  if (totals_.completion_calls > 0) {
    snprintf(line, sizeof line, "%s: naa_waitall/waitany/testany/testall %llu calls %.3f ms\n",
             who, static_cast<unsigned long long>(totals_.completion_calls),
             ms(totals_.completion_s));
    out += line;
  }
  std::string errors;
  for (size_t c = 1; c < kCodes; ++c)
    if (totals_.errors[c] > 0)
      errors += " " + std::to_string(totals_.errors[c]) + " x " + std::to_string(c) + " (" +
                error_text(static_cast<int>(c)) + ");";
  out += std::string(who) + ": errors:" + (errors.empty() ? " none" : errors) + "\n";
  ssize_t ignored = ::write(STDERR_FILENO, out.data(), out.size());
  (void)ignored;
}

void switch_on_locked() {
  if (detail::state.load() == 1) return;
  detail::state.store(1);
  std::atexit(print);
}

}  // namespace

bool detail::read_environment() {
  std::lock_guard<std::mutex> lock(mu);
  if (state.load() < 0) {
    const std::string v = params::Values::read().text("NAA_STATS");
    if (v == "1") switch_on_locked();
    else state.store(0);
  }
  return state.load() == 1;
}

void enable() {
  if (on()) return;
  std::lock_guard<std::mutex> lock(mu);
  switch_on_locked();
}

uint64_t start(Call call) { return call == Call::Create || on() ? now_ns() : 0; }

void finish(Call call, uint64_t t0, uint64_t handle_id, int code) {
  if (!on()) return;
  const double s = static_cast<double>(now_ns() - t0) / 1e9;
  std::lock_guard<std::mutex> lock(mu);
  if (code != NAA_SUCCESS) ++totals_.errors[static_cast<size_t>(code) < kCodes ? code : 0];
  if (call == Call::Create) {
    ++totals_.creates;
    totals_.create_s += s;
    return;
  }
  if (call == Call::Other) return;
  if (call == Call::Completion) {
    ++totals_.completion_calls;
    totals_.completion_s += s;
    return;
  }
  auto it = handles().find(handle_id);
  if (it == handles().end()) return;  // created while statistics were off, or not a handle
  Handle &h = it->second;
  naa_stats_function_t &f = lines()[h.line];
  switch (call) {
    case Call::Invoke:
      f.invoke_s += s;
      if (code != NAA_SUCCESS) break;
      ++f.invocations;
      f.bytes_out += h.started ? h.steady_out : h.first_out;
      f.bytes_back += h.back;
      h.started = true;
      break;
    case Call::Test:
      ++f.tests;
      f.test_s += s;
      break;
    case Call::Wait:
      ++f.waits;
      f.wait_s += s;
      break;
    default: break;
  }
}

void created(uint64_t handle_id, uint8_t function_code, const std::string &naa,
             const std::vector<Region> &regions) {
  Handle h{0, 0, 0, 0, false};
  for (const Region &r : regions) {
    if (r.flags & mrsp::kInput) {
      h.first_out += r.size;
      if (!(r.flags & mrsp::kSingleSend)) h.steady_out += r.size;
    }
    if (r.flags & mrsp::kOutput) h.back += r.size;
  }
  std::lock_guard<std::mutex> lock(mu);
  size_t i = 0;
  while (i < lines().size() && !(lines()[i].function_code == function_code &&
                                 naa == lines()[i].naa))
    ++i;
  if (i == lines().size()) {
    naa_stats_function_t l{};
    l.function_code = function_code;
    snprintf(l.naa, sizeof l.naa, "%s", naa.c_str());
    lines().push_back(l);
  }
  h.line = i;
  handles()[handle_id] = h;
}

void finalized(uint64_t handle_id) {
  std::lock_guard<std::mutex> lock(mu);
  handles().erase(handle_id);
}

int get(naa_stats_t *totals, naa_stats_function_t *functions, size_t max_functions) {
  if (!on())
    return last_error::returned(NAA_ERR_STATE, "statistics are off: set NAA_STATS=1, or "
                                               "NAA_STATS=1 in a handle's naa_attr_t.params");
  std::lock_guard<std::mutex> lock(mu);
  if (totals != nullptr) {
    *totals = totals_;
    totals->n_functions = lines().size();
  }
  for (size_t i = 0; functions != nullptr && i < max_functions && i < lines().size(); ++i)
    functions[i] = lines()[i];
  return NAA_SUCCESS;
}

}  // namespace naa::stats
