// SPDX-License-Identifier: BSD-3-Clause
// The internal error type: C++ code throws it, the extern "C" layer turns it into the code.
#pragma once

#include <stdexcept>
#include <string>

#include "naa.h"

namespace naa {

class Error : public std::runtime_error {
 public:
  Error(naa_error_t code, const std::string &what) : std::runtime_error(what), code_(code) {}
  naa_error_t code() const { return code_; }

 private:
  naa_error_t code_;
};

}  // namespace naa
