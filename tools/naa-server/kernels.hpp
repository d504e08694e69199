// SPDX-License-Identifier: BSD-3-Clause
// The kernels naa-server can run, by function code: its built-in ones plus those of
// plugins (see naa_kernel.h for the ABI).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "naa_kernel.h"

namespace naa::server {

class KernelRegistry {
 public:
  // Registers the built-in kernels: 1 add1, 2 add2, 3 noop, 10 vecadd_f64, 11 daxpy,
  // 12 dgemm.
  KernelRegistry();

  // find() hands out pointers into the registry, so it stays where it was made.
  KernelRegistry(const KernelRegistry &) = delete;
  KernelRegistry &operator=(const KernelRegistry &) = delete;

  // Refuses (false, reason in *error unless error is null) a function code outside
  // 1..127 or already taken, and an entry without name or run function.
  bool add(const naa_kernel &kernel, std::string *error);

  // Loads a plugin with dlopen (so a path without '/' is searched like a library)
  // and registers its whole table, or nothing of it. The plugin stays loaded for
  // the registry's lifetime.
  bool load_plugin(const std::string &path, std::string *error);

  // nullptr if no kernel has the code.
  const naa_kernel *find(uint8_t function_code) const;

  // True for the server's own kernels, false for plugin kernels and free codes.
  bool is_builtin(uint8_t function_code) const;

  // Ascending by function code.
  std::vector<const naa_kernel *> list() const;

 private:
  // Indexed by function code; an entry whose run is null is free.
  using Slots = std::array<naa_kernel, 128>;

  struct DlClose {
    void operator()(void *handle) const;
  };

  static bool add_to(Slots &slots, const naa_kernel &kernel, std::string *error);

  Slots slots_{};
  std::vector<std::unique_ptr<void, DlClose>> plugins_;
};

}  // namespace naa::server
