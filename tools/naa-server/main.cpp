// SPDX-License-Identifier: BSD-3-Clause
// naa-server: a software network-attached accelerator speaking the NAAICE wire protocol.
#include <getopt.h>
#include <signal.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "client_cpu.hpp"
#include "config/auth.hpp"
#include "config/params.hpp"
#include "transport/params.hpp"
#include "config.h"
#include "config/count.hpp"
#include "error.hpp"
#include "kernel_energy.hpp"
#include "kernels.hpp"
#include "diag/log.hpp"
#include "diag/signal_defaults.hpp"
#include "server.hpp"

namespace {

naa::server::StopSignal stop_requested;

void on_signal(int) {
  stop_requested.raise();
}

void usage(FILE *out) {
  std::fprintf(
      out,
      "Usage: naa-server [OPTION]...\n"
      "Serve NAA kernels to libnaa clients (the NAAICE wire protocol over verbs or libfabric).\n"
      "\n"
      "  -a, --address ADDR       listen on ADDR (default 0.0.0.0)\n"
      "  -p, --port PORT          listen on PORT (default 12345; 0 picks a free port)\n"
      "  -t, --transport NAME     auto (ofi+tcp, ofi+shm for this host's clients, and\n"
      "                           verbs where an RDMA device serves ADDR, all on PORT),\n"
      "                           verbs, ofi or ofi+PROVIDER\n"
      "                           (default: $NAA_TRANSPORT or auto)\n"
      "  -k, --kernel PATH        load kernels from the shared object PATH (repeatable;\n"
      "                           see naa_kernel.h for the kernel ABI)\n"
      "  -c, --max-clients N      refuse connections beyond N clients (default 64)\n"
      "  -P, --peer-clients N     refuse connections beyond N clients from one host\n"
      "                           (default: half of --max-clients)\n"
      "  -m, --client-memory SIZE bytes one client may allocate (default 1G)\n"
      "  -M, --total-memory SIZE  bytes all clients together may allocate (default 4G)\n"
      "  -H, --peer-memory SIZE   bytes the clients of one host may allocate together\n"
      "                           (default: half of --total-memory)\n"
      "  -T, --mrsp-timeout SEC   drop clients that do not complete MRSP in SEC (default 10)\n"
      "  -G, --handshake-timeout SEC\n"
      "                           close connections that send no connection request\n"
      "                           within SEC (default 10)\n"
      "  -g, --handshake-per-source N\n"
      "                           close at once the oldest silent connections of a host\n"
      "                           with more than N waiting to send their request\n"
      "                           (a connect flood; default 64, 0 no bound)\n"
      "  -I, --idle-timeout SEC   drop clients that invoke nothing for SEC (default 1800;\n"
      "                           0 never)\n"
      "  -K, --kernel-timeout SEC stop an isolated kernel after SEC and answer 0x02\n"
      "                           (kernel timeout; default 30)\n"
      "  -i, --isolate WHAT       run plugins (default), all or none of the kernels in a\n"
      "                           worker process, so that a crash answers 0x7e\n"
      "  -S, --shm WHO            serve over ofi+shm the processes of the server's user\n"
      "                           (own-uid, default), of its process group only (pgid), or\n"
      "                           none (off: no shm listener)\n"
      "  -s, --spin-us N          after answering an invocation, poll at least N microseconds\n"
      "                           for the next before sleeping, longer while the client's\n"
      "                           invocations are due (default 100)\n"
      "  -w, --wait POLICY        adaptive (default): poll for a client's next invocation\n"
      "                           only while the node has no more runnable threads than\n"
      "                           CPUs and the connection's recent polls paid; or\n"
      "                           spin-then-block: as --spin-us says, whatever the load\n"
      "  -R, --reference-guard-us N  a reply to a client that is not libnaa (a reference\n"
      "                           client) goes no earlier than N microseconds, and no\n"
      "                           earlier than twice the slowest of our replies' writes\n"
      "                           to complete (forgotten over hundreds of replies), after\n"
      "                           its request (default 0: the latter alone)\n"
      "  -r, --ready-file PATH    write the listening port to PATH once ready\n"
      "  -A, --auth-key-file PATH accept only clients that present the key in PATH\n"
      "                           (default: $NAA_AUTH_KEY or $NAA_AUTH_KEY_FILE, else anyone)\n"
      "  -l, --list-kernels       print the available kernels and exit\n"
      "  -v, --verbose            log at info level (NAA_LOG_LEVEL=debug for more)\n"
      "  -h, --help               show this help and exit\n"
      "  -V, --version            show the version and exit\n"
      "\n"
      "SIZE takes a K, M or G suffix (powers of 1024). The server stops cleanly on SIGINT or\n"
      "SIGTERM. Built-in function codes: 1 add1, 2 add2, 3 noop, 10 vecadd_f64, 11 daxpy,\n"
      "12 dgemm; an unknown code is answered with return code 0x7f.\n");
}

[[noreturn]] void bad_option(const char *option, const char *value) {
  std::fprintf(stderr, "naa-server: invalid value '%s' for %s (try --help)\n", value, option);
  std::exit(2);
}

}  // namespace

