// SPDX-License-Identifier: BSD-3-Clause
// A page-aligned buffer whose pages are already faulted in, so no timed loop pays for first
// touches (libnaa's regions and the raw pattern's use the same kind).
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstring>
#include <new>

namespace naa::bench {

class Buffer {
 public:
  explicit Buffer(size_t size) : size_(size) {
    void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    data_ = p;
    std::memset(data_, 0x5a, size_);
  }
  ~Buffer() { munmap(data_, size_); }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  void *data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void *data_;
  size_t size_;
};

}  // namespace naa::bench
