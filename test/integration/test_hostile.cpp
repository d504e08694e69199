// SPDX-License-Identifier: BSD-3-Clause
// naa-server against hostile clients: each case attacks a server of its own from
// 127.0.0.2, times one vecadd of a legitimate libnaa client from 127.0.0.1 during the attack,
// and then checks that the server is alive and back to idle: its threads and open fds return
// to what they were before, and it burns no CPU (/proc/PID/status, /proc/PID/fd, /proc/PID/stat).
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <setjmp.h>
extern "C" {
#include <cmocka.h>
#include "naa.h"
#include "server.h"
}

#include "config/auth.hpp"
#include "naa_kernel.h"
#include "raw_client.hpp"

using namespace naa;
using naa::test::RawClient;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char *kAttacker = "127.0.0.2";  // another peer host on the loopback
constexpr unsigned kFnVecadd = 10;
// CPU the server may use in a quiet second: a tenth of a core. A spinning thread takes all of
// one; an idle server still wakes to look at its shm queue and descriptors (0.01-0.02 s alone,
// up to 0.07 s while make -j2 check loaded both cores, when it woke 1000 times a second).
constexpr double kIdleCpuSeconds = 0.1;
constexpr int kQuietSeconds = 2;  // measured over this long: the kernel counts CPU in 10 ms ticks

struct ProcStats {
  long threads = 0;
  long fds = 0;
  double cpu = 0;  // user + system seconds
};

ProcStats stats_of(pid_t pid) {
  ProcStats s;
  std::string dir = "/proc/" + std::to_string(pid);
  std::ifstream status(dir + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Threads:", 0) == 0) s.threads = std::stol(line.substr(8));
  if (DIR *d = opendir((dir + "/fd").c_str())) {
    while (dirent *e = readdir(d)) s.fds += e->d_name[0] != '.';
    closedir(d);
  }
  std::ifstream stat(dir + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));  // past "pid (comm) "
  std::string skip;
  for (int i = 3; i < 14; ++i) fields >> skip;  // fields 3..13
  unsigned long long utime = 0, stime = 0;
  fields >> utime >> stime;
  s.cpu = static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  return s;
}

// Running, not a zombie: the test is the server's parent and reaps it only when it stops it.
bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

double seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double time_scale() {
  return test_time_scale();
}

// "--handshake-timeout" and friends take whole seconds.
std::string scaled_seconds(int s) {
  return std::to_string(static_cast<int>(s * time_scale() + 0.5));
}
std::chrono::milliseconds scaled(std::chrono::milliseconds d) {
  return std::chrono::milliseconds(
      static_cast<long long>(static_cast<double>(d.count()) * time_scale()));
}

struct VecaddResult {
  const char *failed = nullptr;  // the step that failed, or null
  int rc = 0;
  double took = 0;
};

// This process's handles close their shm endpoints at the end instead of keeping them idle for
// later handles (the servers under test keep theirs): shm_spoofed_names_not_removed names this
// process's regions as a live client's, and libfabric 1.17's shm crashes the process that
// reads a message whose sender's region is gone, which a request naming an idle endpoint
// makes a server send it.
struct NoIdleEndpoints {
  NoIdleEndpoints() { setenv("NAA_SHM_IDLE_ENDPOINTS", "0", 1); }
  ~NoIdleEndpoints() { unsetenv("NAA_SHM_IDLE_ENDPOINTS"); }
};

// One vecadd through libnaa from 127.0.0.1, checked element by element, with no cmocka
// assertion while its buffers live (a failed one would longjmp past their destructors).
VecaddResult vecadd_once(const test_server &s) {
  constexpr size_t kN = 1024;
  std::vector<double> a(kN), b(kN), sum(kN, 0);
  for (size_t i = 0; i < kN; ++i)
    a[i] = static_cast<double>(i), b[i] = 0.5 * static_cast<double>(i);
  naa_param_t in[2] = {{a.data(), sizeof(double) * kN, false},
                       {b.data(), sizeof(double) * kN, false}};
  naa_param_t out[1] = {{sum.data(), sizeof(double) * kN, false}};
  test_server_use(&s, kFnVecadd, 2);
  VecaddResult r;
  auto t0 = Clock::now();
  naa_handle h = NAA_HANDLE_NULL;
  {
    NoIdleEndpoints no_idle;
    r.rc = naa_create(kFnVecadd, in, 2, out, 1, &h);
  }
  if (r.rc != NAA_SUCCESS) return r.failed = "naa_create", r;
  naa_status st;
  if ((r.rc = naa_invoke(&h)) != NAA_SUCCESS)
    r.failed = "naa_invoke";
  else if ((r.rc = naa_wait(&h, &st)) != NAA_SUCCESS)
    r.failed = "naa_wait";
  else if ((r.rc = st.naa_return_code) != 0)
    r.failed = "the NAA's return code";
  int rc = naa_finalize(&h);
  if (r.failed != nullptr) return r;
  if ((r.rc = rc) != NAA_SUCCESS) return r.failed = "naa_finalize", r;
  r.took = seconds(t0);
  for (size_t i = 0; i < kN; ++i)
    if (sum[i] != 1.5 * static_cast<double>(i)) return r.failed = "the sum", r;
  return r;
}

