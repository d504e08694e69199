// SPDX-License-Identifier: BSD-3-Clause
#include "diag/trace.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "diag/log.hpp"
#include "diag/rank.hpp"

namespace naa::trace {
namespace {

// What an event needs, recorded as is: the JSON is written only at exit, so that a traced call
// costs a clock read and a push, not the formatting (a few microseconds per invocation).
struct Event {
  uint64_t t0, t1;  // ns
  uint64_t handle;
  const char *name;  // a literal: the public call's name, "invocation" or a stage's
  char ph;           // X (complete), b/e (async, id = handle)
  int code;
  long tid;
  unsigned fn;
  uint32_t naa;  // in naas()
  uint64_t count, count2;  // naa_test run: polls; invocation b: bytes out, bytes back
  enum Kind : uint8_t { Call, Polls, Span, Stage, Counter } kind;
  double joules;  // invocation e: of its window (< 0: none); counter: the reading
};

struct PollRun {
  uint64_t t0, t1, polls;
  long tid;
  unsigned fn;
  uint32_t naa;
};

std::mutex mu;
std::string directory;
// Never destroyed: the exit handler writes them. In chunks that are never moved, so that a
// long trace grows without copying what it holds.
constexpr size_t kChunk = 1 << 13;
std::vector<std::vector<Event>> &chunks() {
  static auto *v = new std::vector<std::vector<Event>>;
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
int process_id() { return rank() >= 0 ? rank() : static_cast<int>(getpid()); }

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
    case Event::Call: args += ",\"code\":" + std::to_string(e.code); break;
    case Event::Polls: args += ",\"polls\":" + std::to_string(e.count); break;
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
      break;
    case Event::Stage:
    case Event::Counter: break;
  }
  return out + ",\"args\":{" + args + "}}";
}

void add(const Event &e) {
  if (chunks().empty() || chunks().back().size() == kChunk) {
    chunks().emplace_back();
    chunks().back().reserve(kChunk);
  }
  chunks().back().push_back(e);
}

void flush_polls_locked(uint64_t handle) {
  auto it = poll_runs().find(handle);
  if (it == poll_runs().end()) return;
  const PollRun &r = it->second;
  add(Event{r.t0, r.t1, handle, "naa_test", 'X', 0, r.tid, r.fn, r.naa, r.polls, 0,
            Event::Polls, -1});
  poll_runs().erase(it);
}

void write_file() {
  std::lock_guard<std::mutex> lock(mu);
  while (!poll_runs().empty()) flush_polls_locked(poll_runs().begin()->first);
  char name[64];
  if (rank() >= 0) snprintf(name, sizeof name, "/naa-trace.%d.json", rank());
  else snprintf(name, sizeof name, "/naa-trace.p%d.json", static_cast<int>(getpid()));
  const std::string path = directory + name;
  FILE *f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    NAA_LOG_WARN("NAA_TRACE: cannot write %s; the trace of this process is lost", path.c_str());
    return;
  }
  std::fprintf(f, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  std::fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"%s %d\"}}",
               process_id(), rank() >= 0 ? "rank" : "pid", process_id());
  std::vector<Event> events;
  for (const std::vector<Event> &c : chunks()) events.insert(events.end(), c.begin(), c.end());
  // In time order, which a reader of the file (and naa-trace) may rely on.
  std::stable_sort(events.begin(), events.end(),
                   [](const Event &a, const Event &b) { return a.t0 < b.t0; });
  for (const Event &e : events) std::fprintf(f, ",\n%s", json(e).c_str());
  std::fprintf(f, "\n]}\n");
  if (std::fclose(f) != 0)
    NAA_LOG_WARN("NAA_TRACE: writing %s failed; the trace of this process is cut", path.c_str());
}

}  // namespace

bool open(const std::string &dir) {
  if (dir.empty()) return false;
  std::lock_guard<std::mutex> lock(mu);
  if (directory.empty()) {
    directory = dir;
    std::atexit(write_file);
  }
  return true;
}

void call(const char *function, uint64_t t0, uint64_t t1, uint64_t handle, unsigned fn,
          const char *naa, int code, bool completed_test) {
  const long tid = thread_id();
  const bool poll = !completed_test && code == NAA_SUCCESS && std::strcmp(function, "naa_test") == 0;
  std::lock_guard<std::mutex> lock(mu);
  if (poll) {
    auto it = poll_runs().find(handle);
    if (it != poll_runs().end() && it->second.tid == tid) {
      it->second.t1 = t1;
      ++it->second.polls;
      return;
    }
    flush_polls_locked(handle);
    poll_runs()[handle] = PollRun{t0, t1, 1, tid, fn, naa_index(naa)};
    return;
  }
  flush_polls_locked(handle);
  add(Event{t0, t1, handle, function, 'X', code, tid, fn, naa_index(naa), 0, 0, Event::Call, -1});
}

void invocation_begin(uint64_t handle, uint64_t t0, unsigned fn, const char *naa,
                      uint64_t bytes_out, uint64_t bytes_back) {
  std::lock_guard<std::mutex> lock(mu);
  add(Event{t0, t0, handle, "invocation", 'b', 0, 0, fn, naa_index(naa), bytes_out,
            bytes_back, Event::Span, -1});
}

void invocation_end(uint64_t handle, uint64_t t1, int code, double host_j) {
  std::lock_guard<std::mutex> lock(mu);
  add(Event{t1, t1, handle, "invocation", 'e', code, 0, 0, 0, 0, 0, Event::Span, host_j});
}

void energy(uint64_t t, double joules) {
  const long tid = thread_id();
  std::lock_guard<std::mutex> lock(mu);
  add(Event{t, t, 0, "host energy", 'C', 0, tid, 0, 0, 0, 0, Event::Counter, joules});
}

void stage(uint64_t handle, const char *name, uint64_t t0, uint64_t t1) {
  std::lock_guard<std::mutex> lock(mu);
  add(Event{t0, t0, handle, name, 'b', 0, 0, 0, 0, 0, 0, Event::Stage, -1});
  add(Event{t1, t1, handle, name, 'e', 0, 0, 0, 0, 0, 0, Event::Stage, -1});
}

}  // namespace naa::trace
