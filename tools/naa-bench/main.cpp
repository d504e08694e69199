// SPDX-License-Identifier: BSD-3-Clause
// naa-bench: OSU-style measurements of libnaa against a running naa-server (latency, bandwidth,
// overlap, handles in flight, setup), side by side with the raw transport (--raw), plus the
// single-core memcpy reference (--memcpy). See naa-bench(1) and doc/performance.md.
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "config.h"
#include "config/count.hpp"
#include "error.hpp"
#include "fi_pingpong_run.hpp"
#include "handle.hpp"
#include "load.hpp"
#include "progress/busy_node.hpp"
#include "raw.hpp"
#include "report.hpp"
#include "config/params.hpp"
#include "transport/params.hpp"
#include "rm/resolver.hpp"
#include "settings.hpp"
#include "suite.hpp"
#include "waitany.hpp"

namespace {

using naa::bench::Settings;

constexpr int kPeerStartMs = 10000;
constexpr int kPeerIdleSeconds = 600;  // a spawned peer outliving us by accident goes away

void usage(FILE *out) {
  std::fprintf(
      out,
      "Usage: naa-bench [OPTIONS]\n"
      "Measure libnaa against a running naa-server (NAA_SPEC, or --host/--port).\n"
      "\n"
      "  -H, --host HOST        the naa-server's address (with --port: NAA_SPEC=HOST:PORT:CODE:1)\n"
      "  -p, --port PORT        the naa-server's port (default 12345 with --host)\n"
      "  -f, --function CODE    function code to invoke (default 3, naa-server's noop kernel)\n"
      "  -s, --sizes LIST       comma-separated sizes in bytes, K/M suffixes allowed\n"
      "                         (default 1,4,16,...,64M: powers of 4 from 1 B to 64 MiB)\n"
      "  -i, --iters N          round trips per size up to 16 KiB (default 1000); fewer above,\n"
      "                         so that each size moves about N * 16 KiB\n"
      "  -m, --min-iters N      never fewer round trips than N per size (default 20)\n"
      "  -w, --warmup N         unmeasured round trips first (default a tenth, at least 2)\n"
      "  -t, --tests LIST       latency,overlap,throughput,setup (default all), waitany\n"
      "                         (only when named: needs --slow-code on the server)\n"
      "      --handles N        handles of the waitany test (default 1000)\n"
      "      --slow-code CODE   the waitany test's function code for the handles that stay in\n"
      "                         flight: a kernel that naps for the milliseconds in the first 4\n"
      "                         bytes of its input (default 105, the test plugin's nap_fill)\n"
      "      --compute KIND     the overlap test's host computation: busy (a busy loop),\n"
      "                         sleep (the host idles, as if the NAA and the transport had\n"
      "                         cores of their own) or both (the default)\n"
      "      --progress LIST    the NAA_PROGRESS modes the overlap test compares, one table\n"
      "                         each (default spin-then-block,thread)\n"
      "  -k, --inflight LIST    handle counts for the throughput test (default 1,2,4,8)\n"
      "  -S, --setup-iters N    naa_create/naa_finalize pairs per size (default 10)\n"
      "  -I, --in-place         one in-place region instead of an input and an output\n"
      "  -r, --raw              also drive the same writes on the transport interface against\n"
      "                         a raw peer (spawned on HOST unless --raw-peer-at) and print\n"
      "                         libnaa/raw ratios; over the transport libnaa's handles use\n"
      "                         (with NAA_TRANSPORT=auto: the one it picked, shm for a\n"
      "                         same-host server), named in the header\n"
      "      --raw-peer-at HOST:PORT  use a raw peer started elsewhere with --raw-peer\n"
      "      --raw-via-server   let the naa-server answer the raw writes too (MRSP once, then\n"
      "                         the same writes), so both sides meet the same responder\n"
      "      --raw-peer         be the raw peer: listen on --host (default 0.0.0.0) and --port\n"
      "                         (default 0, any free port; printed as \"port N\"), answer raw\n"
      "                         clients until SIGTERM or --idle seconds without one\n"
      "      --idle SEC         with --raw-peer: exit after SEC seconds without a client\n"
      "      --compare VAR=V1,V2,...  instead of the tests: one handle per value of the\n"
      "                         runtime parameter VAR (naa-info --params; \"-\": its default), "
      "set\n"
      "                         per handle through naa_attr_t.params, round trips alternating;\n"
      "                         e.g. NAA_PROGRESS=spin,block,spin-then-block\n"
      "      --turn N           with --compare: each handle makes N round trips in a row\n"
      "                         before the next one's turn (default 1); the idle handles' waits\n"
      "                         then settle as a program's with one handle do\n"
      "      --fresh-handles    with --compare: each turn on a new handle per value (made and\n"
      "                         warmed up with 5 round trips outside the timing), so that\n"
      "                         where a connection's threads landed is sampled anew each turn\n"
      "      --fi-pingpong      alternating with libnaa's latency of each size (5 parts), run\n"
      "                         libfabric's fi_pingpong (libfabric-bin) on loopback over the\n"
      "                         handle's provider (ofi+tcp: -p tcp -e msg, ofi+shm: -p shm -e "
      "rdm)\n"
      "                         with as many iterations, and add its median round trip (2 x\n"
      "                         usec/xfer: fi_pingpong's usec/xfer is half a round trip) and the\n"
      "                         medians of libnaa's median and mean over each run; latency test\n"
      "                         only, a naa-server on this host, not over verbs\n"
      "      --load N           run every test beside N busy threads of this process\n"
      "                         (started before the first test, stopped after the last)\n"
      "      --load-clients N   run the latency and compare tests beside N other clients:\n"
      "                         threads with handles of their own (the environment's\n"
      "                         settings) doing round trips of the same size back to back;\n"
      "                         adds their round trips per second\n"
      "      --memcpy           measure single-core memcpy bandwidth for the sizes instead\n"
      "  -c, --csv              print test,variant,size,metric,value lines instead of tables\n"
      "      --status-every SEC when standard output is not a terminal, say on standard error\n"
      "                         which size each test has done, at most every SEC seconds\n"
      "                         (default 10; 0: never)\n"
      "  -P, --plot FILE.png    draw latency and bandwidth over size with gnuplot\n"
      "  -h, --help             show this help\n"
      "  -V, --version          show the version\n");
}

[[noreturn]] void bad_option(const char *option, const char *value) {
  std::fprintf(stderr, "naa-bench: invalid value '%s' for %s (try --help)\n", value, option);
  std::exit(2);
}

std::vector<std::string> split(const char *text) {
  std::vector<std::string> parts;
  std::string s(text);
  size_t start = 0;
  for (;;) {
    size_t comma = s.find(',', start);
    parts.push_back(
        s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return parts;
    start = comma + 1;
  }
}

// The spawned raw peer: this same program with --raw-peer, reporting its port on a pipe.
class SpawnedPeer {
 public:
  // `transport`: its NAA_TRANSPORT, the one the raw client uses.
  SpawnedPeer(const std::string &host, const std::string &transport) {
    int fds[2];
    if (pipe(fds) != 0) throw naa::Error(NAA_ERR_NO_RESOURCES, "pipe for the raw peer failed");
    pid_ = fork();
    if (pid_ < 0) throw naa::Error(NAA_ERR_NO_RESOURCES, "fork for the raw peer failed");
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive the benchmark
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      close(fds[1]);
      std::string idle = std::to_string(kPeerIdleSeconds);
      setenv("NAA_TRANSPORT", transport.c_str(), 1);
      execl("/proc/self/exe", "naa-bench", "--raw-peer", "--host", host.c_str(), "--port", "0",
            "--idle", idle.c_str(), static_cast<char *>(nullptr));
      std::fprintf(stderr, "naa-bench: cannot start the raw peer: %s\n", std::strerror(errno));
      _exit(127);
    }
    close(fds[1]);
    std::string line;
    pollfd p{fds[0], POLLIN, 0};
    char c;
    while (line.find('\n') == std::string::npos) {
      if (poll(&p, 1, kPeerStartMs) <= 0 || read(fds[0], &c, 1) != 1) {
        close(fds[0]);
        throw naa::Error(NAA_ERR_CONNECTION,
                         "the raw peer did not report its port within 10 s "
                         "(see its messages above)");
      }
      line += c;
    }
    close(fds[0]);
    unsigned port = 0;
    if (std::sscanf(line.c_str(), "port %u", &port) != 1 || port == 0 || port > 65535)
      throw naa::Error(NAA_ERR_PROTOCOL,
                       "the raw peer reported '" + line + "' instead of its port");
    port_ = static_cast<uint16_t>(port);
  }
  ~SpawnedPeer() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  uint16_t port() const { return port_; }

 private:
  pid_t pid_;
  uint16_t port_ = 0;
};

}  // namespace