// Its latency (create to finalize), or the test fails.
double legit_vecadd(const test_server &s) {
  VecaddResult r = vecadd_once(s);
  if (r.failed != nullptr) fail_msg("legitimate vecadd: %s gave %d", r.failed, r.rc);
  return r.took;
}

// One vecadd with NAA_TRANSPORT=`transport`, unset again afterwards.
VecaddResult vecadd_over(const test_server &s, const char *transport) {
  setenv("NAA_TRANSPORT", transport, 1);
  const VecaddResult r = vecadd_once(s);
  unsetenv("NAA_TRANSPORT");
  return r;
}

// A legitimate client over tcp and one over shm (same-host attackers must spare both
// paths), each served correctly, or the test fails; their latencies are reported.
void legit_vecadd_tcp_and_shm(const test_server &s, const char *attack) {
  for (const char *transport : {"ofi+tcp", "ofi+shm"}) {
    const VecaddResult r = vecadd_over(s, transport);
    if (r.failed != nullptr)
      fail_msg("%s: legitimate vecadd over %s: %s gave %d", attack, transport, r.failed, r.rc);
    std::fprintf(stderr, "  %s: a legitimate vecadd over %s took %.3f s\n", attack, transport,
                 r.took);
  }
}

// The variable make check sets, or the case is skipped (saying why).
const char *required_env(const char *name) {
  const char *value = std::getenv(name);
  if (value == nullptr) {
    std::fprintf(stderr, "%s is not set (run through make check): skipped\n", name);
    skip();
  }
  return value;
}

// A server of the case's own, with a baseline taken after one legitimate vecadd.
struct Target {
  test_server server{};
  ProcStats idle;

  explicit Target(std::vector<const char *> args) {
    args.push_back(nullptr);
    assert_int_equal(test_server_start(&server, args.data()), 0);
    legit_vecadd(server);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // its thread is reaped
    idle = stats_of(server.pid);
  }
  ~Target() { test_server_stop(&server); }

  // Alive, back to the baseline's threads and fds within `patience`, and quiet for kQuietSeconds.
  void assert_back_to_idle(const char *attack, std::chrono::seconds patience) {
    assert_true(running(server.pid));
    ProcStats now = stats_of(server.pid);
    auto give_up = Clock::now() + scaled(patience);
    while ((now.threads > idle.threads || now.fds > idle.fds) && Clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      now = stats_of(server.pid);
    }
    std::this_thread::sleep_for(std::chrono::seconds(kQuietSeconds));
    ProcStats later = stats_of(server.pid);
    double cpu = (later.cpu - now.cpu) / kQuietSeconds;
    std::fprintf(
        stderr,
        "  %s: afterwards threads %ld (idle %ld), fds %ld (idle %ld), CPU %.3f s a second\n",
        attack, later.threads, idle.threads, later.fds, idle.fds, cpu);
    assert_true(later.threads <= idle.threads);
    assert_true(later.fds <= idle.fds);
    assert_true(cpu < kIdleCpuSeconds);
    legit_vecadd(server);  // and still serving
  }
};

void report_latency(const char *attack, double took) {
  std::fprintf(stderr, "  %s: a legitimate vecadd during the attack took %.3f s\n", attack, took);
}

// MRSP, one message more, close. The stray message must be consumed, so that the server
// sees the close and frees the slot instead of spinning on the unread message for ever.
void stray_message_then_close(void **) {
  Target t({"--idle-timeout", "0"});
  constexpr int kSessions = 8;
  for (int i = 0; i < kSessions; ++i) {
    RawClient c(t.server.port, kAttacker);
    c.setup(64);
    uint8_t junk[64];
    std::memset(junk, 0xa5, sizeof junk);
    c.send(junk, sizeof junk);
    c.flush_send();
  }
  double took = legit_vecadd(t.server);
  report_latency("stray message then close (x8)", took);
  assert_true(took < 5 * time_scale());
  t.assert_back_to_idle("stray message then close (x8)", std::chrono::seconds(5));
}

// Sessions that finish MRSP and then idle are ended by --idle-timeout.
void idle_sessions_time_out(void **) {
  const std::string idle_timeout = scaled_seconds(2);
  Target t({"--idle-timeout", idle_timeout.c_str()});
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 4; ++i) {
    idle.push_back(std::make_unique<RawClient>(t.server.port, kAttacker));
    idle.back()->setup(4096);
  }
  double took = legit_vecadd(t.server);
  report_latency("4 idle sessions", took);
  auto t0 = Clock::now();
  for (auto &c : idle)
    assert_true(c->dropped_within(Deadline::after(scaled(std::chrono::seconds(10)))));
  double dropped = seconds(t0);
  std::fprintf(stderr, "  4 idle sessions: all dropped %.3f s after the legitimate vecadd\n",
               dropped);
  assert_true(dropped > 0.5 && dropped < 5 * time_scale());
  idle.clear();
  t.assert_back_to_idle("4 idle sessions", std::chrono::seconds(5));
}

