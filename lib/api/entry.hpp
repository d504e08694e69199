// SPDX-License-Identifier: BSD-3-Clause
// What every exported entry point (api.cpp for naa.h, ap2.cpp for naaice_ap2.h) shares: no
// exception crosses the C ABI, and a handle id is looked up, never trusted.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <new>
#include <string>

#include "error.hpp"
#include "api/handle_table.hpp"
#include "diag/log.hpp"
#include "naa.h"

namespace naa::api {

// Runs body, which returns a naa_error_t; a thrown Error becomes its code. The cause of a
// failure is logged at info (the caller sees the code; naa_last_error(3) gives the cause) and,
// if cause is not null, stored there too.
template <class Body>
int guarded(const char *function, Body body, std::string *cause = nullptr) {
  std::string why;
  int code;
  try {
    return body();
  } catch (const Error &e) {
    why = e.what();
    code = e.code();
  } catch (const std::bad_alloc &) {
    why = "out of memory";
    code = NAA_ERR_NO_RESOURCES;
  } catch (const std::exception &e) {
    why = std::string("internal error: ") + e.what();
    code = NAA_ERR_INTERNAL;
  } catch (...) {
    why = "internal error";
    code = NAA_ERR_INTERNAL;
  }
  NAA_LOG_INFO("%s: %s", function, why.c_str());
  if (cause != nullptr) *cause = std::string(function) + ": " + why;
  return code;
}

// The live object behind id; throws Error(NAA_ERR_INVALID_HANDLE) if there is none.
template <class T>
std::shared_ptr<T> live(const HandleTable<T> &table, uint64_t id) {
  auto object = table.find(id);
  if (!object) {
    char text[32];
    snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(id));
    if (table.inherited(id))
      throw Error(NAA_ERR_INVALID_HANDLE, std::string("handle ") + text +
                                              " belongs to the parent process (used after fork()); "
                                              "it stays the parent's, untouched");
    throw Error(NAA_ERR_INVALID_HANDLE,
                std::string("handle ") + text +
                    " is not a live handle (never created, finalized, or stale)");
  }
  return object;
}

// Function codes are 7 bits on the wire (doc/protocol.md §4.1); 0 is no invocation.
inline uint8_t checked_function_code(uint32_t function_code) {
  if (function_code < 1 || function_code > 127)
    throw Error(NAA_ERR_INVALID_ARGUMENT,
                "function code " + std::to_string(function_code) + " is not in 1..127");
  return static_cast<uint8_t>(function_code);
}

}  // namespace naa::api
