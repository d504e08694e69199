// SPDX-License-Identifier: BSD-3-Clause
// An option that takes one of a few words (--isolation, --shm).
#pragma once

#include <initializer_list>
#include <string>
#include <utility>

namespace naa::server {

// Sets *out to the value named `text`; false when no choice is named so.
template <class E>
bool parse_choice(const std::string &text,
                  std::initializer_list<std::pair<const char *, E>> choices, E *out) {
  for (const auto &[name, value] : choices)
    if (text == name) {
      *out = value;
      return true;
    }
  return false;
}

}  // namespace naa::server
