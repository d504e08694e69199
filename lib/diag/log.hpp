// SPDX-License-Identifier: BSD-3-Clause
// Diagnostics to stderr, filtered by NAA_LOG_LEVEL (error|warn|info|debug, default warn).
// Printf-style so that call sites stay one line and cost nothing when filtered out.
#pragma once

#include <cstddef>

namespace naa::diag::log {

enum class Level { Error = 0, Warn = 1, Info = 2, Debug = 3 };

// The level in force, read once from NAA_LOG_LEVEL.
Level threshold();
// The level when NAA_LOG_LEVEL is not set (naa-server -v: info), instead of warn.
void set_default_threshold(Level level);
inline bool enabled(Level level) {
  return level <= threshold();
}

// Writes one line "libnaa[PID]: LEVEL: message" ("libnaa[PID, rank R]: ..." in a ranked
// task) to stderr or to the handler. Thread-safe (one write(2) per line).
void write(Level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// Lines go to handler(level, line without newline, arg) instead of stderr; nullptr: stderr.
using Handler = void (*)(int level, const char *line, void *arg);
void set_handler(Handler handler, void *arg);

// While one lives on a thread (every entry point of the API, each turn of the progress
// thread), the lines its thread logs for the program's handler are kept and handed to the
// handler when the outermost one ends, after the call has released libnaa's locks: the
// handler may call libnaa on the very handle that logged (naa_handle_info, naa_test,
// naa_cancel) without taking a lock its thread already holds. Lines to stderr are written at
// once. At most kKeptLines lines are kept per call; a count of those dropped follows them.
class Deferred {
 public:
  static constexpr std::size_t kKeptLines = 256;
  Deferred();
  ~Deferred();
  Deferred(const Deferred &) = delete;
  Deferred &operator=(const Deferred &) = delete;
};

// Sets the prefix printed instead of "libnaa" (the server calls itself naa-server).
void set_program(const char *name);

}  // namespace naa::diag::log

#define NAA_LOG(level, ...)                                                            \
  do {                                                                                 \
    if (::naa::diag::log::enabled(level)) ::naa::diag::log::write(level, __VA_ARGS__); \
  } while (0)
#define NAA_LOG_ERROR(...) NAA_LOG(::naa::diag::log::Level::Error, __VA_ARGS__)
#define NAA_LOG_WARN(...) NAA_LOG(::naa::diag::log::Level::Warn, __VA_ARGS__)
#define NAA_LOG_INFO(...) NAA_LOG(::naa::diag::log::Level::Info, __VA_ARGS__)
#define NAA_LOG_DEBUG(...) NAA_LOG(::naa::diag::log::Level::Debug, __VA_ARGS__)
