// SPDX-License-Identifier: BSD-3-Clause
#include "diag/trace.hpp"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "diag/log.hpp"
#include "diag/rank.hpp"

namespace naa::diag::trace {
namespace {

// What an event needs, recorded as is: the JSON is written only when a block of them is (see
// add()), so that a traced call costs a clock read and a push, not the formatting (a few
// microseconds per invocation).
struct Event {
  uint64_t t0, t1;  // ns
  uint64_t handle;
  const char *name;  // a literal: the public call's name, "invocation" or a stage's
  char ph;           // X (complete), b/e (async, id = handle)
  int code;
  long tid;
  unsigned fn;
  uint32_t naa;  // in naas()
  // naa_test run: polls, ns inside the calls; invocation b: bytes out, bytes back
  uint64_t count, count2;
  enum Kind : uint8_t { Call, Polls, Span, Stage, Counter } kind;
  double joules;      // invocation e: of its window (< 0: none); counter: the reading
  double naa_joules;  // invocation e: the NAA's over its kernel run (< 0: none)
};

// Consecutive polls of one handle by one thread, traced as one span from the first call's start
// to the last one's end; `inside` sums the time in the calls themselves, as NAA_STATS does.
struct PollRun {
  uint64_t t0, t1, polls, inside;
  long tid;
  unsigned fn;
  uint32_t naa;
};

std::mutex mu;
std::string directory;
int file = -1;  // the process's trace file, created by open(); -1: not (yet) in a forked child
// At most `capacity` events wait in memory; then they are written as one block (see add()).
// Set by open() (NAA_TRACE_BUFFER).
size_t capacity = 1;
// A write failed or the exit writer ran: events are no longer kept (the file ends there).
bool stopped = false;
// Never destroyed: the exit handler writes them.
std::vector<Event> &pending() {
  static auto *v = new std::vector<Event>;
  return *v;
}
std::vector<std::string> &naas() {
  static auto *v = new std::vector<std::string>{""};
  return *v;
}
std::map<uint64_t, PollRun> &poll_runs() {
  static auto *m = new std::map<uint64_t, PollRun>;
  return *m;
}

long thread_id() {
  static thread_local long tid = static_cast<long>(syscall(SYS_gettid));
  return tid;
}
int process_id() {
  return rank() >= 0 ? rank() : static_cast<int>(getpid());
}

uint32_t naa_index(const char *naa) {
  if (naa == nullptr || *naa == '\0') return 0;
  std::vector<std::string> &v = naas();
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] == naa) return static_cast<uint32_t>(i);
  v.emplace_back(naa);
  return static_cast<uint32_t>(v.size() - 1);
}