// One host cannot take every slot: with -c 4 -P 2 the attacker's third session is
// refused while a client of another host is served, and once its sessions ended it is served
// again.
void peer_slot_limit(void **) {
  Target t({"--max-clients", "4", "--peer-clients", "2"});
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 2; ++i) {
    held.push_back(std::make_unique<RawClient>(t.server.port, kAttacker));
    held.back()->setup(64);
  }
  bool refused = false;
  try {
    RawClient third(t.server.port, kAttacker);
    third.setup(64);
  } catch (const Error &e) {
    refused = e.code() == NAA_ERR_CONNECTION || e.code() == NAA_ERR_TRANSPORT;
  }
  assert_true(refused);
  double took = legit_vecadd(t.server);
  report_latency("one host at its --peer-clients limit", took);
  held.clear();
  t.assert_back_to_idle("one host at its --peer-clients limit", std::chrono::seconds(5));
  // The sessions that ended gave their slots back (naa-server forgot them): served again.
  for (int i = 0; i < 2; ++i) {
    held.push_back(std::make_unique<RawClient>(t.server.port, kAttacker));
    held.back()->setup(64);
  }
}

// One host cannot take all of --total-memory (default --peer-memory: half of it).
void peer_memory_limit(void **) {
  Target t({"--client-memory", "2M", "--total-memory", "4M"});
  RawClient big(t.server.port, kAttacker);
  big.setup(2 << 20);  // this host's whole share
  RawClient more(t.server.port, kAttacker);
  uint8_t msg[protocol::mrsp::kBufferSize];
  protocol::mrsp::RequestEntry e{protocol::mrsp::kInput | protocol::mrsp::kOutput, 0, 0x1000, 1,
                                 1 << 20};
  more.send(msg, protocol::mrsp::encode_request(&e, 1, msg, sizeof msg));
  protocol::mrsp::Message m = more.answer();
  assert_int_equal(static_cast<int>(m.type), static_cast<int>(protocol::mrsp::Type::Error));
  double took = legit_vecadd(t.server);  // from the other host: its share is untouched
  report_latency("one host holding its --peer-memory", took);
}

