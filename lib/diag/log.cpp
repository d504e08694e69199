// SPDX-License-Identifier: BSD-3-Clause
#include "diag/log.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "config/params.hpp"
#include "diag/rank.hpp"

namespace naa::diag::log {
namespace {

const char *program = "libnaa";

Level parse_level(const char *text) {
  if (text == nullptr || *text == '\0') return Level::Warn;
  static const struct {
    const char *name;
    Level level;
  } names[] = {{"error", Level::Error}, {"warn", Level::Warn},   {"warning", Level::Warn},
               {"info", Level::Info},   {"debug", Level::Debug}, {"0", Level::Error},
               {"1", Level::Warn},      {"2", Level::Info},      {"3", Level::Debug}};
  for (const auto &n : names)
    if (strcasecmp(text, n.name) == 0) return n.level;
  return Level::Warn;
}

const char *level_name(Level level) {
  switch (level) {
    case Level::Error:
      return "error";
    case Level::Warn:
      return "warning";
    case Level::Info:
      return "info";
    case Level::Debug:
      return "debug";
  }
  return "?";
}

}  // namespace

namespace {

// -1 until the first line asks: NAA_LOG_LEVEL is read once per process, when first needed.
std::atomic<int> level{-1};
std::atomic<int> fallback{static_cast<int>(Level::Warn)};

}  // namespace

Level threshold() {
  int l = level.load(std::memory_order_relaxed);
  if (l < 0) {
    const config::params::Values values = config::params::Values::read(config::params::own());
    l = values.source("NAA_LOG_LEVEL") == config::params::Source::Default
            ? fallback.load()
            : static_cast<int>(parse_level(values.text("NAA_LOG_LEVEL").c_str()));
    level.store(l, std::memory_order_relaxed);
  }
  return static_cast<Level>(l);
}

void set_default_threshold(Level l) {
  fallback.store(static_cast<int>(l));
  level.store(-1);
}

void set_program(const char *name) {
  program = name;
}

namespace {

// The program's own logger (naa_set_log_handler), or none: stderr.
std::mutex handler_mu;
Handler handler = nullptr;
void *handler_arg = nullptr;

}  // namespace

void set_handler(Handler h, void *arg) {
  std::lock_guard<std::mutex> lock(handler_mu);
  handler = h;
  handler_arg = arg;
}

namespace {

// The thread's Deferred scopes, and whether it kept lines meanwhile: plain values, so that a
// call that logs nothing (every naa_invoke and naa_wait on the fast path) pays one TLS lookup
// each way and never the initialisation guard of a thread_local with a destructor.
struct Scope {
  int depth;
  bool kept;  // lines or a count of dropped ones wait in `kept`
};
thread_local Scope scope{0, false};

// The lines kept for the handler, and how many more were dropped.
struct Kept {
  std::vector<std::pair<int, std::string>> lines;
  size_t dropped = 0;
};
thread_local Kept kept;

void emit(int level, char *line, size_t len, size_t size) {
  Handler h;
  void *arg;
  {
    std::lock_guard<std::mutex> lock(handler_mu);
    h = handler;
    arg = handler_arg;
  }
  if (h != nullptr) {  // called unlocked: the program's logger may call into libnaa again
    line[len] = '\0';
    h(level, line, arg);
    return;
  }
  if (len > size - 2) len = size - 2;
  line[len++] = '\n';
  // One write(2) so that lines of concurrent threads and processes never interleave.
  ssize_t ignored = ::write(STDERR_FILENO, line, len);
  (void)ignored;
}

bool has_handler() {
  std::lock_guard<std::mutex> lock(handler_mu);
  return handler != nullptr;
}

}  // namespace

Deferred::Deferred() {
  ++scope.depth;
}

Deferred::~Deferred() {
  Scope &s = scope;
  if (--s.depth > 0 || !s.kept) return;
  s.kept = false;
  // The handler may log through libnaa again; those lines are a new batch of the thread's.
  std::vector<std::pair<int, std::string>> lines;
  lines.swap(kept.lines);
  const size_t dropped = std::exchange(kept.dropped, 0);
  char line[1024];
  for (auto &l : lines) {
    const size_t len = std::min(l.second.size(), sizeof line - 2);
    std::memcpy(line, l.second.data(), len);
    emit(l.first, line, len, sizeof line);
  }
  if (dropped != 0)
    write(Level::Warn, "%zu more log lines of one call were dropped (at most %zu are kept)",
          dropped, kKeptLines);
}

void write(Level level, const char *fmt, ...) {
  char line[1024];
  const int r = rank();
  char who[48];
  if (r >= 0)
    std::snprintf(who, sizeof who, "%d, rank %d", static_cast<int>(getpid()), r);
  else
    std::snprintf(who, sizeof who, "%d", static_cast<int>(getpid()));
  int n = std::snprintf(line, sizeof line, "%s[%s]: %s: ", program, who, level_name(level));
  if (n < 0) return;
  va_list args;
  va_start(args, fmt);
  int m = std::vsnprintf(line + n, sizeof line - static_cast<size_t>(n), fmt, args);
  va_end(args);
  size_t len = static_cast<size_t>(n) + (m < 0 ? 0 : static_cast<size_t>(m));
  if (len > sizeof line - 2) len = sizeof line - 2;  // truncated: keep the newline
  if (scope.depth > 0 && has_handler()) {
    scope.kept = true;
    try {
      if (kept.lines.size() < Deferred::kKeptLines) {
        kept.lines.emplace_back(static_cast<int>(level), std::string(line, len));
        return;
      }
    } catch (const std::bad_alloc &) {
    }
    ++kept.dropped;
    return;
  }
  emit(static_cast<int>(level), line, len, sizeof line);
}

}  // namespace naa::diag::log
