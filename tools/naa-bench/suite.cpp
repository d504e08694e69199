// SPDX-License-Identifier: BSD-3-Clause
#include "suite.hpp"

#include <algorithm>
#include <vector>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "buffer.hpp"
#include "error.hpp"
#include "fi_pingpong_run.hpp"
#include "clock.hpp"
#include "handle.hpp"
#include "load.hpp"
#include "config/params.hpp"
#include "transport/params.hpp"
#include "session/settings.hpp"
#include "energy/energy.hpp"
#include "transport/transport.hpp"
#include "progress_cpu.hpp"
#include "raw.hpp"
#include "wake_probe.hpp"

namespace naa::bench {
namespace {

const double kNone = std::nan("");

double mb_per_s(size_t bytes, double us) {
  return us > 0 ? bytes / us : 0;
}  // 1 MB = 1e6 B

// The host's meter for the latency table (NAA_ENERGY), or null, after a one-line note on what
// is counted or why nothing is.
energy::Meter *host_meter(const Settings &s, FILE *out) {
  energy::Meter *m = energy::Meter::get();
  const char *line = nullptr;
  std::string text;
  if (m == nullptr)
    line = "# host energy: off (NAA_ENERGY=1 adds joules per round trip and per GB)";
  else if (m->sources().empty())
    text = "# host energy: not measured: " + m->unavailable();
  else
    text =
        "# host energy: " + m->sources() + ", read before and after each size's timed round trips";
  if (!s.csv) std::fprintf(out, "%s\n", line != nullptr ? line : text.c_str());
  return m != nullptr && !m->sources().empty() ? m : nullptr;
}

// With NAA_ENERGY the NAA's joules come with its replies where it measures them
// (doc/protocol.md §3.5); libnaa sums them in its statistics, which the latency handles turn on
// for that (naa_stats_energy_get). A one-line note says so; a size whose NAA reported nothing
// shows "-".
bool naa_energy_columns(const Settings &s, FILE *out) {
  if (!energy::Meter::on()) return false;
  if (!s.csv)
    std::fprintf(
        out,
        "# NAA energy: the NAA's joules over its kernel runs, as its replies report them "
        "(naa-server with NAA_ENERGY and a source; '-': the NAA reports none, as reference NAAs); "
        "NAA_STATS is on for the handles to collect them\n");
  return true;
}

// The NAA's joules and kernel runs so far on h's function code and NAA (naa_stats_energy_get).
std::pair<double, uint64_t> naa_joules(const Handle &h) {
  const naa_handle_info_t info = h.info();
  naa_stats_energy_t t = NAA_STATS_ENERGY_INIT;
  std::vector<naa_stats_energy_function_t> f(64);
  if (naa_stats_energy_get(&t, f.data(), f.size()) != NAA_SUCCESS) return {0, 0};
  for (size_t i = 0; i < t.n_functions && i < f.size(); ++i)
    if (f[i].function_code == info.function_code && std::strcmp(f[i].naa, info.naa) == 0)
      return {f[i].naa_j, f[i].naa_runs};
  return {0, 0};
}

// How many fi_pingpong runs alternate with libnaa's iterations of a size (--fi-pingpong). On
// this project's 2 shared vCPUs both programs' round trips shift by 1.5-2x from one second to
// the next (the ratio of a single run after libnaa's, 1 B over shm: 1.05-1.91 within one
// minute): it compared whichever speeds the two happened to get.
constexpr size_t kFiPingpongRounds = 5;

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty()      ? kNone
         : v.size() % 2 ? v[v.size() / 2]
                        : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Times one call of op. With --raw, libnaa and raw round trips alternate one by one through
// this, so that a noisy neighbour on a shared machine slows both alike instead of whichever
// ran at the time.
// `cpu_ns`, when given, adds this thread's CPU time during the call.
template <class Op>
void time_round_trip(Op &&op, Samples &samples, int64_t *total_ns, int64_t *cpu_ns = nullptr) {
  const int64_t c0 = cpu_ns != nullptr ? thread_cpu_ns() : 0;
  int64_t t0 = now_ns();
  op();
  int64_t dt = now_ns() - t0;
  if (cpu_ns != nullptr) *cpu_ns += thread_cpu_ns() - c0;
  samples.add(dt);
  *total_ns += dt;
}

// --load-clients: the clients' round trips per second while `op` ran, and those of everybody
// (the clients' and the `own` ones of op).
template <class Op>
std::pair<double, double> with_load_clients(const Settings &s, size_t size, size_t own, Op &&op) {
  if (s.load_clients == 0) {
    op();
    return {kNone, kNone};
  }
  LoadClients clients(s, s.load_clients, size);
  const uint64_t before = clients.round_trips();
  const int64_t t0 = now_ns();
  op();
  const double seconds = (now_ns() - t0) / 1e9;
  const uint64_t theirs = clients.round_trips() - before;
  clients.stop();
  return {theirs / seconds, (theirs + own) / seconds};
}

// fi_pingpong's arguments for the provider the handle connected over (with auto: what it chose).
std::vector<std::string> provider_of(const Handle &h) {
  const std::string transport = h.info().transport;
  std::vector<std::string> provider = fi_pingpong_provider(transport);
  if (provider.empty())
    throw Error(NAA_ERR_UNSUPPORTED,
                "--fi-pingpong: the handle uses " + transport +
                    "; fi_pingpong is compared only over ofi+tcp/ofi+shm on this host");
  return provider;
}

}  // namespace

std::vector<PlotPoint> run_latency(const Settings &s, const RawTarget &raw, FILE *out) {
  const bool with_raw = raw.transport != nullptr;
  std::vector<Column> cols = {{"Size", "", "", 0},
                              {"Iters", "iterations", "libnaa", 0},
                              {"Median(us)", "median_us", "libnaa", 2},
                              {"P99(us)", "p99_us", "libnaa", 2},
                              {"Mean(us)", "mean_us", "libnaa", 2},
                              {"MB/s", "mb_per_s", "libnaa", 2},
                              {"CPU(us)", "cpu_us", "libnaa", 2}};
  energy::Meter *meter = host_meter(s, out);
  if (meter != nullptr) {
    cols.push_back({"Host J/RT", "host_j_per_round_trip", "libnaa", 6});
    cols.push_back({"Host J/GB", "host_j_per_gb", "libnaa", 3});
  }
  const bool naa_energy = naa_energy_columns(s, out);
  if (naa_energy) {
    cols.push_back({"NAA J/RT", "naa_j_per_round_trip", "libnaa", 6});
    cols.push_back({"NAA J/GB", "naa_j_per_gb", "libnaa", 3});
  }
  if (with_raw) {
    cols.push_back({"Raw med(us)", "median_us", "raw", 2});
    cols.push_back({"Raw p99(us)", "p99_us", "raw", 2});
    cols.push_back({"Raw MB/s", "mb_per_s", "raw", 2});
    cols.push_back({"Raw CPU(us)", "cpu_us", "raw", 2});
    cols.push_back({"Lat ratio", "latency_ratio", "libnaa/raw", 3});
    cols.push_back({"BW ratio", "bandwidth_ratio", "libnaa/raw", 3});
  }
  if (s.fi_pingpong) {
    cols.push_back({"fi_pp RT(us)", "round_trip_us", "fi_pingpong", 2});
    cols.push_back({"Med/fi_pp", "median_ratio", "libnaa/fi_pingpong", 3});
    cols.push_back({"Mean/fi_pp", "mean_ratio", "libnaa/fi_pingpong", 3});
  }
  if (s.load_clients != 0) {
    cols.push_back({"Load RT/s", "round_trips_per_s", "load_clients", 0});
    cols.push_back({"All RT/s", "round_trips_per_s", "all_clients", 0});
  }
  Table table(
      out, s.csv, "latency",
      std::string("latency: naa_invoke + naa_wait round trip, input and output of Size bytes; "
                  "MB/s = Size / mean round trip, each way (fi_pingpong's usec/xfer is half that "
                  "round trip); "
                  "CPU = the measuring thread's CPU time per round trip") +
          (s.load_clients != 0 ? "; Load RT/s: the load clients' round trips per second meanwhile, "
                                 "All RT/s: theirs and the measured ones together"
                               : "") +
          (with_raw ? "; Raw: the same writes on the transport interface, alternating with libnaa"
                    : "") +
          (s.fi_pingpong
               ? "; fi_pp RT: fi_pingpong's round trip on loopback over the handle's provider "
                 "(2 x its usec/xfer, which is half a round trip), median of 5 runs (fewer below 5 "
                 "iterations), each after a fifth of libnaa's iterations and of as many; "
                 "Med/fi_pp, "
                 "Mean/fi_pp: median of the ratios of each fifth's median and mean to the run "
                 "after it"
               : ""),
      cols);
  const config::params::Values values = transport::read_parameters();
  const config::Progress progress = values.progress();
  const auto timeout = values.timeout();
  std::vector<PlotPoint> points;
  for (size_t size : s.sizes) {
    const size_t n = s.iterations_for(size);
    Handle h(s, size,
             naa_energy ? std::vector<std::string>{"NAA_STATS=1"} : std::vector<std::string>{});
    std::unique_ptr<RawClient> r;
    if (with_raw)
      r = std::make_unique<RawClient>(
          *raw.transport, raw.via_server ? RawClient::Peer::Server : RawClient::Peer::Raw, raw.host,
          raw.port, size, static_cast<uint8_t>(s.function_code), progress, timeout,
          values.text("NAA_LOCAL_IP"));
    Samples lib(n), rs(n);
    int64_t lib_total = 0, raw_total = 0, lib_cpu = 0, raw_cpu = 0;
    // With --fi-pingpong the iterations come in rounds, each followed by an fi_pingpong run of
    // as many: each ratio compares two measurements of the same few seconds. Every round warms
    // up as the whole would: after the half second of an fi_pingpong run, the first 1 MiB round
    // trips over shm find the server asleep and take several times as long, which too few
    // warm-ups would leave in the mean.
    const size_t rounds = s.fi_pingpong ? std::min(kFiPingpongRounds, n) : 1;
    std::vector<double> fi_rt, median_ratio, mean_ratio;
    uint64_t host_uj = 0;
    bool host_read = meter != nullptr;
    double naa_j = 0;
    uint64_t naa_runs = 0;
    const auto load_rates = with_load_clients(s, size, n, [&] {
      for (size_t round = 0, done = 0; round < rounds; ++round) {
        const size_t chunk = (n - done) / (rounds - round);
        for (size_t i = 0; i < s.warmup_for(n); ++i) {
          h.round_trip();
          if (r) r->round_trip();
        }
        Samples part(chunk);
        int64_t part_total = 0;
        uint64_t uj0 = 0, uj1 = 0;
        host_read = host_read && meter->read(&uj0);
        const auto naa0 = naa_energy ? naa_joules(h) : std::pair<double, uint64_t>{};
        // CPU time is read around the whole chunk unless raw round trips alternate with
        // libnaa's: two system calls between round trips would delay every next invocation.
        const int64_t chunk_cpu0 = r ? 0 : thread_cpu_ns();
        for (size_t i = 0; i < chunk; ++i) {
          time_round_trip([&] { h.round_trip(); }, part, &part_total, r ? &lib_cpu : nullptr);
          lib.add(part.last());
          if (r) time_round_trip([&] { r->round_trip(); }, rs, &raw_total, &raw_cpu);
        }
        if (!r) lib_cpu += thread_cpu_ns() - chunk_cpu0;
        host_read = host_read && meter->read(&uj1);
        host_uj += uj1 - uj0;
        const auto naa1 = naa_energy ? naa_joules(h) : std::pair<double, uint64_t>{};
        naa_j += naa1.first - naa0.first;
        naa_runs += naa1.second - naa0.second;
        lib_total += part_total;
        done += chunk;
        if (!s.fi_pingpong) continue;
        fi_rt.push_back(run_fi_pingpong(provider_of(h), size, chunk));
        median_ratio.push_back(part.median_us() / fi_rt.back());
        mean_ratio.push_back(part_total / 1e3 / chunk / fi_rt.back());
      }
    });
    const double lib_mean_us = lib_total / 1e3 / n;
    PlotPoint p{size, lib.median_us(), mb_per_s(size, lib_mean_us), kNone, kNone};
    std::vector<double> row = {double(size), double(n),     p.libnaa_us,      lib.percentile_us(99),
                               lib_mean_us,  p.libnaa_mbps, lib_cpu / 1e3 / n};
    if (meter != nullptr) {  // a failed read: unknown, not zero
      const double j = host_read ? static_cast<double>(host_uj) / 1e6 : kNone;
      row.insert(row.end(), {j / n, j / (2.0 * size * n) * 1e9});
    }
    if (naa_energy) {  // every timed round trip's kernel run reported, or unknown
      const double j = naa_runs == n ? naa_j : kNone;
      row.insert(row.end(), {j / n, j / (2.0 * size * n) * 1e9});
    }
    if (r) {
      p.raw_us = rs.median_us();
      p.raw_mbps = mb_per_s(size, raw_total / 1e3 / n);
      row.insert(row.end(), {p.raw_us, rs.percentile_us(99), p.raw_mbps, raw_cpu / 1e3 / n,
                             p.libnaa_us / p.raw_us, p.libnaa_mbps / p.raw_mbps});
    }
    if (s.fi_pingpong)
      row.insert(row.end(), {median_of(fi_rt), median_of(median_ratio), median_of(mean_ratio)});
    if (s.load_clients != 0) row.insert(row.end(), {load_rates.first, load_rates.second});
    table.row(row);
    points.push_back(p);
  }
  return points;
}

namespace {

// A handle with the runtime parameter `var` set to `value` ("-": its default) for it alone.
std::unique_ptr<Handle> handle_with(const Settings &s, size_t size, const std::string &var,
                                    const std::string &value) {
  return std::make_unique<Handle>(
      s, size, std::vector<std::string>{var + "=" + (value == "-" ? "" : value)});
}

struct Overlap {
  double pure_us, compute_us, total_us, percent, invoke_us, done_percent, finish_us, wake_us,
      thread_percent;
};

// The OSU non-blocking method: t_pure is the plain round trip, the host then computes for
// about that long between naa_invoke and naa_wait (`compute_for`, estimated beforehand, then
// the median of the plain round trips so far: between computations they may last noticeably
// longer or shorter than the estimate's back-to-back ones at large sizes, and a computation
// shorter than the transfer caps the overlap below 100 % whatever the progress);
// whatever of t_pure does not hide behind the computation shows up in t_total - t_compute.
// A plain round trip, the computation alone and one overlapped iteration alternate, so that a
// noisy neighbour on a shared machine slows all three alike instead of whichever ran at the
// time. Medians, not means: a descheduled iteration would otherwise count as communication
// that did not overlap.
Overlap measure_overlap(Handle &h, size_t n, double compute_for, bool sleep, WakeProbe &probe) {
  Samples pure_s(n), compute_s(n), total_s(n), invoke_s(n), finish_s(n), wake_s(n);
  size_t done_at_test = 0;
  int64_t unused = 0;
  auto compute = [&] { sleep ? sleep_us(compute_for) : busy_us(compute_for); };
  // The first naa_test after the computation tells whether the data moved meanwhile (then
  // what remains is the completion's own cost: over TCP the copy out of the socket) or not.
  auto overlapped = [&] {
    int64_t t = now_ns();
    h.invoke();
    invoke_s.add(now_ns() - t);
    compute();
    t = now_ns();
    if (h.test())
      ++done_at_test;
    else
      h.wait();
    finish_s.add(now_ns() - t);
  };
  const int64_t cpu_before = progress_thread_cpu_ns(), wall_before = now_ns();
  for (size_t i = 0; i < n; ++i) {
    time_round_trip([&] { h.round_trip(); }, pure_s, &unused);
    compute_for = pure_s.median_us();
    time_round_trip(compute, compute_s, &unused);
    // Its sleeper slept all along. The CPU it wakes stays awake for a while: computing once
    // more lets it settle before naa_invoke, which would otherwise find it awake and cheap.
    wake_s.add(static_cast<int64_t>(probe.wake_us() * 1e3));
    compute();
    time_round_trip(overlapped, total_s, &unused);
  }
  const int64_t cpu_after = progress_thread_cpu_ns(), wall = now_ns() - wall_before;
  const double t_pure = pure_s.median_us(), t_compute = compute_s.median_us(),
               t_total = total_s.median_us();
  return {t_pure,
          t_compute,
          t_total,
          std::clamp(100.0 * (1.0 - (t_total - t_compute) / t_pure), 0.0, 100.0),
          invoke_s.median_us(),
          100.0 * done_at_test / n,
          finish_s.median_us(),
          wake_s.median_us(),
          cpu_before < 0 || cpu_after < 0 ? kNone : 100.0 * (cpu_after - cpu_before) / wall};
}

}  // namespace

// One table per progress mode (each handle created under its NAA_PROGRESS), each with the
// busy and the idle host side by side.
void run_overlap(const Settings &s, FILE *out) {
  std::vector<std::pair<std::string, bool>> kinds;  // heading prefix, sleeping host
  if (s.compute_busy) kinds.emplace_back("Busy", false);
  if (s.compute_sleep) kinds.emplace_back("Idle", true);
  WakeProbe probe;
  for (const std::string &mode : s.progress_modes) {
    const std::string variant = "libnaa_" + mode;
    std::vector<Column> cols = {{"Size", "", "", 0}, {"Iters", "iterations", variant, 0}};
    for (const auto &[name, sleep] : kinds) {
      const std::string v = variant + (sleep ? "/sleep" : "/busy");
      cols.push_back({name + " pure(us)", "pure_us", v, 2});
      cols.push_back({name + " inv(us)", "invoke_us", v, 2});
      cols.push_back({name + " wake(us)", "wake_us", v, 2});
      cols.push_back({name + " ovl(%)", "overlap_percent", v, 1});
      cols.push_back({name + " done(%)", "done_at_test_percent", v, 1});
      cols.push_back({name + " fin(us)", "finish_us", v, 2});
      cols.push_back({name + " tot(us)", "total_us", v, 2});
      cols.push_back({name + " thr(%)", "progress_thread_cpu_percent", v, 1});
    }
    Table table(
        out, s.csv, "overlap",
        "overlap with NAA_PROGRESS=" + mode +
            ": naa_invoke, the host busy (Busy) or sleeping "
            "(Idle) for one plain round trip (their median so far), naa_test, naa_wait unless done "
            "(medians); "
            "pure: plain round trip, alternating with the overlapped one; "
            "ovl % = 100 * (1 - (tot - compute) / pure); inv: time "
            "in naa_invoke; wake: an eventfd write(2) waking a thread asleep in poll(2), "
            "what inv would cost if the progress thread slept; done: share complete at that "
            "naa_test; fin: from that naa_test "
            "to done; tot: naa_invoke to done; thr: the progress thread's CPU time over all of the "
            "row's phases, in % of one core",
        cols);
    for (size_t size : s.sizes) {
      const size_t n = s.iterations_for(size);
      auto h = handle_with(s, size, "NAA_PROGRESS", mode);
      for (size_t i = 0; i < s.warmup_for(n); ++i) h->round_trip();
      // How long the first computation lasts: about one round trip.
      Samples estimate_s(n);
      int64_t unused = 0;
      for (size_t i = 0; i < n; ++i) time_round_trip([&] { h->round_trip(); }, estimate_s, &unused);
      std::vector<double> row = {double(size), double(n)};
      for (const auto &kind : kinds) {
        Overlap o = measure_overlap(*h, n, estimate_s.median_us(), kind.second, probe);
        row.insert(row.end(), {o.pure_us, o.invoke_us, o.wake_us, o.percent, o.done_percent,
                               o.finish_us, o.total_us, o.thread_percent});
      }
      table.row(row);
    }
  }
}

// k handles to one server kept busy in turn: wait for the oldest, invoke it again. k = 2 is the
// double-buffered pattern (handle B's inputs go out while A's results come back); k = 1 is the
// single-handle serial pattern.
void run_throughput(const Settings &s, FILE *out) {
  std::vector<Column> cols = {{"Size", "", "", 0}, {"Iters", "iterations", "libnaa", 0}};
  bool has1 = false, has2 = false;
  for (unsigned k : s.inflight) {
    cols.push_back({std::to_string(k) + (k == 1 ? " hdl MB/s" : " hdls MB/s"), "mb_per_s",
                    "libnaa_" + std::to_string(k) + "_in_flight", 2});
    has1 = has1 || k == 1;
    has2 = has2 || k == 2;
  }
  if (has1 && has2) cols.push_back({"Dbuf/serial", "double_buffered_ratio", "libnaa", 3});
  Table table(out, s.csv, "throughput",
              "throughput: k handles in flight to one server, MB/s each way; "
              "Dbuf/serial = 2 handles double-buffered vs 1 handle serial",
              cols);
  for (size_t size : s.sizes) {
    const size_t n = s.iterations_for(size);
    std::vector<double> row = {double(size), double(n)};
    double one = 0, two = 0;
    for (unsigned k : s.inflight) {
      std::vector<std::unique_ptr<Handle>> hs;
      for (unsigned i = 0; i < k; ++i) hs.push_back(std::make_unique<Handle>(s, size));
      for (size_t i = 0; i < s.warmup_for(n); ++i) hs[i % k]->round_trip();
      const size_t total = n < 2 * k ? 2 * k : n;
      int64_t t0 = now_ns();
      for (auto &h : hs) h->invoke();
      for (size_t i = 0; i < total; ++i) {
        Handle &h = *hs[i % k];
        h.wait();
        if (i + k < total) h.invoke();
      }
      double mbps = mb_per_s(size * total, (now_ns() - t0) / 1e3);
      row.push_back(mbps);
      if (k == 1) one = mbps;
      if (k == 2) two = mbps;
    }
    if (has1 && has2) row.push_back(two / one);
    table.row(row);
  }
}

void run_setup(const Settings &s, FILE *out) {
  Table table(out, s.csv, "setup",
              "setup: naa_create (connect + registration + MRSP) and naa_finalize; Init: the "
              "fabric library's one-time initialisation (libfabric's providers), which naa_create "
              "does before its NAA_CONNECT_TIMEOUT starts; First: the process's first naa_create "
              "after it (both - when an earlier test made them: run --tests setup alone), Create: "
              "warm, a new handle on the same buffers while another handle keeps the transport "
              "context open, median",
              {{"Size", "", "", 0},
               {"Iters", "iterations", "libnaa", 0},
               {"Init(us)", "init_us", "libnaa", 1},
               {"First(us)", "first_create_us", "libnaa", 1},
               {"Create(us)", "create_us", "libnaa", 1},
               {"Finalize(us)", "finalize_us", "libnaa", 1}});
  // The first naa_create of a process also loads the fabric's providers and opens the
  // transport Context, which the later ones share: not a per-handle cost, reported apart.
  double init = kNone, first = kNone;
  if (creates_made() == 0) {
    naa_attr_t attr = NAA_ATTR_INIT;
    attr.naa = s.naa.empty() ? nullptr : s.naa.c_str();
    const naa::session::Settings resolved = naa::session::Settings::resolve(&attr);
    const auto target = resolved.target(s.function_code, 1);
    const int64_t prepared = now_ns();
    transport::prepare_transport(resolved.transport, target->host(), target->port(),
                                 resolved.local_ip, resolved.device,
                                 Deadline::after(resolved.connect_timeout));
    init = (now_ns() - prepared) / 1e3;
    Buffer in(1);
    naa_param_t p{in.data(), 1, false};
    naa_handle handle = NAA_HANDLE_NULL_INIT;
    int64_t t0 = now_ns();
    check_call("naa_create", bench::create(s, &p, &p, &handle));
    first = (now_ns() - t0) / 1e3;
    check_call("naa_finalize", naa_finalize(&handle));
  }
  // Open for the whole loop: the Context lives as long as a handle uses it, as in a program
  // with other handles at work.
  Handle keeper(s, 1);
  for (size_t size : s.sizes) {
    Samples create(s.setup_iters), finalize(s.setup_iters);
    Buffer in(size), outbuf(size);
    naa_param_t pi{in.data(), size, false}, po{s.in_place ? in.data() : outbuf.data(), size, false};
    for (size_t i = 0; i < s.setup_iters; ++i) {
      naa_handle handle = NAA_HANDLE_NULL_INIT;
      int64_t t0 = now_ns();
      check_call("naa_create", bench::create(s, &pi, &po, &handle));
      int64_t t1 = now_ns();
      check_call("naa_finalize", naa_finalize(&handle));
      create.add(t1 - t0);
      finalize.add(now_ns() - t1);
    }
    table.row({double(size), double(s.setup_iters), init, first, create.median_us(),
               finalize.median_us()});
    init = first = kNone;
  }
}

// --fresh-handles: untimed round trips on each new handle before its turn (its connection's
// first messages, which naa-server polls for at first, are not the mode's steady state).
constexpr int kFreshWarmup = 5;

void run_compare(const Settings &s, FILE *out) {
  const std::string &var = s.compare_variable;
  std::vector<Column> cols = {{"Size", "", "", 0}, {"Iters", "iterations", "libnaa", 0}};
  for (const std::string &v : s.compare_values) {
    std::string variant = var + "=" + v;
    cols.push_back({v + " med(us)", "median_us", variant, 2});
    cols.push_back({v + " mean(us)", "mean_us", variant, 2});
    cols.push_back({v + " MB/s", "mb_per_s", variant, 2});
    cols.push_back({v + " cpu(us)", "cpu_us", variant, 2});
  }
  if (s.load_clients != 0) cols.push_back({"Load RT/s", "round_trips_per_s", "load_clients", 0});
  Table table(
      out, s.csv, "compare",
      "compare: " + var + " per handle, " +
          (s.turn == 1 ? std::string("round trips alternating between the handles")
                       : "turns of " + std::to_string(s.turn) +
                             " round trips alternating between the handles") +
          (s.fresh_handles ? std::string(", each turn on a new handle") : std::string()) +
          "; "
          "med = median round trip, mean = mean round trip, MB/s each way, cpu = this thread's CPU "
          "time per round trip" +
          std::string(s.load_clients != 0
                          ? "; Load RT/s: the load clients' round trips per second meanwhile"
                          : ""),
      cols);
  for (size_t size : s.sizes) {
    const size_t n = s.iterations_for(size);
    std::vector<std::unique_ptr<Handle>> hs;
    for (const std::string &v : s.compare_values) hs.push_back(handle_with(s, size, var, v));
    std::vector<int64_t> total(hs.size(), 0), cpu(hs.size(), 0);
    std::vector<Samples> samples(hs.size(), Samples(n));
    for (size_t i = 0; i < s.warmup_for(n); ++i)
      for (auto &h : hs) h->round_trip();
    const auto load_rates = with_load_clients(s, size, n * hs.size(), [&] {
      for (size_t i = 0; i < n; i += s.turn)
        for (size_t k = 0; k < hs.size(); ++k) {
          if (s.fresh_handles && i != 0) {
            hs[k].reset();  // the old one's connection ends before the new one's starts
            hs[k] = handle_with(s, size, var, s.compare_values[k]);
            for (int w = 0; w < kFreshWarmup; ++w) hs[k]->round_trip();
          }
          const int64_t cpu0 = thread_cpu_ns();  // around each turn, not each round trip
          for (size_t j = i; j < std::min(n, i + s.turn); ++j)
            time_round_trip([&] { hs[k]->round_trip(); }, samples[k], &total[k]);
          cpu[k] += thread_cpu_ns() - cpu0;
        }
    });
    std::vector<double> row = {double(size), double(n)};
    for (size_t k = 0; k < hs.size(); ++k)
      row.insert(row.end(), {samples[k].median_us(), total[k] / 1e3 / n,
                             mb_per_s(size * n, total[k] / 1e3), cpu[k] / 1e3 / n});
    if (s.load_clients != 0) row.push_back(load_rates.first);
    table.row(row);
  }
}

void run_memcpy(const Settings &s, FILE *out) {
  Table table(out, s.csv, "memcpy", "memcpy: one core copying Size bytes between two buffers",
              {{"Size", "", "", 0},
               {"Iters", "iterations", "memcpy", 0},
               {"MB/s", "mb_per_s", "memcpy", 2}});
  for (size_t size : s.sizes) {
    const size_t n = s.iterations_for(size);
    Buffer a(size), b(size);
    for (size_t i = 0; i < s.warmup_for(n); ++i) std::memcpy(b.data(), a.data(), size);
    int64_t t0 = now_ns();
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(b.data(), a.data(), size);
      // Keeps the copies from being merged or dropped as dead stores.
      asm volatile("" : : "r"(b.data()) : "memory");
    }
    table.row({double(size), double(n), mb_per_s(size * n, (now_ns() - t0) / 1e3)});
  }
}

}  // namespace naa::bench