int main(int argc, char **argv) {
  naa::diag::restore_signal_defaults();  // a crash ends naa-server by its signal, with a core
  naa::diag::log::set_program("naa-server");
  naa::server::ServerOptions options;
  options.transport = naa::transport::read_parameters().text("NAA_TRANSPORT");  // -t overrides it
  std::vector<std::string> plugins;
  bool list_only = false;

  static const option long_options[] = {{"address", required_argument, nullptr, 'a'},
                                        {"port", required_argument, nullptr, 'p'},
                                        {"transport", required_argument, nullptr, 't'},
                                        {"kernel", required_argument, nullptr, 'k'},
                                        {"max-clients", required_argument, nullptr, 'c'},
                                        {"peer-clients", required_argument, nullptr, 'P'},
                                        {"peer-memory", required_argument, nullptr, 'H'},
                                        {"idle-timeout", required_argument, nullptr, 'I'},
                                        {"handshake-timeout", required_argument, nullptr, 'G'},
                                        {"handshake-per-source", required_argument, nullptr, 'g'},
                                        {"client-memory", required_argument, nullptr, 'm'},
                                        {"total-memory", required_argument, nullptr, 'M'},
                                        {"mrsp-timeout", required_argument, nullptr, 'T'},
                                        {"kernel-timeout", required_argument, nullptr, 'K'},
                                        {"isolate", required_argument, nullptr, 'i'},
                                        {"ready-file", required_argument, nullptr, 'r'},
                                        {"list-kernels", no_argument, nullptr, 'l'},
                                        {"auth-key-file", required_argument, nullptr, 'A'},
                                        {"spin-us", required_argument, nullptr, 's'},
                                        {"wait", required_argument, nullptr, 'w'},
                                        {"reference-guard-us", required_argument, nullptr, 'R'},
                                        {"shm", required_argument, nullptr, 'S'},
                                        {"verbose", no_argument, nullptr, 'v'},
                                        {"help", no_argument, nullptr, 'h'},
                                        {"version", no_argument, nullptr, 'V'},
                                        {nullptr, 0, nullptr, 0}};
  int opt;
  uint64_t n;
  std::string key_file;
  while ((opt = getopt_long(argc, argv, "a:p:t:k:c:P:m:M:H:T:I:G:g:K:i:r:A:s:w:R:S:lvhV",
                            long_options, nullptr)) != -1) {
    switch (opt) {
      case 'a':
        options.address = optarg;
        break;
      case 'p':
        if (!naa::config::parse_count(optarg, 65535, &n)) bad_option("--port", optarg);
        options.port = static_cast<uint16_t>(n);
        break;
      case 't':
        options.transport = optarg;
        break;
      case 'k':
        plugins.emplace_back(optarg);
        break;
      case 'c':
        if (!naa::config::parse_count(optarg, 100000, &n) || n == 0)
          bad_option("--max-clients", optarg);
        options.max_clients = static_cast<unsigned>(n);
        break;
      case 'P':
        if (!naa::config::parse_count(optarg, 100000, &n) || n == 0)
          bad_option("--peer-clients", optarg);
        options.peer_clients = static_cast<unsigned>(n);
        break;
      case 'H':
        if (!naa::config::parse_count(optarg, UINT64_MAX, &options.peer_memory, true) ||
            options.peer_memory == 0)
          bad_option("--peer-memory", optarg);
        break;
      case 'I':
        if (!naa::config::parse_count(optarg, 86400 * 365, &n))
          bad_option("--idle-timeout", optarg);
        options.idle_timeout = std::chrono::seconds(n);
        break;
      case 'G':
        if (!naa::config::parse_count(optarg, 86400, &n) || n == 0)
          bad_option("--handshake-timeout", optarg);
        options.handshake_timeout = std::chrono::seconds(n);
        break;
      case 'g':
        if (!naa::config::parse_count(optarg, 1000000, &n))
          bad_option("--handshake-per-source", optarg);
        options.handshake_per_source = static_cast<unsigned>(n);
        break;
      case 'm':
        if (!naa::config::parse_count(optarg, UINT64_MAX, &options.client_memory, true))
          bad_option("--client-memory", optarg);
        break;
      case 'M':
        if (!naa::config::parse_count(optarg, UINT64_MAX, &options.total_memory, true))
          bad_option("--total-memory", optarg);
        break;
      case 'T':
        if (!naa::config::parse_count(optarg, 86400, &n) || n == 0)
          bad_option("--mrsp-timeout", optarg);
        options.mrsp_timeout = std::chrono::seconds(n);
        break;
      case 'K':
        if (!naa::config::parse_count(optarg, 86400, &n) || n == 0)
          bad_option("--kernel-timeout", optarg);
        options.kernel_policy.timeout = std::chrono::seconds(n);
        break;
      case 'i':
        if (!naa::server::parse_isolation(optarg, &options.kernel_policy.isolation))
          bad_option("--isolate", optarg);
        break;
      case 'S':
        if (!naa::server::parse_shm_peers(optarg, &options.shm)) bad_option("--shm", optarg);
        break;
      case 'r':
        options.ready_file = optarg;
        break;
      case 'A':
        key_file = optarg;
        break;
      case 's':
        if (!naa::config::parse_count(optarg, 60000000, &n)) bad_option("--spin-us", optarg);
        options.spin = std::chrono::microseconds(n);
        break;
      case 'R':
        if (!naa::config::parse_count(optarg, 10000000, &n))
          bad_option("--reference-guard-us", optarg);
        options.reference_guard = std::chrono::microseconds(n);
        break;
      case 'w':
        if (std::strcmp(optarg, "adaptive") == 0)
          options.adaptive = true;
        else if (std::strcmp(optarg, "spin-then-block") == 0)
          options.adaptive = false;
        else
          bad_option("--wait", optarg);
        break;
      case 'l':
        list_only = true;
        break;
      case 'v':
        naa::diag::log::set_default_threshold(naa::diag::log::Level::Info);
        break;
      case 'h':
        usage(stdout);
        return 0;
      case 'V':
        std::printf("naa-server (libnaa) %s\n", PACKAGE_VERSION);
        return 0;
      default:
        usage(stderr);
        return 2;
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "naa-server: unexpected argument '%s' (try --help)\n", argv[optind]);
    return 2;
  }

  naa::server::KernelRegistry kernels;
  for (const std::string &path : plugins) {
    std::string error;
    if (!kernels.load_plugin(path, &error)) {
      std::fprintf(stderr, "naa-server: %s\n", error.c_str());
      return 1;
    }
  }
  if (list_only) {
    for (const naa_kernel *k : kernels.list()) std::printf("%3u  %s\n", k->function_code, k->name);
    return 0;
  }

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a vanished TCP peer must not kill the server
  naa::diag::report_signal_defaults();
  naa::server::server_cpus();  // taken before any thread follows a client (client_cpu.hpp)

  try {
    options.auth_key = key_file.empty() ? naa::transport::read_parameters().auth_key()
                                        : naa::config::auth::key_from_file(key_file);
    if (!options.auth_key.empty())
      std::fprintf(stderr, "naa-server: clients must present the authentication key\n");
    naa::server::Server server(options, kernels);
    std::fprintf(stderr, "naa-server: listening on %s:%u (transport %s; %zu kernels)\n",
                 options.address.c_str(), static_cast<unsigned>(server.port()),
                 server.transport_names().c_str(), kernels.list().size());
    // Loud and on every start: defects of a transport's library no option of ours can contain.
    for (const std::string &warning : server.warnings())
      std::fprintf(stderr, "naa-server: WARNING: %s\n", warning.c_str());
    naa::server::kernel_energy::print_source(stderr);
    server.run(stop_requested);
    naa::server::kernel_energy::print(stderr);
    std::fprintf(stderr, "naa-server: stopped\n");
  } catch (const naa::Error &e) {
    std::fprintf(stderr, "naa-server: %s\n", e.what());
    return 1;
  }
  return 0;
}
