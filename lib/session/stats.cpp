// SPDX-License-Identifier: BSD-3-Clause
#include "session/stats.hpp"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "error.hpp"
#include "diag/error_text.hpp"
#include "diag/last_error.hpp"
#include "protocol/mrsp.hpp"
#include "config/params.hpp"
#include "diag/rank.hpp"
#include "diag/trace.hpp"
#include "energy/energy.hpp"

namespace naa::session::stats {
namespace detail {
std::atomic<int> state{-1};
}  // namespace detail

namespace {

constexpr size_t kCodes = sizeof(naa_stats_t::errors) / sizeof(naa_stats_t::errors[0]);

struct Handle {
  size_t line;
  uint64_t first_out, steady_out, back;
  bool started;
  bool in_flight;  // for the timeline's invocation span
  // The energy window of the invocation in flight (NAA_ENERGY): from its naa_invoke, when the
  // meter could be read then, until the call that completes it.
  bool window_open;
  uint64_t window_t0, window_uj0, window_bytes;
};

// Per function line (lines()), what naa_stats_energy_get reports: the host's windows, and
// the invocations whose replies carried the NAA's joules.
struct EnergyLine {
  uint64_t windows, bytes;
  double s, j;
  uint64_t naa_runs, naa_bytes;
  double naa_j;
  std::string naa_source;
};

// The meter's reading as this thread's naa_invoke began (start()).
thread_local bool invoke_read;
thread_local uint64_t invoke_uj, invoke_read_ns;

std::mutex mu;
double naa_joules = 0;      // the NAAs' joules reported so far, for the timeline's counter
bool forked_child = false;  // this process is a fork()ed child of the one that turned stats on
naa_stats_t totals_{};
std::vector<naa_stats_function_t> &lines() {  // never destroyed: the exit handler prints it
  static auto *v = new std::vector<naa_stats_function_t>;
  return *v;
}
std::vector<EnergyLine> &energy_lines() {  // as lines(), one for one
  static auto *v = new std::vector<EnergyLine>;
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

double ms(double seconds) {
  return seconds * 1e3;
}

// The energy lines of the block: the source, or why none; per function code and NAA the
// joules over its measured windows.
void print_energy(const char *who, std::string *out) {
  energy::Meter *meter = energy::Meter::get();
  if (meter == nullptr) return;
  std::string line = std::string(who) + ": host energy: ";
  if (meter->sources().empty())
    line += "not measured: " + meter->unavailable();
  else
    line += meter->sources();
  *out += line + "\n";
  char text[512];
  for (size_t i = 0; i < lines().size(); ++i) {
    const EnergyLine &e = energy_lines()[i];
    if (e.windows > 0) {
      snprintf(text, sizeof text,
               "%s: function %u at %s: host %.6f J over %llu invocation windows of %.3f ms: "
               "%.6f J per invocation, %.3f J per GB\n",
               who, lines()[i].function_code, lines()[i].naa, e.j,
               static_cast<unsigned long long>(e.windows), ms(e.s),
               e.j / static_cast<double>(e.windows),
               e.bytes > 0 ? e.j / static_cast<double>(e.bytes) * 1e9 : 0.0);
      *out += text;
    }
    if (e.naa_runs > 0) {
      snprintf(text, sizeof text,
               "%s: function %u at %s: NAA %.6f J over %llu kernel runs (%s): "
               "%.6f J per invocation, %.3f J per GB\n",
               who, lines()[i].function_code, lines()[i].naa, e.naa_j,
               static_cast<unsigned long long>(e.naa_runs), e.naa_source.c_str(),
               e.naa_j / static_cast<double>(e.naa_runs),
               e.naa_bytes > 0 ? e.naa_j / static_cast<double>(e.naa_bytes) * 1e9 : 0.0);
      *out += text;
    }
  }
}

// One block per process on stderr, each line prefixed with who wrote it, in one write(2).
void print() {
  std::lock_guard<std::mutex> lock(mu);
  if (forked_child && totals_.creates == 0 && totals_.completion_calls == 0 && lines().empty())
    return;
  char who[64];
  const int r = diag::rank();
  if (r >= 0)
    snprintf(who, sizeof who, "naa-stats[%d, rank %d]", static_cast<int>(getpid()), r);
  else
    snprintf(who, sizeof who, "naa-stats[%d]", static_cast<int>(getpid()));
  std::string out;
  char line[512];
  snprintf(line, sizeof line, "%s: %llu naa_create in %.3f ms\n", who,
           static_cast<unsigned long long>(totals_.creates), ms(totals_.create_s));
  out += line;
  for (const naa_stats_function_t &f : lines()) {
    snprintf(
        line, sizeof line,
        "%s: function %u at %s: %llu invocations, %llu bytes out, %llu bytes back; "
        "naa_invoke %.3f ms, naa_wait %llu calls %.3f ms, naa_test %llu polls %.3f ms; "
        "transfer %.3f ms, NAA service %.3f ms\n",
        who, f.function_code, f.naa, static_cast<unsigned long long>(f.invocations),
        static_cast<unsigned long long>(f.bytes_out), static_cast<unsigned long long>(f.bytes_back),
        ms(f.invoke_s), static_cast<unsigned long long>(f.waits), ms(f.wait_s),
        static_cast<unsigned long long>(f.tests), ms(f.test_s), ms(f.transfer_s), ms(f.service_s));
    out += line;
  }
  if (totals_.completion_calls > 0) {
    snprintf(line, sizeof line, "%s: naa_waitall/waitany/testany/testall %llu calls %.3f ms\n", who,
             static_cast<unsigned long long>(totals_.completion_calls), ms(totals_.completion_s));
    out += line;
  }
  std::string errors;
  for (size_t c = 1; c < kCodes; ++c)
    if (totals_.errors[c] > 0)
      errors += " " + std::to_string(totals_.errors[c]) + " x " + std::to_string(c) + " (" +
                diag::error_text(static_cast<int>(c)) + ");";
  out += std::string(who) + ": errors:" + (errors.empty() ? " none" : errors) + "\n";
  print_energy(who, &out);
  ssize_t ignored = ::write(STDERR_FILENO, out.data(), out.size());
  (void)ignored;
}

// fork(): the child counts its own calls from zero and prints them at its exit only if it made
// any; the parent's figures stay the parent's. mu is held across the fork.
void before_fork() {
  mu.lock();
}
void after_fork_parent() {
  mu.unlock();
}
void after_fork_child() {
  totals_ = naa_stats_t{};
  lines().clear();
  energy_lines().clear();
  naa_joules = 0;
  handles().clear();
  forked_child = true;
  mu.unlock();
}

// Turns on what `bits` names (detail::kStats, kTrace) with the settings of `values`; called
// with mu held. "" or why the timeline could not start (it stays off; a later call tries again).
std::string switch_on_locked(int bits, const config::params::Values &values) {
  std::string why;
  if (bits & detail::kTrace) {
    const std::string &dir = values.text("NAA_TRACE");
    try {
      if (!dir.empty())
        why = diag::trace::open(
            dir, config::parse_trace_buffer(values.text("NAA_TRACE_BUFFER"), "NAA_TRACE_BUFFER"));
    } catch (const Error &e) {
      why = e.what();
    }
    if (dir.empty() || !why.empty()) bits &= ~detail::kTrace;
  }
  const int was = std::max(detail::state.load(), 0);
  if ((bits & detail::kStats) && !(was & detail::kStats)) {
    std::atexit(print);
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
  }
  detail::state.store(was | bits);
  return why;
}

// The transfer: from naa_invoke until our writes were seen complete; the NAA's service: from
// then (or from the final write's post, if pacing held it back later) until the reply. Where
// the reply was seen first (shm may report our writes complete only after the NAA's reply), the
// client cannot tell the two apart: the transfer then ends when the final write's post
// returned, which holds what the post copied, and the service counts from there (over shm, with
// the part of a large transfer that the post did not copy).
void served(naa_stats_function_t *f, int observed, uint64_t handle_id, const Stages &st) {
  const bool written_first = st.written < st.replied;
  const uint64_t final_posted = std::clamp(st.final_posted, st.invoked, st.replied);
  const uint64_t written = written_first
                               ? std::max(st.invoked, st.written)
                               : std::clamp(st.final_post_returned, final_posted, st.replied);
  const uint64_t serving = std::max(written, final_posted);
  if (observed & detail::kTrace) {
    diag::trace::stage(handle_id, "transfer", st.invoked, written);
    diag::trace::stage(handle_id, "NAA service", serving, st.replied);
  }
  if (!(observed & detail::kStats)) return;
  ++f->served;
  f->transfer_s += static_cast<double>(written - st.invoked) / 1e9;
  f->service_s += static_cast<double>(st.replied - serving) / 1e9;
}

}  // namespace

bool detail::read_environment() {
  std::lock_guard<std::mutex> lock(mu);
  if (state.load() < 0) {
    const config::params::Values values = config::params::Values::read(config::params::own());
    switch_on_locked((values.text("NAA_STATS") == "1" ? kStats : 0) | kTrace, values);
  }
  return state.load() != 0;
}

void enable(const config::params::Values &values) {
  const int bits = (values.text("NAA_STATS") == "1" ? detail::kStats : 0) |
                   (values.text("NAA_TRACE").empty() ? 0 : detail::kTrace);
  if (bits == 0 || (on() && (detail::state.load() & bits) == bits)) return;
  std::lock_guard<std::mutex> lock(mu);
  const std::string why = switch_on_locked(bits, values);
  if (!why.empty()) throw Error(NAA_ERR_CONFIG, "NAA_TRACE: " + why);
}

uint64_t start(Call call) {
  if (call != Call::Create && !on()) return 0;
  if (call == Call::Invoke && energy::Meter::on())
    invoke_read = energy::Meter::get()->read(&invoke_uj, &invoke_read_ns);
  return now_ns();
}

namespace {
// The energy window of h closes at t1 with the meter at uj (called with mu held); returns its
// joules.
double close_window(Handle *h, int observed, uint64_t t1, uint64_t uj, uint64_t read_ns) {
  h->window_open = false;
  const double j = static_cast<double>(uj - h->window_uj0) / 1e6;
  EnergyLine &e = energy_lines()[h->line];
  ++e.windows;
  e.bytes += h->window_bytes;
  e.s += static_cast<double>(t1 - h->window_t0) / 1e9;
  e.j += j;
  if (observed & detail::kTrace) diag::trace::energy(read_ns, static_cast<double>(uj) / 1e6);
  return j;
}
// The NAA's joules over the kernel run of h's completed invocation, as its reply reported
// them (called with mu held); returns them.
double naa_energy(Handle *h, int observed, const Stages &st) {
  const double j = static_cast<double>(st.naa_uj) / 1e6;
  EnergyLine &e = energy_lines()[h->line];
  ++e.naa_runs;
  e.naa_bytes += h->window_bytes;
  e.naa_j += j;
  e.naa_source = st.naa_source;
  naa_joules += j;
  if (observed & detail::kTrace) diag::trace::energy(now_ns(), naa_joules, "NAA energy");
  return j;
}
}  // namespace

void finish(Call call, const char *function, uint64_t t0, uint64_t handle_id, int code,
            bool completed, const Stages *stages) {
  const int observed = detail::state.load(std::memory_order_relaxed);
  if (observed <= 0) return;
  // A window's end is read at once, outside the lock; NAA_ENERGY off, it costs one load.
  uint64_t uj = 0, read_ns = 0;
  const bool read = energy::Meter::on() && completes(call, code, completed) &&
                    energy::Meter::get()->read(&uj, &read_ns);
  const uint64_t t1 = now_ns();
  const double s = static_cast<double>(t1 - t0) / 1e9;
  std::lock_guard<std::mutex> lock(mu);
  auto it = handles().find(handle_id);
  Handle *h = it != handles().end() ? &it->second : nullptr;
  naa_stats_function_t *f = h != nullptr ? &lines()[h->line] : nullptr;
  if (h != nullptr && call == Call::Invoke && code == NAA_SUCCESS && energy::Meter::on()) {
    h->window_open = invoke_read;
    h->window_t0 = t0;
    h->window_uj0 = invoke_uj;
    h->window_bytes = (h->started ? h->steady_out : h->first_out) + h->back;
    if (invoke_read && (observed & detail::kTrace))
      diag::trace::energy(invoke_read_ns, static_cast<double>(invoke_uj) / 1e6);
  }
  double window_j = -1;  // none measured
  if (h != nullptr && h->window_open && completes(call, code, completed)) {
    if (read)
      window_j = close_window(h, observed, t1, uj, read_ns);
    else
      h->window_open = false;  // unknown, not zero
  }
  double naa_j = -1;  // none reported
  if (f != nullptr && stages != nullptr && completes(call, code, completed)) {
    served(f, h->in_flight ? observed : observed & ~detail::kTrace, handle_id, *stages);
    if (stages->naa_measured) naa_j = naa_energy(h, observed, *stages);
  }
  if (observed & detail::kTrace) {
    const bool ends = h != nullptr && h->in_flight && completes(call, code, completed);
    if (call == Call::Invoke && code == NAA_SUCCESS && h != nullptr) {
      diag::trace::invocation_begin(handle_id, t0, f->function_code, f->naa,
                                    h->started ? h->steady_out : h->first_out, h->back);
      h->in_flight = true;
    }
    diag::trace::call(function, t0, t1, handle_id, f != nullptr ? f->function_code : 0,
                      f != nullptr ? f->naa : nullptr, code, completed);
    if (ends) {
      diag::trace::invocation_end(handle_id, t1, code, window_j, naa_j);
      h->in_flight = false;
    }
  }
  if (!(observed & detail::kStats)) {
    if (call == Call::Invoke && code == NAA_SUCCESS && h != nullptr) h->started = true;
    return;
  }
  if (code != NAA_SUCCESS) ++totals_.errors[static_cast<size_t>(code) < kCodes ? code : 0];
  if (call == Call::Create) {
    ++totals_.creates;
    totals_.create_s += s;
    return;
  }
  if (call == Call::Completion) {
    ++totals_.completion_calls;
    totals_.completion_s += s;
    return;
  }
  if (f == nullptr) return;  // created while observing was off, or not a handle
  switch (call) {
    case Call::Invoke:
      f->invoke_s += s;
      if (code != NAA_SUCCESS) break;
      ++f->invocations;
      f->bytes_out += h->started ? h->steady_out : h->first_out;
      f->bytes_back += h->back;
      h->started = true;
      break;
    case Call::Test:
      ++f->tests;
      f->test_s += s;
      break;
    case Call::Wait:
      ++f->waits;
      f->wait_s += s;
      break;
    default:
      break;
  }
}

void created(uint64_t handle_id, uint8_t function_code, const std::string &naa,
             const std::vector<protocol::Region> &regions) {
  Handle h{0, 0, 0, 0, false, false, false, 0, 0, 0};
  for (const protocol::Region &r : regions) {
    if (r.flags & protocol::mrsp::kInput) {
      h.first_out += r.size;
      if (!(r.flags & protocol::mrsp::kSingleSend)) h.steady_out += r.size;
    }
    if (r.flags & protocol::mrsp::kOutput) h.back += r.size;
  }
  std::lock_guard<std::mutex> lock(mu);
  size_t i = 0;
  while (i < lines().size() &&
         !(lines()[i].function_code == function_code && naa == lines()[i].naa))
    ++i;
  if (i == lines().size()) {
    naa_stats_function_t l{};
    l.function_code = function_code;
    snprintf(l.naa, sizeof l.naa, "%s", naa.c_str());
    lines().push_back(l);
    energy_lines().push_back(EnergyLine{});
  }
  h.line = i;
  handles()[handle_id] = h;
}

void finalized(uint64_t handle_id) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = handles().find(handle_id);
  if (it == handles().end()) return;
  if (it->second.in_flight) diag::trace::invocation_end(handle_id, now_ns(), NAA_SUCCESS, -1);
  handles().erase(it);
}

int get(naa_stats_t *totals, naa_stats_function_t *functions, size_t max_functions) {
  if (!on() || !(detail::state.load() & detail::kStats))
    return diag::last_error::returned(NAA_ERR_STATE,
                                      "statistics are off: set NAA_STATS=1, or "
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

int energy(naa_stats_energy_t *totals, naa_stats_energy_function_t *functions,
           size_t max_functions) {
  // The first version of the structs: what every caller has.
  constexpr size_t kTotals = offsetof(naa_stats_energy_t, n_functions) + sizeof(size_t);
  constexpr size_t kFunction = offsetof(naa_stats_energy_function_t, bytes) + sizeof(uint64_t);
  if (totals == nullptr) throw Error(NAA_ERR_INVALID_ARGUMENT, "totals is NULL");
  if (totals->size < kTotals || (functions != nullptr && totals->function_size < kFunction))
    throw Error(NAA_ERR_INVALID_ARGUMENT,
                "totals->size or totals->function_size is not set (NAA_STATS_ENERGY_INIT)");
  if (!on())
    return diag::last_error::returned(NAA_ERR_STATE,
                                      "statistics are off: set NAA_STATS=1 or "
                                      "NAA_TRACE=DIR, and NAA_ENERGY");
  energy::Meter *meter = energy::Meter::get();
  if (meter == nullptr)
    return diag::last_error::returned(NAA_ERR_STATE, "energy is off: set NAA_ENERGY=1 (naa(7))");
  naa_stats_energy_t t{};
  t.size = totals->size;
  t.function_size = totals->function_size;
  snprintf(t.host_source, sizeof t.host_source, "%s", meter->sources().c_str());
  snprintf(t.host_unavailable, sizeof t.host_unavailable, "%s", meter->unavailable().c_str());
  std::lock_guard<std::mutex> lock(mu);
  t.n_functions = lines().size();
  std::memcpy(totals, &t, std::min(totals->size, sizeof t));
  for (size_t i = 0; functions != nullptr && i < max_functions && i < lines().size(); ++i) {
    naa_stats_energy_function_t f{};
    f.function_code = lines()[i].function_code;
    std::memcpy(f.naa, lines()[i].naa, sizeof f.naa);
    const EnergyLine &e = energy_lines()[i];
    f.windows = e.windows;
    f.window_s = e.s;
    f.host_j = e.j;
    f.bytes = e.bytes;
    f.naa_runs = e.naa_runs;
    f.naa_j = e.naa_j;
    f.naa_bytes = e.naa_bytes;
    snprintf(f.naa_source, sizeof f.naa_source, "%s", e.naa_source.c_str());
    std::memcpy(reinterpret_cast<char *>(functions) + i * t.function_size, &f,
                std::min(t.function_size, sizeof f));
  }
  return NAA_SUCCESS;
}

}  // namespace naa::session::stats
