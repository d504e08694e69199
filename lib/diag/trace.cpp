// SPDX-License-Identifier: BSD-3-Clause
#include "diag/trace.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "diag/log.hpp"
#include "diag/rank.hpp"

namespace naa::trace {
namespace {

struct PollRun {
  uint64_t t0, t1, polls;
  long tid;
  unsigned fn;
  std::string naa;
};

std::mutex mu;
std::string directory;
// Never destroyed: the exit handler writes them.
std::vector<std::pair<uint64_t, std::string>> &events() {  // (ts, event)
  static auto *v = new std::vector<std::pair<uint64_t, std::string>>;
  return *v;
}
std::map<uint64_t, PollRun> &poll_runs() {
  static auto *m = new std::map<uint64_t, PollRun>;
  return *m;
}

long thread_id() { return static_cast<long>(syscall(SYS_gettid)); }
int process_id() { return rank() >= 0 ? rank() : static_cast<int>(getpid()); }

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

// ph X (complete) or b/e (async, id = handle), ts and dur in microseconds.
void add(const char *ph, const std::string &name, const char *cat, uint64_t t0, uint64_t t1,
         long tid, uint64_t handle, const std::string &args) {
  char head[256];
  snprintf(head, sizeof head, "{\"ph\":\"%s\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%ld,\"ts\":%.3f", ph,
           cat, process_id(), tid, static_cast<double>(t0) / 1e3);
  std::string e = head;
  e += ",\"name\":" + quoted(name);
  if (*ph == 'X') {
    char dur[48];
    snprintf(dur, sizeof dur, ",\"dur\":%.3f", static_cast<double>(t1 - t0) / 1e3);
    e += dur;
  } else {
    e += ",\"id\":" + hex(handle);
  }
  e += ",\"args\":{" + args + "}}";
  events().emplace_back(t0, std::move(e));
}

std::string where(uint64_t handle, unsigned fn, const std::string &naa) {
  std::string a = "\"handle\":" + hex(handle);
  if (fn != 0) a += ",\"function_code\":" + std::to_string(fn) + ",\"naa\":" + quoted(naa);
  return a;
}

void flush_polls_locked(uint64_t handle) {
  auto it = poll_runs().find(handle);
  if (it == poll_runs().end()) return;
  const PollRun &r = it->second;
  add("X", "naa_test", "call", r.t0, r.t1, r.tid, handle,
      where(handle, r.fn, r.naa) + ",\"polls\":" + std::to_string(r.polls));
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
  // In time order, which a reader of the file (and naa-trace) may rely on.
  std::stable_sort(events().begin(), events().end(),
                   [](const auto &a, const auto &b) { return a.first < b.first; });
  for (const auto &e : events()) std::fprintf(f, ",\n%s", e.second.c_str());
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
  std::lock_guard<std::mutex> lock(mu);
  const bool poll = std::string(function) == "naa_test" && !completed_test && code == NAA_SUCCESS;
  if (poll) {
    auto it = poll_runs().find(handle);
    if (it != poll_runs().end() && it->second.tid == tid) {
      it->second.t1 = t1;
      ++it->second.polls;
      return;
    }
    flush_polls_locked(handle);
    poll_runs()[handle] = PollRun{t0, t1, 1, tid, fn, naa != nullptr ? naa : ""};
    return;
  }
  flush_polls_locked(handle);
  add("X", function, "call", t0, t1, tid, handle,
      where(handle, fn, naa != nullptr ? naa : "") + ",\"code\":" + std::to_string(code));
}

void invocation_begin(uint64_t handle, uint64_t t0, unsigned fn, const char *naa,
                      uint64_t bytes_out, uint64_t bytes_back) {
  std::lock_guard<std::mutex> lock(mu);
  add("b", "invocation", "invocation", t0, t0, 0, handle,
      where(handle, fn, naa) + ",\"bytes_out\":" + std::to_string(bytes_out) +
          ",\"bytes_back\":" + std::to_string(bytes_back));
}

void invocation_end(uint64_t handle, uint64_t t1, int code) {
  std::lock_guard<std::mutex> lock(mu);
  add("e", "invocation", "invocation", t1, t1, 0, handle, "\"code\":" + std::to_string(code));
}

void stage(uint64_t handle, const char *name, uint64_t t0, uint64_t t1) {
  std::lock_guard<std::mutex> lock(mu);
  add("b", name, "invocation", t0, t0, 0, handle, "");
  add("e", name, "invocation", t1, t1, 0, handle, "");
}

}  // namespace naa::trace