// A raw TCP connection from the attacker's address to the server, sending `bytes` (may be
// empty) and then nothing. The fd, or the test fails.
int raw_connection(int port, const std::vector<uint8_t> &bytes) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  sockaddr_in from{}, to{};
  from.sin_family = to.sin_family = AF_INET;
  inet_pton(AF_INET, kAttacker, &from.sin_addr);
  inet_pton(AF_INET, test_host(), &to.sin_addr);
  to.sin_port = htons(static_cast<uint16_t>(port));
  assert_int_equal(bind(fd, reinterpret_cast<sockaddr *>(&from), sizeof from), 0);
  assert_int_equal(connect(fd, reinterpret_cast<sockaddr *>(&to), sizeof to), 0);
  if (!bytes.empty())
    assert_int_equal(send(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  return fd;
}

// True when the server closed `fd` (end of file or reset) within `patience`.
bool closed_by_server(int fd, std::chrono::milliseconds patience) {
  timeval tv{static_cast<time_t>(patience.count() / 1000),
             static_cast<suseconds_t>(patience.count() % 1000 * 1000)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char c;
  ssize_t n = recv(fd, &c, 1, 0);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

// How many of `fds` the server closed within one deadline of `patience` (scaled) for them all;
// closes them.
unsigned closed_within(const std::vector<int> &fds, std::chrono::seconds patience) {
  unsigned closed = 0;
  Deadline all_closed = Deadline::after(scaled(patience));
  for (int fd : fds) {
    closed += closed_by_server(
        fd, std::chrono::milliseconds(std::max(1, all_closed.remaining_ms(INT32_MAX))));
    close(fd);
  }
  return closed;
}

// libfabric 1.17 tcp's connection request: a 32-byte control header (version 3, type 0
// "connreq", big-endian private-data length at bytes 2-3, 1 at byte 24) and the data.
std::vector<uint8_t> connreq_header(uint16_t announced) {
  std::vector<uint8_t> h(32, 0);
  h[0] = 3;
  h[2] = static_cast<uint8_t>(announced >> 8);
  h[3] = static_cast<uint8_t>(announced);
  h[24] = 1;
  return h;
}

// A request that announces 64 bytes of private data and sends none. libfabric 1.17
// waits for them in a blocking recv() on the thread that accepts every client: the server
// gives up on it after HandshakeSweeper::kReceiveBound (1 s), so the legitimate client waits no
// longer than that, and closes it after --handshake-timeout.
void stalled_connection_request(void **) {
  const std::string handshake_timeout = scaled_seconds(2);
  Target t({"--handshake-timeout", handshake_timeout.c_str()});
  int fd = raw_connection(t.server.port, connreq_header(64));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the server is stuck in it
  double took = legit_vecadd(t.server);
  report_latency("request announcing 64 bytes, sending none", took);
  assert_true(took < 3 * time_scale());
  auto t0 = Clock::now();
  assert_true(closed_by_server(fd, scaled(std::chrono::seconds(6))));
  std::fprintf(stderr, "  request announcing 64 bytes: closed by the server after %.3f s more\n",
               seconds(t0));
  close(fd);
  t.assert_back_to_idle("request announcing 64 bytes, sending none", std::chrono::seconds(5));
}

// Raw TCP connections that send nothing are closed after --handshake-timeout, also when
// there are more of them than the server has descriptors (its limit lowered to 48 here).
// The default transports, and a client comes over shm meanwhile (named: auto does not take
// it), whose listener must not read a request while descriptors are short (libfabric 1.17's
// shm crashes then). Whether that client is served is a race the case does not force: the
// server's answer needs a descriptor, and the TCP listener, taking the queued connections as
// the sweep frees descriptors, may take it first (the server then drops the client, which
// learns it at its NAA_CONNECT_TIMEOUT, 5 s here). What the case requires: the server lives,
// closes all 100, and then serves a client over shm.
void idle_raw_connections(void **) {
  const std::string handshake_timeout = scaled_seconds(1);
  Target t({"--handshake-timeout", handshake_timeout.c_str()});
  rlimit low{48, 48};
  assert_int_equal(prlimit(t.server.pid, RLIMIT_NOFILE, &low, nullptr), 0);
  std::vector<int> fds;
  for (int i = 0; i < 100; ++i) fds.push_back(raw_connection(t.server.port, {}));
  setenv("NAA_CONNECT_TIMEOUT", scaled_seconds(5).c_str(), 1);
  const VecaddResult during = vecadd_over(t.server, "ofi+shm");
  unsetenv("NAA_CONNECT_TIMEOUT");
  if (during.failed == nullptr)
    report_latency("100 idle TCP connections, fd limit 48, client over shm", during.took);
  else
    std::fprintf(stderr, "  100 idle TCP connections, fd limit 48: a client over shm: %s gave %d\n",
                 during.failed, during.rc);
  // Refused (MRSP error 0x01, a full queue) or dropped (its deadline): an answer, not a hang.
  assert_true(during.failed == nullptr || during.rc == NAA_ERR_TIMEOUT ||
              during.rc == NAA_ERR_NO_RESOURCES || during.rc == NAA_ERR_CONNECTION);
  assert_true(running(t.server.pid));
  const unsigned closed = closed_within(fds, std::chrono::seconds(10));
  std::fprintf(stderr, "  100 idle TCP connections: %u closed by the server\n", closed);
  assert_int_equal(closed, fds.size());
  const VecaddResult after = vecadd_over(t.server, "ofi+shm");
  if (after.failed != nullptr)
    fail_msg("legitimate vecadd over shm after the attack: %s gave %d", after.failed, after.rc);
  std::fprintf(stderr, "  100 idle TCP connections closed: a client over shm took %.3f s\n",
               after.took);
  assert_true(after.took < 10 * time_scale());
  t.assert_back_to_idle("100 idle TCP connections, fd limit 48", std::chrono::seconds(5));
}

// A connect flood from one host: 200 connections that send nothing, far more than the 8 that
// --handshake-per-source lets one host keep waiting. A client of another host is served over
// ofi+tcp meanwhile, and the server closes 192 of the flood's (its oldest) at once, long
// before their --handshake-timeout (20 s); the other 8 wait for it.
void connect_flood_per_source(void **) {
  const std::string handshake_timeout = scaled_seconds(20);
  Target t({"--handshake-timeout", handshake_timeout.c_str(), "--handshake-per-source", "8"});
  std::vector<int> fds;
  for (int i = 0; i < 200; ++i) fds.push_back(raw_connection(t.server.port, {}));
  const VecaddResult r = vecadd_over(t.server, "ofi+tcp");
  if (r.failed != nullptr) fail_msg("legitimate vecadd over tcp: %s gave %d", r.failed, r.rc);
  report_latency("200 silent TCP connections from one host, 8 may wait", r.took);
  assert_true(r.took < 10 * time_scale());
  const unsigned closed = closed_within(fds, std::chrono::seconds(12));
  std::fprintf(stderr, "  connect flood: %u of 200 closed by the server, 192 expected\n", closed);
  assert_int_equal(closed, 192);
  t.assert_back_to_idle("connect flood from one host", std::chrono::seconds(5));
}

// The race behind idle_raw_connections' precaution: TCP connections arriving all the time at
// the descriptor limit, while same-host clients connect over shm. The shm listener must count
// its spare descriptors and read its queue with no accept in between (the descriptor gate);
// without that, libfabric 1.17's shm crashed the server within 11-14 connections here, and a
// client then spun for ever on the lock the server died holding. So each client is a process
// of its own under timeout(1), and the flood never asserts (it runs on another thread).
void shm_requests_amid_connection_churn(void **) {
  const char *examples = required_env("NAA_EXAMPLES");
  const std::string handshake_timeout = scaled_seconds(1);
  Target t({"--handshake-timeout", handshake_timeout.c_str()});
  rlimit low{48, 48};
  assert_int_equal(prlimit(t.server.pid, RLIMIT_NOFILE, &low, nullptr), 0);
  std::atomic<bool> stop{false};
  std::thread flood([&] {
    std::vector<int> open;
    while (!stop.load()) {
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      timeval tv{0, 200000};  // a full backlog drops the SYN: connect() would wait seconds
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      // Closed with a reset, not into TIME_WAIT: thousands of 127.0.0.2 ports held for a
      // minute kept shm_auto.sh's server from listening on 127.0.0.2 when it ran next.
      linger abort{1, 0};
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
      sockaddr_in from{}, to{};
      from.sin_family = to.sin_family = AF_INET;
      inet_pton(AF_INET, kAttacker, &from.sin_addr);
      inet_pton(AF_INET, test_host(), &to.sin_addr);
      to.sin_port = htons(static_cast<uint16_t>(t.server.port));
      if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr *>(&from), sizeof from) == 0 &&
          connect(fd, reinterpret_cast<sockaddr *>(&to), sizeof to) == 0) {
        open.push_back(fd);
      } else if (fd >= 0) {
        close(fd);
      }
      if (open.size() > 60) {
        close(open.front());
        open.erase(open.begin());
      }
    }
    for (int fd : open) close(fd);
  });
  const std::string command = "NAA_TRANSPORT=ofi+shm NAA_TIMEOUT=" + scaled_seconds(10) +
                              " NAA_CONNECT_TIMEOUT=" + scaled_seconds(10) +
                              " NAA_SPEC=" + test_host() + ":" + std::to_string(t.server.port) +
                              ":10:2 timeout " + scaled_seconds(30) + " " + examples +
                              "/vecadd 1000 2>&1";
  // A client may be refused (the server short of descriptors for its regions answers MRSP
  // error 0x01; its listener's queue full while the flood holds every descriptor), but every
  // one gets its answer: none runs into timeout(1). How many are served while the flood runs is
  // a race with it; after it, one must be.
  constexpr int kClients = 30;
  int served = 0, refused = 0, hung = 0, alive = 1;
  // The client's exit code (128 + a signal's number), its output into `output`.
  auto run_client = [&command](std::string &output) {
    FILE *client = popen(command.c_str(), "r");
    assert_non_null(client);
    char line[512];
    while (std::fgets(line, sizeof line, client) != nullptr) output += line;
    const int status = pclose(client);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  };
  for (int i = 0; i < kClients && (alive = running(t.server.pid)); ++i) {
    std::string output;
    const int code = run_client(output);
    if (code == 0) {
      ++served;
      continue;
    }
    ++(code == 124 || code >= 128 ? hung : refused);
    std::fprintf(stderr, "  client %d exited with %d:\n%s", i, code, output.c_str());
  }
  stop.store(true);
  flood.join();
  std::fprintf(stderr,
               "  shm clients amid TCP connection churn at 48 descriptors: %d served, %d refused, "
               "%d hung of %d; server %s\n",
               served, refused, hung, kClients, alive ? "alive" : "dead");
  assert_true(alive);
  assert_int_equal(hung, 0);
  std::string output;
  if (run_client(output) != 0)
    fail_msg("a shm client after the churn was not served:\n%s", output.c_str());
  t.assert_back_to_idle("shm clients amid TCP connection churn", std::chrono::seconds(10));
}

// A plugin kernel of one client must not reach another client's regions. The attacker's
// kernels look for every foreign region their worker can see (to trample it) and write 16 KiB
// past their own region; the worker must see none, and the overrun must end in SIGSEGV.
void kernel_worker_isolation(void **) {
  const char *plugin = required_env("NAA_TEST_KERNEL_PLUGIN");
  Target t({"--kernel", plugin, "--isolate", "plugins"});
  constexpr uint32_t kXor = 100, kTrample = 103, kOverrun = 104;
  RawClient victim(t.server.port);
  victim.setup(1 << 16);
  assert_int_equal(victim.invoke(protocol::imm::host_request(kXor), std::chrono::seconds(10)),
                   0);  // 0 -> 0xff
  for (uint8_t b : victim.region_) assert_int_equal(b, 0xff);
  RawClient attacker(t.server.port, kAttacker);
  attacker.setup(4096);
  int seen = attacker.invoke(protocol::imm::host_request(kTrample), std::chrono::seconds(10));
  std::fprintf(stderr, "  trampling kernel: saw %d foreign regions\n", seen);
  assert_int_equal(seen, 0);
  int rc = attacker.invoke(protocol::imm::host_request(kOverrun), std::chrono::seconds(10));
  std::fprintf(stderr, "  kernel writing 16 KiB past its region: answered 0x%02x\n", rc);
  assert_int_equal(rc, NAA_KERNEL_RC_CRASHED);
  assert_int_equal(victim.invoke(protocol::imm::host_request(kXor), std::chrono::seconds(10)),
                   0);  // 0xff -> 0
  for (uint8_t b : victim.region_) assert_int_equal(b, 0);
  double took = legit_vecadd(t.server);
  report_latency("plugin kernels trampling and overrunning", took);
}

// True when a raw client from the attacker's host presenting `key` is let in (and served).
bool attacker_admitted(int port, const std::string &key) {
  try {
    RawClient c(port, kAttacker, config::auth::encode(key));
    c.setup(64);
    return c.invoke(protocol::imm::host_request(1), std::chrono::seconds(10)) == 0;
  } catch (const Error &) {
    return false;
  }
}

// Key guessing. After 3 wrong keys, a host's requests are refused unchecked for a second
// (so even the right key fails then), other hosts are served throughout, and refusals cost the
// server nothing that outlives them.
void key_guessing(void **) {
  const std::string key = "hostile-test-key-0123456789";
  char path[] = "/tmp/naa-hostile-key-XXXXXX";
  int kfd = mkstemp(path);
  assert_true(kfd >= 0);
  assert_int_equal(write(kfd, (key + "\n").data(), key.size() + 1),
                   static_cast<ssize_t>(key.size() + 1));
  close(kfd);
  setenv("NAA_AUTH_KEY", key.c_str(), 1);  // the legitimate client's
  {
    Target t({"--auth-key-file", path});
    auto t0 = Clock::now();
    unsigned admitted = 0;
    for (int guess = 0; guess < 20; ++guess)
      admitted += attacker_admitted(t.server.port, std::to_string(1000 + guess));
    std::fprintf(stderr, "  20 wrong keys: %u admitted, %.3f s\n", admitted, seconds(t0));
    assert_int_equal(admitted, 0);
    assert_false(attacker_admitted(t.server.port, key));  // within the backoff: not even checked
    double took = legit_vecadd(t.server);
    report_latency("key guessing from another host", took);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    assert_true(attacker_admitted(t.server.port, key));  // the backoff is over
    t.assert_back_to_idle("key guessing", std::chrono::seconds(5));
  }
  unsetenv("NAA_AUTH_KEY");
  unlink(path);
}

// --- a misbehaving neighbour on the same host, over ofi+shm ----------------------------------

// Runs test/integration/shm_hostile (see there) to its end: true when it sent every request.
bool shm_hostile(int port, int count, const std::string &name, const std::string &pid,
                 int linger_ms) {
  const char *builddir = std::getenv("NAA_BUILDDIR");
  const std::string command = std::string(builddir != nullptr ? builddir : ".") +
                              "/test/integration/shm_hostile " + std::to_string(port) + " " +
                              std::to_string(count) + " '" + name + "' " + pid + " " +
                              std::to_string(linger_ms);
  return std::system(command.c_str()) == 0;
}

std::string listener_region(int port) {
  return "/dev/shm/naa-" + std::to_string(getuid()) + "-" + std::to_string(port);
}

bool exists(const std::string &path) {
  return access(path.c_str(), F_OK) == 0;
}

// Requests over shm that name an endpoint nobody can map and claim pid 1, 40 at a time
// under one name (past --peer-clients when each name counted as a host of its own), again and
// again. An answer to such a name would be retried for seconds under the admission lock, with
// every transport's admission waiting. They are dropped unanswered: tcp and shm clients are served
// throughout, and SIGTERM ends the server cleanly.
void shm_requests_for_unmappable_endpoints(void **) {
  const char *attack = "shm requests naming unmappable endpoints, pid 1";
  Target t({});
  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0};
  std::thread attacker([&] {
    while (!stop.load() &&
           shm_hostile(t.server.port, 40, "fi_shm://1-0123456789abcdef:0:0", "1", 0)) {
      ++rounds;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  for (auto give_up = Clock::now() + std::chrono::seconds(10);
       rounds.load() == 0 && Clock::now() < give_up;)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the server has read them
  // A generous deadline still (connections take 0.3 s over shm, 0.01 s over tcp), but shorter
  // than the 10 s that each refusal of such a request held every transport's admission.
  const std::string timeout = scaled_seconds(5);
  setenv("NAA_TIMEOUT", timeout.c_str(), 1);
  const VecaddResult tcp = vecadd_over(t.server, "ofi+tcp");
  const VecaddResult shm = vecadd_over(t.server, "ofi+shm");
  setenv("NAA_TIMEOUT", "20", 1);
  stop.store(true);
  attacker.join();
  std::fprintf(stderr, "  %s: %d rounds of 40 sent\n", attack, rounds.load());
  assert_true(rounds.load() > 0);
  if (tcp.failed != nullptr)
    fail_msg("legitimate vecadd over ofi+tcp: %s gave %d", tcp.failed, tcp.rc);
  if (shm.failed != nullptr)
    fail_msg("legitimate vecadd over ofi+shm: %s gave %d", shm.failed, shm.rc);
  std::fprintf(stderr, "  %s: legitimate vecadds during it took %.3f s (tcp), %.3f s (shm)\n",
               attack, tcp.took, shm.took);
  legit_vecadd_tcp_and_shm(t.server, attack);
  t.assert_back_to_idle(attack, std::chrono::seconds(5));
  auto t0 = Clock::now();
  const int status = test_server_stop(&t.server);
  std::fprintf(stderr, "  %s: SIGTERM ended the server in %.3f s (status %d)\n", attack,
               seconds(t0), status);
  assert_int_equal(status, 0);
}

// A handle over ofi+shm with `bytes` in each of its two inputs and its output, kept open (its
// connection and regions held) until destroyed.
struct HeldHandle {
  std::vector<double> a, b, sum;
  naa_handle h = NAA_HANDLE_NULL;
  int rc = NAA_SUCCESS;

  HeldHandle(const test_server &s, size_t bytes)
      : a(bytes / sizeof(double)), b(bytes / sizeof(double)), sum(bytes / sizeof(double)) {
    naa_param_t in[2] = {{a.data(), bytes, false}, {b.data(), bytes, false}};
    naa_param_t out[1] = {{sum.data(), bytes, false}};
    test_server_use(&s, kFnVecadd, 2);
    setenv("NAA_TRANSPORT", "ofi+shm", 1);
    NoIdleEndpoints no_idle;
    rc = naa_create(kFnVecadd, in, 2, out, 1, &h);
    unsetenv("NAA_TRANSPORT");
  }
  ~HeldHandle() {
    if (rc == NAA_SUCCESS) naa_finalize(&h);
  }
  bool invokes() {
    naa_status st;
    return naa_invoke(&h) == NAA_SUCCESS && naa_wait(&h, &st) == NAA_SUCCESS &&
           st.naa_return_code == 0;
  }
};

// Two handles of this process over shm are served, a third is refused: the server's limits for
// one host (`options`) hold for shm, which named each handle a host of its own. tcp clients
// (another host: 127.0.0.1) and, once the two are released, shm clients are served.
void one_process_at_its_shm_limit(const char *attack, std::vector<const char *> options,
                                  size_t bytes) {
  Target t(std::move(options));
  std::vector<std::unique_ptr<HeldHandle>> held;
  for (int i = 0; i < 2; ++i) held.push_back(std::make_unique<HeldHandle>(t.server, bytes));
  for (auto &h : held) assert_int_equal(h->rc, NAA_SUCCESS);
  HeldHandle third(t.server, bytes);
  std::fprintf(stderr, "  %s: a third handle over shm: %s\n", attack,
               third.rc == NAA_SUCCESS ? "served" : naa_strerror(third.rc));
  assert_int_not_equal(third.rc, NAA_SUCCESS);
  const VecaddResult tcp = vecadd_over(t.server, "ofi+tcp");
  if (tcp.failed != nullptr)
    fail_msg("legitimate vecadd over ofi+tcp: %s gave %d", tcp.failed, tcp.rc);
  report_latency(attack, tcp.took);
  for (auto &h : held) assert_true(h->invokes());
  held.clear();
  legit_vecadd_tcp_and_shm(t.server, attack);
  t.assert_back_to_idle(attack, std::chrono::seconds(5));
}

// --peer-clients over shm.
void shm_peer_slot_limit(void **) {
  one_process_at_its_shm_limit("one process at --peer-clients over shm",
                               {"--max-clients", "8", "--peer-clients", "2"}, 8192);
}

// --peer-memory over shm: two handles of 3 x 256 KiB fit in 2 MiB, a third does not.
void shm_peer_memory_limit(void **) {
  one_process_at_its_shm_limit(
      "one process at --peer-memory over shm",
      {"--client-memory", "1M", "--total-memory", "8M", "--peer-memory", "2M"}, 256 * 1024);
}

// This process's shm objects in /dev/shm (its endpoints' regions: "PID-RANDOM...").
std::vector<std::string> own_shm_regions() {
  std::vector<std::string> names;
  const std::string prefix = std::to_string(getpid()) + "-";
  if (DIR *d = opendir("/dev/shm")) {
    while (dirent *e = readdir(d))
      if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0)
        names.emplace_back(e->d_name);
    closedir(d);
  }
  return names;
}

// Requests naming the listener's own region and a live client's, claiming the requester's
// pid, whose process then ends; and one naming the live client's endpoint with the client's
// pid. A server that believed them removed those regions when the requester died (and then
// ofi+shm found no server, and the client's region was gone). Neither is removed; the client
// is still served, and so are new ones.
void shm_spoofed_names_not_removed(void **) {
  const char *attack = "shm requests naming the listener's and a live client's regions";
  Target t({});
  const std::string listener = listener_region(t.server.port);
  assert_true(exists(listener));
  auto victim = std::make_unique<HeldHandle>(t.server, 8192);
  assert_int_equal(victim->rc, NAA_SUCCESS);
  const std::vector<std::string> regions = own_shm_regions();
  assert_false(regions.empty());
  const std::string uid = std::to_string(getuid()), port = std::to_string(t.server.port);
  for (const std::string &r : regions) {
    assert_true(shm_hostile(t.server.port, 1, "fi_shm://" + r, "self", 1500));
    assert_true(shm_hostile(t.server.port, 1, "fi_shm://" + r, std::to_string(getpid()), 0));
  }
  // Last: a server that believed it could be reached over shm no more.
  assert_true(shm_hostile(t.server.port, 1, "fi_shm://naa-" + uid + "-" + port, "self", 1500));
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the requesters' ends are seen
  std::fprintf(stderr, "  %s: listener's region %s, client's %s\n", attack,
               exists(listener) ? "kept" : "REMOVED",
               exists("/dev/shm/" + regions[0]) ? "kept" : "REMOVED");
  assert_true(exists(listener));
  for (const std::string &r : regions) assert_true(exists("/dev/shm/" + r));
  assert_true(victim->invokes());
  victim.reset();
  legit_vecadd_tcp_and_shm(t.server, attack);
  t.assert_back_to_idle(attack, std::chrono::seconds(5));
}

// --shm off: no shm listener; ofi+shm finds no server, auto and tcp clients are served.
void shm_off(void **) {
  const char *attack = "--shm off";
  Target t({"--shm", "off"});
  assert_false(exists(listener_region(t.server.port)));
  const VecaddResult shm = vecadd_over(t.server, "ofi+shm");
  assert_non_null(shm.failed);
  const VecaddResult tcp = vecadd_over(t.server, "ofi+tcp");
  if (tcp.failed != nullptr)
    fail_msg("legitimate vecadd over ofi+tcp: %s gave %d", tcp.failed, tcp.rc);
  report_latency(attack, tcp.took);
  legit_vecadd(t.server);  // auto: over tcp
  t.assert_back_to_idle(attack, std::chrono::seconds(5));
}

// --shm pgid: this process (the server's process group: it forked the server) is served
// over shm; a client in a session of its own is refused over shm.
void shm_process_group_only(void **) {
  const char *examples = required_env("NAA_EXAMPLES");
  const char *attack = "--shm pgid, a client of another process group";
  Target t({"--shm", "pgid"});
  auto other_group = [&](const char *transport) {
    const std::string command = std::string("NAA_TRANSPORT=") + transport +
                                " NAA_SPEC=" + test_host() + ":" + std::to_string(t.server.port) +
                                ":10:2 setsid " + examples + "/vecadd 1000 > /dev/null 2>&1";
    return std::system(command.c_str());
  };
  const int refused = other_group("ofi+shm");
  const int over_tcp = other_group("ofi+tcp");
  std::fprintf(stderr, "  %s: over shm exit status %d, over tcp %d\n", attack, refused, over_tcp);
  assert_int_not_equal(refused, 0);
  assert_int_equal(over_tcp, 0);
  legit_vecadd_tcp_and_shm(t.server, attack);
  t.assert_back_to_idle(attack, std::chrono::seconds(5));
}

bool process_gone(pid_t pid) {
  return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH;
}

// A plugin kernel that forks a busy child and a busy orphan in a session of its own and
// returns. Both end with the invocation (they kept a core each, reparented to init).
void forking_kernel_leaves_no_process(void **) {
  const char *plugin = required_env("NAA_TEST_KERNEL_PLUGIN");
  const char *attack = "a kernel that forks and returns";
  Target t({"--kernel", plugin, "--isolate", "plugins"});
  constexpr uint32_t kForkAndReturn = 106;
  pid_t child = 0, orphan = 0;
  bool gone = false;
  {
    RawClient c(t.server.port);
    c.setup(4096);
    assert_int_equal(
        c.invoke(protocol::imm::host_request(kForkAndReturn), std::chrono::seconds(20)), 0);
    int32_t pids[2];
    std::memcpy(pids, c.region_.data(), sizeof pids);
    child = pids[0];
    orphan = pids[1];
    auto give_up = Clock::now() + scaled(std::chrono::seconds(5));
    while (!(gone = process_gone(child) && process_gone(orphan)) && Clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::fprintf(stderr, "  %s: child %d %s, orphan %d %s after the invocation\n", attack, child,
               process_gone(child) ? "gone" : "LEFT", orphan,
               process_gone(orphan) ? "gone" : "LEFT");
  for (pid_t pid : {child, orphan})
    if (pid > 0 && !process_gone(pid)) kill(pid, SIGKILL);
  assert_true(child > 0 && orphan > 0);
  assert_true(gone);
  legit_vecadd_tcp_and_shm(t.server, attack);
  t.assert_back_to_idle(attack, std::chrono::seconds(5));
}

}  // namespace

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(stray_message_then_close),
      cmocka_unit_test(idle_sessions_time_out),
      cmocka_unit_test(peer_slot_limit),
      cmocka_unit_test(peer_memory_limit),
      cmocka_unit_test(stalled_connection_request),
      cmocka_unit_test(idle_raw_connections),
      cmocka_unit_test(connect_flood_per_source),
      cmocka_unit_test(shm_requests_amid_connection_churn),
      cmocka_unit_test(kernel_worker_isolation),
      cmocka_unit_test(key_guessing),
      cmocka_unit_test(shm_requests_for_unmappable_endpoints),
      cmocka_unit_test(shm_peer_slot_limit),
      cmocka_unit_test(shm_peer_memory_limit),
      cmocka_unit_test(shm_spoofed_names_not_removed),
      cmocka_unit_test(shm_off),
      cmocka_unit_test(shm_process_group_only),
      cmocka_unit_test(forking_kernel_leaves_no_process),
  };
  // One case alone, while working on it: NAA_TEST_ONLY=shm_off (a cmocka pattern).
  if (const char *only = std::getenv("NAA_TEST_ONLY")) cmocka_set_test_filter(only);
  setenv("NAA_TIMEOUT", "20", 1);
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
