// SPDX-License-Identifier: BSD-3-Clause
#include "fi_pingpong_run.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "error.hpp"
#include "fi_pingpong_output.hpp"

namespace naa::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Enough for connecting and tearing down; the bytes add their time at a pessimistic 10 MB/s
// (a loaded machine's tcp loopback moves far more).
constexpr auto kFixedBound = std::chrono::seconds(60);
constexpr double kSlowBytesPerSecond = 1e7;
constexpr auto kServerExitBound = std::chrono::seconds(5);
constexpr auto kRetryPause = std::chrono::milliseconds(20);

uint16_t free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  bool ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0 &&
            getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0;
  if (fd >= 0) close(fd);
  if (!ok) throw Error(NAA_ERR_NO_RESOURCES, "--fi-pingpong: no free port on 127.0.0.1");
  return ntohs(a.sin_port);
}

// fi_pingpong with `args`, its stdout and stderr into out_fd (-1: /dev/null).
pid_t spawn(const std::vector<std::string> &args, int out_fd) {
  pid_t pid = fork();
  if (pid < 0) throw Error(NAA_ERR_NO_RESOURCES, "--fi-pingpong: fork failed");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the benchmark
    int fd = out_fd >= 0 ? out_fd : open("/dev/null", O_WRONLY);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    std::vector<char *> argv;
    for (const std::string &a : args) argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    execvp("fi_pingpong", argv.data());
    _exit(127);
  }
  return pid;
}

// waitpid with a deadline: false (the child still running) when it passes.
bool reap_by(pid_t pid, Clock::time_point deadline, int *status) {
  for (;;) {
    if (waitpid(pid, status, WNOHANG) == pid) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void kill_and_reap(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

// Appends all fd gives until its end; false when the deadline passes first.
bool read_all_by(int fd, Clock::time_point deadline, std::string *text) {
  char buf[4096];
  for (;;) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) return true;
    text->append(buf, static_cast<size_t>(n));
  }
}

struct Client {
  bool ended = false;  // before the deadline
  int status = 0;
  std::string output;
};

Client run_client(const std::vector<std::string> &args, Clock::time_point deadline) {
  int fds[2];
  if (pipe(fds) != 0) throw Error(NAA_ERR_NO_RESOURCES, "--fi-pingpong: pipe failed");
  pid_t pid = spawn(args, fds[1]);
  close(fds[1]);
  Client c;
  c.ended = read_all_by(fds[0], deadline, &c.output) && reap_by(pid, deadline, &c.status);
  close(fds[0]);
  if (!c.ended) kill_and_reap(pid);
  return c;
}

}  // namespace

std::vector<std::string> fi_pingpong_provider(const std::string &transport) {
  if (transport.find("ofi+tcp") != std::string::npos) return {"-p", "tcp", "-e", "msg"};
  if (transport.find("ofi+shm") != std::string::npos) return {"-p", "shm", "-e", "rdm"};
  return {};
}

bool is_loopback(const std::string &host) {
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  return host == "::1" || host == "localhost";
}

double run_fi_pingpong(const std::vector<std::string> &provider, size_t size, size_t iters) {
  const std::string port = std::to_string(free_port()), s = std::to_string(size),
                    n = std::to_string(iters);
  std::vector<std::string> server = {"fi_pingpong"}, client = {"fi_pingpong"};
  server.insert(server.end(), provider.begin(), provider.end());
  client.insert(client.end(), provider.begin(), provider.end());
  server.insert(server.end(), {"-B", port, "-S", s, "-I", n});
  client.insert(client.end(), {"-P", port, "-S", s, "-I", n, "127.0.0.1"});
  const auto bound =
      kFixedBound + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                        2.0 * static_cast<double>(size) * iters / kSlowBytesPerSecond));
  const Clock::time_point deadline = Clock::now() + bound;
  const pid_t server_pid = spawn(server, -1);
  Client c;
  int server_status = 0;
  bool server_ended = false;
  // The server listens a moment after its start: until then the client is refused.
  for (;;) {
    c = run_client(client, deadline);
    if (!c.ended || (WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0)) break;
    server_ended = waitpid(server_pid, &server_status, WNOHANG) == server_pid;
    if (server_ended || c.output.find("Connection refused") == std::string::npos) break;
    std::this_thread::sleep_for(kRetryPause);
  }
  if (!server_ended)
    server_ended = c.ended && reap_by(server_pid, Clock::now() + kServerExitBound, &server_status);
  if (!server_ended) kill_and_reap(server_pid);
  std::string command = "fi_pingpong";
  for (size_t i = 1; i < client.size(); ++i) command += " " + client[i];
  if (!c.ended)
    throw Error(
        NAA_ERR_TIMEOUT,
        "--fi-pingpong: " + command + " did not end within " +
            std::to_string(std::chrono::duration_cast<std::chrono::seconds>(bound).count()) +
            " s; both sides killed");
  if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0)
    throw Error(NAA_ERR_TRANSPORT, "--fi-pingpong: the client of " + command + " failed (status " +
                                       std::to_string(c.status) + "): " + c.output);
  FiPingpongResult r = parse_fi_pingpong(c.output);
  if (!r.ok) throw Error(NAA_ERR_PROTOCOL, "--fi-pingpong: " + r.error);
  return r.round_trip_us;
}

}  // namespace naa::bench