int main(int argc, char **argv) {
  Settings s;
  std::string host, spec_port = "12345";
  bool host_given = false, port_given = false, raw_peer = false, memcpy_mode = false;
  uint64_t v = 0;
  unsigned idle = 0;
  enum {
    kRawPeerAt = 1000,
    kRawViaServer,
    kRawPeer,
    kIdle,
    kMemcpy,
    kCompare,
    kCompute,
    kHandles,
    kSlowCode,
    kProgress,
    kFiPingpong,
    kStatusEvery,
    kLoad,
    kLoadClients,
    kTurn,
    kFreshHandles
  };
  static const option long_options[] = {{"host", required_argument, nullptr, 'H'},
                                        {"port", required_argument, nullptr, 'p'},
                                        {"function", required_argument, nullptr, 'f'},
                                        {"sizes", required_argument, nullptr, 's'},
                                        {"iters", required_argument, nullptr, 'i'},
                                        {"min-iters", required_argument, nullptr, 'm'},
                                        {"warmup", required_argument, nullptr, 'w'},
                                        {"tests", required_argument, nullptr, 't'},
                                        {"inflight", required_argument, nullptr, 'k'},
                                        {"setup-iters", required_argument, nullptr, 'S'},
                                        {"in-place", no_argument, nullptr, 'I'},
                                        {"raw", no_argument, nullptr, 'r'},
                                        {"raw-peer-at", required_argument, nullptr, kRawPeerAt},
                                        {"raw-via-server", no_argument, nullptr, kRawViaServer},
                                        {"raw-peer", no_argument, nullptr, kRawPeer},
                                        {"idle", required_argument, nullptr, kIdle},
                                        {"memcpy", no_argument, nullptr, kMemcpy},
                                        {"fi-pingpong", no_argument, nullptr, kFiPingpong},
                                        {"load", required_argument, nullptr, kLoad},
                                        {"load-clients", required_argument, nullptr, kLoadClients},
                                        {"handles", required_argument, nullptr, kHandles},
                                        {"slow-code", required_argument, nullptr, kSlowCode},
                                        {"compare", required_argument, nullptr, kCompare},
                                        {"turn", required_argument, nullptr, kTurn},
                                        {"fresh-handles", no_argument, nullptr, kFreshHandles},
                                        {"compute", required_argument, nullptr, kCompute},
                                        {"progress", required_argument, nullptr, kProgress},
                                        {"status-every", required_argument, nullptr, kStatusEvery},
                                        {"csv", no_argument, nullptr, 'c'},
                                        {"plot", required_argument, nullptr, 'P'},
                                        {"help", no_argument, nullptr, 'h'},
                                        {"version", no_argument, nullptr, 'V'},
                                        {nullptr, 0, nullptr, 0}};
  int opt;
  while ((opt = getopt_long(argc, argv, "H:p:f:s:i:m:w:t:k:S:IrcP:hV", long_options, nullptr)) !=
         -1) {
    switch (opt) {
      case 'H':
        host = optarg;
        host_given = true;
        break;
      case 'p':
        if (!naa::config::parse_count(optarg, 65535, &v)) bad_option("--port", optarg);
        spec_port = optarg;
        port_given = true;
        break;
      case 'f':
        if (!naa::config::parse_count(optarg, 127, &v) || v == 0) bad_option("--function", optarg);
        s.function_code = static_cast<uint32_t>(v);
        break;
      case 's':
        s.sizes.clear();
        for (const std::string &part : split(optarg)) {
          if (!naa::config::parse_count(part.c_str(), UINT32_MAX, &v, true) || v == 0)
            bad_option("--sizes", optarg);
          s.sizes.push_back(v);
        }
        break;
      case 'i':
        if (!naa::config::parse_count(optarg, 100000000, &v) || v == 0)
          bad_option("--iters", optarg);
        s.iters = v;
        break;
      case 'm':
        if (!naa::config::parse_count(optarg, 100000000, &v) || v == 0)
          bad_option("--min-iters", optarg);
        s.min_iters = v;
        break;
      case 'w':
        if (!naa::config::parse_count(optarg, 100000000, &v) || v == 0)
          bad_option("--warmup", optarg);
        s.warmup = v;
        break;
      case 't':
        s.latency = s.overlap = s.throughput = s.setup = s.waitany = false;
        for (const std::string &t : split(optarg)) {
          if (t == "latency")
            s.latency = true;
          else if (t == "overlap")
            s.overlap = true;
          else if (t == "throughput")
            s.throughput = true;
          else if (t == "setup")
            s.setup = true;
          else if (t == "waitany")
            s.waitany = true;
          else
            bad_option("--tests", optarg);
        }
        break;
      case 'k':
        s.inflight.clear();
        for (const std::string &part : split(optarg)) {
          if (!naa::config::parse_count(part.c_str(), 64, &v) || v == 0)
            bad_option("--inflight", optarg);
          s.inflight.push_back(static_cast<unsigned>(v));
        }
        break;
      case 'S':
        if (!naa::config::parse_count(optarg, 100000, &v) || v == 0)
          bad_option("--setup-iters", optarg);
        s.setup_iters = v;
        break;
      case 'I':
        s.in_place = true;
        break;
      case 'r':
        s.raw = true;
        break;
      case kRawPeerAt: {
        std::string at = optarg;
        size_t colon = at.rfind(':');
        if (colon == std::string::npos || colon == 0 ||
            !naa::config::parse_count(at.c_str() + colon + 1, 65535, &v) || v == 0)
          bad_option("--raw-peer-at", optarg);
        s.raw = true;
        s.raw_host = at.substr(0, colon);
        s.raw_port = static_cast<uint16_t>(v);
        break;
      }
      case kRawViaServer:
        s.raw = s.raw_via_server = true;
        break;
      case kRawPeer:
        raw_peer = true;
        break;
      case kIdle:
        if (!naa::config::parse_count(optarg, 86400, &v)) bad_option("--idle", optarg);
        idle = static_cast<unsigned>(v);
        break;
      case kMemcpy:
        memcpy_mode = true;
        break;
      case kFiPingpong:
        s.fi_pingpong = true;
        break;
      case kLoad:
        if (!naa::config::parse_count(optarg, 1024, &v)) bad_option("--load", optarg);
        s.load = static_cast<unsigned>(v);
        break;
      case kLoadClients:
        if (!naa::config::parse_count(optarg, 1024, &v)) bad_option("--load-clients", optarg);
        s.load_clients = static_cast<unsigned>(v);
        break;
      case kHandles:
        if (!naa::config::parse_count(optarg, 100000, &v) || v == 0)
          bad_option("--handles", optarg);
        s.waitany_handles = v;
        break;
      case kSlowCode:
        if (!naa::config::parse_count(optarg, 127, &v) || v == 0) bad_option("--slow-code", optarg);
        s.slow_code = static_cast<uint32_t>(v);
        break;
      case kCompute:
        s.compute_busy = std::strcmp(optarg, "busy") == 0 || std::strcmp(optarg, "both") == 0;
        s.compute_sleep = std::strcmp(optarg, "sleep") == 0 || std::strcmp(optarg, "both") == 0;
        if (!s.compute_busy && !s.compute_sleep) bad_option("--compute", optarg);
        break;
      case kProgress:
        s.progress_modes = split(optarg);
        for (const std::string &m : s.progress_modes)
          if (m.empty()) bad_option("--progress", optarg);
        break;
      case kStatusEvery: {
        char *end = nullptr;
        const double seconds = std::strtod(optarg, &end);
        if (end == optarg || *end != '\0' || !(seconds >= 0)) bad_option("--status-every", optarg);
        naa::bench::status_every(seconds);
        break;
      }
      case kTurn:
        if (!naa::config::parse_count(optarg, 1000000, &v) || v == 0) bad_option("--turn", optarg);
        s.turn = v;
        break;
      case kFreshHandles:
        s.fresh_handles = true;
        break;
      case kCompare: {
        const char *eq = std::strchr(optarg, '=');
        if (eq == nullptr || eq == optarg || eq[1] == '\0') bad_option("--compare", optarg);
        s.compare_variable.assign(optarg, static_cast<size_t>(eq - optarg));
        s.compare_values = split(eq + 1);
        break;
      }
      case 'c':
        s.csv = true;
        break;
      case 'P':
        s.plot_path = optarg;
        break;
      case 'h':
        usage(stdout);
        return 0;
      case 'V':
        std::printf("naa-bench (libnaa) %s\n", PACKAGE_VERSION);
        return 0;
      default:
        usage(stderr);
        return 2;
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "naa-bench: unexpected argument '%s' (try --help)\n", argv[optind]);
    return 2;
  }
  if (s.sizes.empty())
    for (size_t size = 1; size <= (size_t{64} << 20); size *= 4) s.sizes.push_back(size);

  if (raw_peer) {
    uint64_t port = 0;
    if (port_given) naa::config::parse_count(spec_port.c_str(), 65535, &port);  // checked at --port
    return naa::bench::run_raw_peer(host_given ? host : "0.0.0.0", static_cast<uint16_t>(port),
                                    std::chrono::seconds(idle));
  }
  try {
    if (memcpy_mode) {
      naa::bench::run_memcpy(s, stdout);
      return 0;
    }
    if (port_given && !host_given) {
      std::fprintf(stderr, "naa-bench: --port needs --host\n");
      return 2;
    }
    if (s.fi_pingpong && !s.latency) {
      std::fprintf(stderr,
                   "naa-bench: --fi-pingpong compares round trips: add latency to --tests\n");
      return 2;
    }
    if (s.fi_pingpong && !naa::bench::on_path("fi_pingpong")) {
      std::fprintf(stderr,
                   "naa-bench: --fi-pingpong: fi_pingpong not found (Debian: libfabric-bin)\n");
      return 2;
    }
    const naa::config::params::Values values = naa::transport::read_parameters();
    std::string server;  // for the header and as the place to spawn the raw peer
    if (host_given) {
      s.naa = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + spec_port;
      server = host + ":" + spec_port;
    } else if (values.text("NAA_SPEC").empty()) {
      std::fprintf(
          stderr,
          "naa-bench: no naa-server given: use --host HOST [--port PORT] or set NAA_SPEC\n");
      return 2;
    } else {
      auto target = naa::rm::resolve(static_cast<uint8_t>(s.function_code), 1, values);
      server = target->host() + ":" + std::to_string(target->port());
    }
    const std::string server_host = server.substr(0, server.rfind(':'));
    const char *fi_pingpong_refusal =
        !naa::bench::is_loopback(server_host)     ? "the naa-server is not on loopback"
        : values.text("NAA_TRANSPORT") == "verbs" ? "NAA_TRANSPORT=verbs"
                                                  : nullptr;
    if (s.fi_pingpong && fi_pingpong_refusal != nullptr) {
      std::fprintf(stderr,
                   "naa-bench: --fi-pingpong: %s (%s); fi_pingpong is compared only over "
                   "ofi+tcp/ofi+shm on this host\n",
                   fi_pingpong_refusal, server.c_str());
      return 2;
    }
    if (!s.csv)
      std::printf(
          "# naa-bench (libnaa %s): server %s, function code %u, NAA_TRANSPORT=%s, "
          "NAA_PROGRESS=%s, %s regions\n",
          PACKAGE_VERSION, server.c_str(), s.function_code, values.text("NAA_TRANSPORT").c_str(),
          values.source("NAA_PROGRESS") == naa::config::params::Source::Default
              ? "(default)"
              : values.text("NAA_PROGRESS").c_str(),
          s.in_place ? "in-place" : "separate input and output");

    if (!s.csv && (s.load != 0 || s.load_clients != 0))
      std::printf("# load: %u busy threads, %u load clients; %s\n", s.load, s.load_clients,
                  naa::progress::read_node_load().describe().c_str());

    std::unique_ptr<naa::transport::Transport> transport;
    std::unique_ptr<SpawnedPeer> peer;
    naa::bench::RawTarget raw;
    if (s.raw) {
      if (!s.latency)
        std::fprintf(stderr, "naa-bench: --raw compares round trips: add latency to --tests\n");
      // The transport libnaa's handles use, so that the ratios compare the code above it and
      // not two transports (auto picks shm for a same-host server, a raw client would not).
      std::string lib_transport;
      {
        naa::bench::Handle probe(s, 1);
        lib_transport = probe.info().transport;
      }
      const std::string raw_transport =
          lib_transport.rfind("auto: ", 0) == 0 ? lib_transport.substr(6) : lib_transport;
      if (!s.csv)
        std::printf("# --raw: libnaa over %s, raw client%s over %s\n", lib_transport.c_str(),
                    s.raw_via_server ? " (naa-server answering)" : " and raw peer",
                    raw_transport.c_str());
      transport =
          naa::transport::open_transport(raw_transport, naa::transport::options_from(values));
      raw.transport = transport.get();
      if (s.raw_via_server) {
        raw.via_server = true;
        raw.host = server.substr(0, server.rfind(':'));
        uint64_t port = 0;
        naa::config::parse_count(server.substr(server.rfind(':') + 1).c_str(), 65535, &port);
        raw.port = static_cast<uint16_t>(port);
      } else if (s.raw_port != 0) {
        raw.host = s.raw_host;
        raw.port = s.raw_port;
      } else {
        std::string peer_host = host_given ? host : server.substr(0, server.rfind(':'));
        peer = std::make_unique<SpawnedPeer>(peer_host, raw_transport);
        raw.host = peer_host;
        raw.port = peer->port();
      }
    }
    const naa::bench::BusyThreads hogs(s.load);
    if (!s.compare_variable.empty()) {
      naa::bench::run_compare(s, stdout);
      return 0;
    }
    std::vector<naa::bench::PlotPoint> points;
    if (s.latency) points = naa::bench::run_latency(s, raw, stdout);
    if (s.overlap) naa::bench::run_overlap(s, stdout);
    if (s.throughput) naa::bench::run_throughput(s, stdout);
    if (s.setup) naa::bench::run_setup(s, stdout);
    if (s.waitany) naa::bench::run_waitany(s, stdout);
    if (!s.plot_path.empty() && naa::bench::plot(points, s.plot_path) && !s.csv)
      std::printf("\n# plot written to %s\n", s.plot_path.c_str());
  } catch (const naa::Error &e) {
    std::fprintf(stderr, "naa-bench: %s\n", e.what());
    return 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "naa-bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