// A JSON string of text, which comes from the program or the NAA's address.
std::string quoted(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char esc[8];
      snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string hex(uint64_t v) {
  char text[24];
  snprintf(text, sizeof text, "\"0x%llx\"", static_cast<unsigned long long>(v));
  return text;
}

// ts and dur in microseconds.
std::string json(const Event &e) {
  const char *cat = e.kind == Event::Call || e.kind == Event::Polls ? "call"
                    : e.kind == Event::Counter                      ? "energy"
                                                                    : "invocation";
  char head[256];
  snprintf(head, sizeof head, "{\"ph\":\"%c\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%ld,\"ts\":%.3f",
           e.ph, cat, process_id(), e.tid, static_cast<double>(e.t0) / 1e3);
  std::string out = head;
  out += ",\"name\":" + quoted(e.name);
  if (e.kind == Event::Counter) {
    char args[64];
    snprintf(args, sizeof args, ",\"args\":{\"J\":%.6f}}", e.joules);
    return out + args;
  }
  if (e.ph == 'X') {
    char dur[48];
    snprintf(dur, sizeof dur, ",\"dur\":%.3f", static_cast<double>(e.t1 - e.t0) / 1e3);
    out += dur;
  } else {
    out += ",\"id\":" + hex(e.handle);
  }
  std::string args;
  if (e.kind != Event::Stage && !(e.kind == Event::Span && e.ph == 'e')) {
    args = "\"handle\":" + hex(e.handle);
    if (e.fn != 0)
      args += ",\"function_code\":" + std::to_string(e.fn) + ",\"naa\":" + quoted(naas()[e.naa]);
  }
  switch (e.kind) {
    case Event::Call:
      args += ",\"code\":" + std::to_string(e.code);
      break;
    case Event::Polls: {
      char inside[48];
      snprintf(inside, sizeof inside, ",\"in_calls_us\":%.3f", static_cast<double>(e.count2) / 1e3);
      args += ",\"polls\":" + std::to_string(e.count) + inside;
      break;
    }
    case Event::Span:
      if (e.ph == 'b')
        args += ",\"bytes_out\":" + std::to_string(e.count) +
                ",\"bytes_back\":" + std::to_string(e.count2);
      else
        args = "\"code\":" + std::to_string(e.code);
      if (e.ph == 'e' && e.joules >= 0) {
        char j[48];
        snprintf(j, sizeof j, ",\"host_J\":%.6f", e.joules);
        args += j;
      }
      if (e.ph == 'e' && e.naa_joules >= 0) {
        char j[48];
        snprintf(j, sizeof j, ",\"NAA_J\":%.6f", e.naa_joules);
        args += j;
      }
      break;
    case Event::Stage:
    case Event::Counter:
      break;
  }
  return out + ",\"args\":{" + args + "}}";
}

// The part of a name that an environment variable gives: letters, digits, '-' and '_' only.
std::string name_part(const char *prefix, const char *value) {
  if (value == nullptr || *value == '\0') return "";
  std::string out = prefix;
  for (const char *c = value; *c != '\0' && out.size() < 32; ++c)
    out += std::isalnum(static_cast<unsigned char>(*c)) || *c == '-' || *c == '_' ? *c : '_';
  return out + ".";
}

// DIR/naa-trace.[jJOB.][sSTEP.][rRANK.]pPID.json: no two processes of a job, of its steps or
// forked from each other share a name.
std::string file_name() {
  std::string name = "/naa-trace." + name_part("j", std::getenv("SLURM_JOB_ID")) +
                     name_part("s", std::getenv("SLURM_STEP_ID"));
  if (rank() >= 0) name += "r" + std::to_string(rank()) + ".";
  return directory + name + "p" + std::to_string(getpid()) + ".json";
}

// mkdir -p with mode 0700 for what it creates; "" or why not.
std::string make_directory(const std::string &dir) {
  for (size_t at = dir.find('/', 1);; at = dir.find('/', at + 1)) {
    const std::string part = dir.substr(0, at);
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST)
      return "cannot create the directory " + part + ": " + std::strerror(errno);
    if (at == std::string::npos) break;
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return dir + " is not a directory";
  return "";
}

// All of text to the trace file, or false with errno set.
bool write_all(const std::string &text) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(file, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

// A write failed: the file keeps what was written before (naa-trace reads the events of a cut
// file), and nothing more is kept in memory. Called with mu held.
void stop_locked(int error) {
  const std::string path = file_name();
  NAA_LOG_WARN("NAA_TRACE: writing %s failed: %s; the trace of this process ends there",
               path.c_str(), std::strerror(error));
  ::close(file);
  file = -1;
  stopped = true;
  pending().clear();
}

// Creates the process's file, never through a link nor over an existing file, readable by
// its owner only, and writes the head of the JSON document; "" or why not. Called with mu held.
std::string create_file_locked() {
  const std::string path = file_name();
  file = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (file < 0)
    return "cannot create " + path + ": " + std::strerror(errno) +
           (errno == EEXIST ? " (a file or link of that name is in the way; it is left as it is)"
                            : "");
  char head[160];
  snprintf(head, sizeof head,
           "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
           "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"%s %d\"}}",
           process_id(), rank() >= 0 ? "rank" : "pid", process_id());
  if (!write_all(head)) {
    const int error = errno;
    const std::string why = "cannot write " + path + ": " + std::strerror(error);
    ::close(file);
    file = -1;
    return why;
  }
  return "";
}

// Appends the waiting events to the file as one block, in time order within the block (a
// call is recorded as it ends, so an event of the next block may begin earlier: naa-trace
// orders each file as a whole). A forked child creates its own file here. Called with mu held.
void write_block_locked() {
  if (pending().empty() || stopped) return;
  if (file < 0) {
    const std::string why = create_file_locked();
    if (!why.empty()) {
      NAA_LOG_WARN("NAA_TRACE: %s; the trace of this process is lost", why.c_str());
      stopped = true;
      pending().clear();
      return;
    }
  }
  std::vector<Event> &events = pending();
  std::stable_sort(events.begin(), events.end(),
                   [](const Event &a, const Event &b) { return a.t0 < b.t0; });
  std::string text;
  for (const Event &e : events) text += ",\n" + json(e);
  events.clear();
  if (!write_all(text)) stop_locked(errno);
}

// Records e, and writes the buffer out once it holds `capacity` events, so that a long run
// keeps no more than that in memory whatever its length. Called with mu held.
void add(const Event &e) {
  if (stopped) return;
  pending().push_back(e);
  if (pending().size() >= capacity) write_block_locked();
}

void flush_polls_locked(uint64_t handle) {
  auto it = poll_runs().find(handle);
  if (it == poll_runs().end()) return;
  const PollRun &r = it->second;
  add(Event{r.t0, r.t1, handle, "naa_test", 'X', 0, r.tid, r.fn, r.naa, r.polls, r.inside,
            Event::Polls, -1, -1});
  poll_runs().erase(it);
}

// At exit: the open runs of polls and the waiting events, then the end of the document.
// Events recorded after this (other threads, later exit handlers) are dropped.
void write_file() {
  std::lock_guard<std::mutex> lock(mu);
  while (!poll_runs().empty()) flush_polls_locked(poll_runs().begin()->first);
  write_block_locked();
  if (file >= 0 && !stopped) {
    if (!write_all("\n]}\n")) {
      stop_locked(errno);
      return;
    }
    ::close(file);
    file = -1;
  }
  stopped = true;
}

// fork(): the child keeps none of the parent's events nor its file; it starts a trace of its
// own, created when it first writes a block (at the latest at its exit) if it traced anything.
// The lock is held across the fork so that the child's copy of it is free and the events
// consistent.
void before_fork() {
  mu.lock();
}
void after_fork_parent() {
  mu.unlock();
}
void after_fork_child() {
  if (file >= 0) ::close(file);
  file = -1;
  stopped = false;
  pending().clear();
  poll_runs().clear();
  mu.unlock();
}

}  // namespace

std::string open(const std::string &dir, size_t buffer_events) {
  std::lock_guard<std::mutex> lock(mu);
  if (!directory.empty()) return "";
  std::string why = make_directory(dir);
  if (why.empty()) {
    directory = dir;
    why = create_file_locked();
  }
  if (!why.empty()) {
    directory.clear();
    NAA_LOG_WARN("NAA_TRACE: %s; nothing is traced", why.c_str());
    return why;
  }
  capacity = std::max<size_t>(buffer_events, 1);
  pending().reserve(capacity);
  std::atexit(write_file);
  pthread_atfork(before_fork, after_fork_parent, after_fork_child);
  return "";
}

void call(const char *function, uint64_t t0, uint64_t t1, uint64_t handle, unsigned fn,
          const char *naa, int code, bool completed_test) {
  const long tid = thread_id();
  const bool poll =
      !completed_test && code == NAA_SUCCESS && std::strcmp(function, "naa_test") == 0;
  std::lock_guard<std::mutex> lock(mu);
  if (poll) {
    auto it = poll_runs().find(handle);
    if (it != poll_runs().end() && it->second.tid == tid) {
      it->second.t1 = t1;
      ++it->second.polls;
      it->second.inside += t1 - t0;
      return;
    }
    flush_polls_locked(handle);
    poll_runs()[handle] = PollRun{t0, t1, 1, t1 - t0, tid, fn, naa_index(naa)};
    return;
  }
  flush_polls_locked(handle);
  add(Event{t0, t1, handle, function, 'X', code, tid, fn, naa_index(naa), 0, 0, Event::Call, -1,
            -1});
}

void invocation_begin(uint64_t handle, uint64_t t0, unsigned fn, const char *naa,
                      uint64_t bytes_out, uint64_t bytes_back) {
  std::lock_guard<std::mutex> lock(mu);
  add(Event{t0, t0, handle, "invocation", 'b', 0, 0, fn, naa_index(naa), bytes_out, bytes_back,
            Event::Span, -1, -1});
}

void invocation_end(uint64_t handle, uint64_t t1, int code, double host_j, double naa_j) {
  std::lock_guard<std::mutex> lock(mu);
  add(Event{t1, t1, handle, "invocation", 'e', code, 0, 0, 0, 0, 0, Event::Span, host_j, naa_j});
}

void energy(uint64_t t, double joules, const char *counter) {
  const long tid = thread_id();
  std::lock_guard<std::mutex> lock(mu);
  add(Event{t, t, 0, counter, 'C', 0, tid, 0, 0, 0, 0, Event::Counter, joules, -1});
}

void stage(uint64_t handle, const char *name, uint64_t t0, uint64_t t1) {
  std::lock_guard<std::mutex> lock(mu);
  add(Event{t0, t0, handle, name, 'b', 0, 0, 0, 0, 0, 0, Event::Stage, -1, -1});
  add(Event{t1, t1, handle, name, 'e', 0, 0, 0, 0, 0, 0, Event::Stage, -1, -1});
}

}  // namespace naa::diag::trace
