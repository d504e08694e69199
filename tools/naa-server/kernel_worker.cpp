// SPDX-License-Identifier: BSD-3-Clause
#include "kernel_worker.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "client_cpu.hpp"
#include "deadline.hpp"
#include "diag/log.hpp"
#include "option_choice.hpp"

namespace naa::server {
namespace {

// Inaccessible bytes after each region in the worker, beyond the page the region ends in.
constexpr size_t kGuardBytes = size_t{1} << 20;

// The worker is a fork of this process, so the kernel's function pointer is valid there as is.
struct Request {
  naa_kernel_fn run;
  uint32_t user_data;
};

// Kills every process a kernel left behind (it may fork and return): the worker's children,
// and then the orphans of those, which come back to the worker as their subreaper, until none
// is left. Allocates nothing: the worker is the fork of a threaded process.
void end_descendants() {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%ld/children", static_cast<long>(getpid()));
  for (;;) {
    char text[4096];
    ssize_t len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      len = read(fd, text, sizeof text - 1);
      close(fd);
    }
    if (len <= 0) break;
    text[len] = '\0';
    pid_t children[sizeof text / 2];
    size_t n = 0;
    for (char *p = text; *p != '\0' && n < sizeof children / sizeof children[0];) {
      char *end;
      long pid = strtol(p, &end, 10);
      if (end == p) break;
      children[n++] = static_cast<pid_t>(pid);
      p = end;
    }
    if (n == 0) break;
    for (size_t i = 0; i < n; ++i) kill(children[i], SIGKILL);
    for (size_t i = 0; i < n; ++i)
      while (waitpid(children[i], nullptr, 0) < 0 && errno == EINTR) {
      }
  }
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

[[noreturn]] void worker_main(int sock, pid_t parent, std::vector<naa_kernel_region> parameters,
                              const std::vector<int> &fds) {
  // Dies with the connection thread that forked it, even if that thread is killed.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);
  // What a kernel starts ends with it: orphans of the kernel's processes come back to the
  // worker (end_descendants), and the group the worker leads is killed with it.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  setpgid(0, 0);
  // The server's handlers are no business of the worker (nor a crash handler another library
  // may have installed): a crashing kernel should end it by the signal, which the connection
  // thread then logs.
  for (int sig : {SIGINT, SIGTERM, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) signal(sig, SIG_DFL);
  // Only this client's regions exist here (every region is MADV_DONTFORK in the server), each
  // followed by an inaccessible guard: a kernel writing past its region ends with SIGSEGV
  // instead of reaching whatever the address space holds next.
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (parameters[i].size == 0) continue;
    void *span = mmap(nullptr, parameters[i].size + kGuardBytes, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (span == MAP_FAILED) _exit(1);
    void *p =
        mmap(span, parameters[i].size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fds[i], 0);
    if (p == MAP_FAILED) _exit(1);
    parameters[i].addr = p;
  }
  // A worker holding copies of other connections' sockets would keep them open after the
  // server closes them, and their peers would never see the disconnect.
  if (sock > 3) close_range(3, static_cast<unsigned>(sock) - 1, 0);
  close_range(static_cast<unsigned>(sock) + 1, ~0U, 0);
  for (;;) {
    Request req;
    ssize_t n = recv(sock, &req, sizeof req, 0);
    if (n != static_cast<ssize_t>(sizeof req)) _exit(0);
    uint8_t rc = req.run(parameters.data(), parameters.size(), req.user_data);
    end_descendants();
    if (send(sock, &rc, 1, MSG_NOSIGNAL) != 1) _exit(0);
  }
}

}  // namespace

bool parse_isolation(const std::string &text, Isolation *out) {
  return parse_choice(
      text, {{"none", Isolation::None}, {"plugins", Isolation::Plugins}, {"all", Isolation::All}},
      out);
}

SharedRegion::SharedRegion(SharedRegion &&other) noexcept
    : addr_(std::exchange(other.addr_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      fd_(std::exchange(other.fd_, -1)) {}

SharedRegion &SharedRegion::operator=(SharedRegion &&other) noexcept {
  if (this != &other) {
    this->~SharedRegion();
    addr_ = std::exchange(other.addr_, nullptr);
    size_ = std::exchange(other.size_, 0);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

SharedRegion::~SharedRegion() {
  if (addr_ != nullptr) munmap(addr_, size_);
  if (fd_ >= 0) close(fd_);
  addr_ = nullptr;
  fd_ = -1;
}

int SharedRegion::allocate(size_t size, std::string *why) {
  size_ = size;
  if (size == 0) return 0;
  fd_ = memfd_create("naa-region", MFD_CLOEXEC);
  if (fd_ < 0 || ftruncate(fd_, static_cast<off_t>(size)) != 0) {
    const int err = errno;
    *why = std::string("cannot create a shared region: ") + std::strerror(err);
    return err;
  }
  void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    *why = "cannot map " + std::to_string(size) + " bytes: " + std::strerror(err);
    return err;
  }
  addr_ = p;
  // Kernel workers are forks of the server: without this, each would inherit every other
  // client's regions, and a plugin kernel could read and overwrite them.
  if (madvise(p, size, MADV_DONTFORK) != 0) {
    const int err = errno;
    *why = std::string("cannot keep a region out of kernel workers: ") + std::strerror(err);
    return err;
  }
  return 0;
}

bool KernelRunner::spawn(const std::vector<SharedRegion> &regions,
                         const std::vector<protocol::mrsp::RequestEntry> &request,
                         const std::string &peer) {
  // Built before the fork so that the child allocates nothing before it runs a kernel.
  std::vector<naa_kernel_region> parameters;
  std::vector<int> fds;
  for (size_t i = 0; i < request.size(); ++i) {
    if (request[i].flags & protocol::mrsp::kInternal) continue;
    parameters.push_back({nullptr, regions[i].size(), request[i].flags});
    fds.push_back(regions[i].fd());
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    NAA_LOG_ERROR("client %s: socketpair for the kernel worker: %s", peer.c_str(),
                  std::strerror(errno));
    return false;
  }
  const pid_t parent = getpid();
  forked_ = true;
  pid_t pid = fork();
  if (pid < 0) {
    NAA_LOG_ERROR("client %s: cannot fork a kernel worker: %s", peer.c_str(), std::strerror(errno));
    close(sv[0]);
    close(sv[1]);
    return false;
  }
  if (pid == 0) {
    close(sv[0]);
    restore_server_cpus();  // forked by a thread that may sleep on its client's CPU alone
    worker_main(sv[1], parent, std::move(parameters), fds);
  }
  close(sv[1]);
  setpgid(pid, pid);  // as the worker does itself: whichever comes first, kill(-pid) reaches it
  pid_ = pid;
  sock_ = sv[0];
  NAA_LOG_DEBUG("client %s: kernel worker %ld started", peer.c_str(), static_cast<long>(pid));
  return true;
}

// The worker, and whatever its kernel started that is still in its process group.
void KernelRunner::kill_worker() const {
  kill(-pid_, SIGKILL);
  kill(pid_, SIGKILL);
}

void KernelRunner::stop() {
  if (pid_ > 0) {
    kill_worker();
    int status;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (sock_ >= 0) close(sock_);
  pid_ = -1;
  sock_ = -1;
}

uint8_t KernelRunner::run(const naa_kernel &kernel, bool builtin,
                          const std::vector<SharedRegion> &regions,
                          const std::vector<protocol::mrsp::RequestEntry> &request,
                          const std::vector<naa_kernel_region> &parameters, uint32_t user_data,
                          const std::string &peer) {
  const bool isolate =
      policy_.isolation == Isolation::All || (policy_.isolation == Isolation::Plugins && !builtin);
  if (!isolate) return kernel.run(parameters.data(), parameters.size(), user_data);

  if (pid_ < 0 && !spawn(regions, request, peer)) return NAA_KERNEL_RC_CRASHED;
  const Request req{kernel.run, user_data};
  Deadline deadline = Deadline::after(policy_.timeout);
  bool answered = send(sock_, &req, sizeof req, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof req);
  while (answered) {
    pollfd p{sock_, POLLIN, 0};
    int ready = poll(&p, 1, deadline.remaining_ms(200));
    if (ready > 0) break;
    if (ready < 0 && errno != EINTR) answered = false;
    if (stop_ != nullptr && stop_->load()) {
      NAA_LOG_INFO("client %s: server stopping; kernel %u (%s) abandoned", peer.c_str(),
                   static_cast<unsigned>(kernel.function_code), kernel.name);
      stop();
      return NAA_KERNEL_RC_TIMEOUT;
    }
    if (ready == 0 && deadline.expired()) {
      NAA_LOG_WARN("client %s: kernel %u (%s) overran its %ld ms; worker killed, answering 0x%02x",
                   peer.c_str(), static_cast<unsigned>(kernel.function_code), kernel.name,
                   static_cast<long>(policy_.timeout.count()), NAA_KERNEL_RC_TIMEOUT);
      stop();
      return NAA_KERNEL_RC_TIMEOUT;
    }
  }
  uint8_t rc = 0;
  if (answered && recv(sock_, &rc, 1, 0) == 1) return rc;

  const pid_t pid = pid_;
  int status = 0;
  kill_worker();  // it may have only closed its socket; it is not trusted either way
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  close(sock_);
  pid_ = -1;
  sock_ = -1;
  if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
    NAA_LOG_WARN("client %s: kernel %u (%s) crashed (signal %d, worker %ld); answering 0x%02x",
                 peer.c_str(), static_cast<unsigned>(kernel.function_code), kernel.name,
                 WTERMSIG(status), static_cast<long>(pid), NAA_KERNEL_RC_CRASHED);
  else
    NAA_LOG_WARN("client %s: kernel %u (%s) ended its worker %ld (status 0x%x); answering 0x%02x",
                 peer.c_str(), static_cast<unsigned>(kernel.function_code), kernel.name,
                 static_cast<long>(pid), status, NAA_KERNEL_RC_CRASHED);
  return NAA_KERNEL_RC_CRASHED;
}

}  // namespace naa::server
