// SPDX-License-Identifier: BSD-3-Clause
#include "kernels.hpp"

#include <dlfcn.h>

#include <cstring>
#include <utility>

#include "diag/log.hpp"

namespace naa::server {
namespace {

// The first N regions that carry flag, in index order (an in-place region counts
// as input and as output); false if there are fewer.
template <size_t N>
bool pick(const naa_kernel_region *regions, size_t n_regions, uint8_t flag,
          std::array<const naa_kernel_region *, N> &picked) {
  size_t found = 0;
  for (size_t r = 0; r < n_regions && found < N; r++)
    if (regions[r].flags & flag) picked[found++] = &regions[r];
  return found == N;
}

// Regions carry no alignment promise; memcpy makes the access well-defined and
// compiles to a plain load or store.
double load(const void *base, size_t i) {
  double value;
  std::memcpy(&value, static_cast<const unsigned char *>(base) + i * sizeof value, sizeof value);
  return value;
}

void store(void *base, size_t i, double value) {
  std::memcpy(static_cast<unsigned char *>(base) + i * sizeof value, &value, sizeof value);
}

// Bytes of a rows x cols matrix of doubles; false if that does not fit in size_t.
bool matrix_bytes(uint64_t rows, uint64_t cols, size_t *bytes) {
  size_t elements;
  return !__builtin_mul_overflow(rows, cols, &elements) &&
         !__builtin_mul_overflow(elements, sizeof(double), bytes);
}

void add_to_bytes(const naa_kernel_region *regions, size_t n_regions, uint8_t delta) {
  for (size_t r = 0; r < n_regions; r++) {
    auto *bytes = static_cast<uint8_t *>(regions[r].addr);
    for (size_t i = 0; i < regions[r].size; i++) bytes[i] = static_cast<uint8_t>(bytes[i] + delta);
  }
}

uint8_t add1(const naa_kernel_region *regions, size_t n_regions, uint32_t) {
  add_to_bytes(regions, n_regions, 1);
  return 0;
}

uint8_t add2(const naa_kernel_region *regions, size_t n_regions, uint32_t) {
  add_to_bytes(regions, n_regions, 2);
  return 0;
}

uint8_t noop(const naa_kernel_region *, size_t, uint32_t) {
  return 0;
}

uint8_t vecadd_f64(const naa_kernel_region *regions, size_t n_regions, uint32_t) {
  std::array<const naa_kernel_region *, 2> in;
  std::array<const naa_kernel_region *, 1> out;
  if (!pick(regions, n_regions, NAA_REGION_INPUT, in) ||
      !pick(regions, n_regions, NAA_REGION_OUTPUT, out)) {
    NAA_LOG_DEBUG("vecadd_f64: needs 2 input and 1 output regions, got %zu regions", n_regions);
    return NAA_KERNEL_RC_BAD_LAYOUT;
  }
  const size_t size = out[0]->size;
  if (in[0]->size != size || in[1]->size != size || size % sizeof(double) != 0) {
    NAA_LOG_DEBUG("vecadd_f64: a %zu, b %zu, sum %zu bytes; need equal multiples of 8", in[0]->size,
                  in[1]->size, size);
    return NAA_KERNEL_RC_BAD_SIZE;
  }
  for (size_t i = 0; i < size / sizeof(double); i++)
    store(out[0]->addr, i, load(in[0]->addr, i) + load(in[1]->addr, i));
  return 0;
}

uint8_t daxpy(const naa_kernel_region *regions, size_t n_regions, uint32_t) {
  std::array<const naa_kernel_region *, 3> in;
  std::array<const naa_kernel_region *, 1> out;
  if (!pick(regions, n_regions, NAA_REGION_INPUT, in) ||
      !pick(regions, n_regions, NAA_REGION_OUTPUT, out)) {
    NAA_LOG_DEBUG("daxpy: needs 3 input and 1 output regions, got %zu regions", n_regions);
    return NAA_KERNEL_RC_BAD_LAYOUT;
  }
  const size_t size = out[0]->size;
  if (in[0]->size != sizeof(double) || in[1]->size != size || in[2]->size != size ||
      size % sizeof(double) != 0) {
    NAA_LOG_DEBUG(
        "daxpy: alpha %zu, x %zu, y %zu, result %zu bytes; need 8, then equal "
        "multiples of 8",
        in[0]->size, in[1]->size, in[2]->size, size);
    return NAA_KERNEL_RC_BAD_SIZE;
  }
  // Read before the loop: the result may be the alpha region itself.
  const double alpha = load(in[0]->addr, 0);
  for (size_t i = 0; i < size / sizeof(double); i++)
    store(out[0]->addr, i, alpha * load(in[1]->addr, i) + load(in[2]->addr, i));
  return 0;
}

uint8_t dgemm(const naa_kernel_region *regions, size_t n_regions, uint32_t) {
  std::array<const naa_kernel_region *, 3> in;
  std::array<const naa_kernel_region *, 1> out;
  if (!pick(regions, n_regions, NAA_REGION_INPUT, in) ||
      !pick(regions, n_regions, NAA_REGION_OUTPUT, out)) {
    NAA_LOG_DEBUG("dgemm: needs 3 input and 1 output regions, got %zu regions", n_regions);
    return NAA_KERNEL_RC_BAD_LAYOUT;
  }
  // C accumulates while A and B are still being read, so it cannot share their region.
  if (out[0] == in[1] || out[0] == in[2]) {
    NAA_LOG_DEBUG("dgemm: C must not be A or B in place");
    return NAA_KERNEL_RC_BAD_LAYOUT;
  }
  uint64_t dims[3];
  if (in[0]->size != sizeof dims) {
    NAA_LOG_DEBUG("dgemm: dims region has %zu bytes, needs %zu", in[0]->size, sizeof dims);
    return NAA_KERNEL_RC_BAD_SIZE;
  }
  // Copied out first: C may be the dims region itself.
  std::memcpy(dims, in[0]->addr, sizeof dims);
  const uint64_t m = dims[0], n = dims[1], k = dims[2];
  // A zero dimension is refused: with k = n = 0 every size is 0 whatever m is, and the
  // loops would run m times unchecked by any region size.
  size_t a_bytes, b_bytes, c_bytes;
  if (m == 0 || n == 0 || k == 0 || !matrix_bytes(m, k, &a_bytes) ||
      !matrix_bytes(k, n, &b_bytes) || !matrix_bytes(m, n, &c_bytes) || in[1]->size != a_bytes ||
      in[2]->size != b_bytes || out[0]->size != c_bytes) {
    NAA_LOG_DEBUG("dgemm: m %llu, n %llu, k %llu do not match A %zu, B %zu, C %zu bytes",
                  static_cast<unsigned long long>(m), static_cast<unsigned long long>(n),
                  static_cast<unsigned long long>(k), in[1]->size, in[2]->size, out[0]->size);
    return NAA_KERNEL_RC_BAD_SIZE;
  }
  const void *a = in[1]->addr, *b = in[2]->addr;
  void *c = out[0]->addr;
  std::memset(c, 0, c_bytes);
  // i-k-j walks B and C along rows, so the inner loop streams through memory.
  for (size_t i = 0; i < m; i++)
    for (size_t p = 0; p < k; p++) {
      const double a_ip = load(a, i * k + p);
      for (size_t j = 0; j < n; j++)
        store(c, i * n + j, load(c, i * n + j) + a_ip * load(b, p * n + j));
    }
  return 0;
}

// Codes 1..3 are those of the reference software NAA, so hosts written for it work unchanged.
const naa_kernel builtins[] = {
    {1, "add1", add1},    {2, "add2", add2},    {3, "noop", noop}, {10, "vecadd_f64", vecadd_f64},
    {11, "daxpy", daxpy}, {12, "dgemm", dgemm},
};

bool fail(std::string *error, const std::string &message) {
  if (error != nullptr) *error = message;
  return false;
}

// dlerror() can be null, e.g. when a symbol exists but its value is null.
std::string dl_cause(const char *fallback) {
  const char *text = dlerror();
  return text != nullptr ? text : fallback;
}

}  // namespace

void KernelRegistry::DlClose::operator()(void *handle) const {
  dlclose(handle);
}

KernelRegistry::KernelRegistry() {
  for (const naa_kernel &kernel : builtins) slots_[kernel.function_code] = kernel;
}

bool KernelRegistry::add_to(Slots &slots, const naa_kernel &kernel, std::string *error) {
  const unsigned code = kernel.function_code;
  if (kernel.name == nullptr || kernel.run == nullptr)
    return fail(error, "kernel for function code " + std::to_string(code) +
                           " lacks a name or run function");
  if (code == 0 || code >= slots.size())
    return fail(error, "kernel " + std::string(kernel.name) + ": function code " +
                           std::to_string(code) + " is outside 1.." +
                           std::to_string(slots.size() - 1));
  if (slots[code].run != nullptr)
    return fail(error, "kernel " + std::string(kernel.name) + ": function code " +
                           std::to_string(code) + " is already taken by " + slots[code].name);
  slots[code] = kernel;
  return true;
}

bool KernelRegistry::add(const naa_kernel &kernel, std::string *error) {
  if (!add_to(slots_, kernel, error)) return false;
  NAA_LOG_DEBUG("kernel %u %s registered", static_cast<unsigned>(kernel.function_code),
                kernel.name);
  return true;
}

bool KernelRegistry::load_plugin(const std::string &path, std::string *error) {
  const std::string where = "kernel plugin " + path + ": ";
  std::unique_ptr<void, DlClose> handle(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!handle) return fail(error, where + dl_cause("dlopen failed"));

  dlerror();
  void *symbol = dlsym(handle.get(), NAA_KERNEL_TABLE_SYMBOL);
  if (symbol == nullptr) return fail(error, where + dl_cause(NAA_KERNEL_TABLE_SYMBOL " is null"));
  auto table_fn = reinterpret_cast<naa_kernel_table_fn>(symbol);

  unsigned abi_version = NAA_KERNEL_ABI_VERSION;
  size_t count = 0;
  const naa_kernel *table = table_fn(&abi_version, &count);
  if (abi_version != NAA_KERNEL_ABI_VERSION)
    return fail(error, where + "built for kernel ABI version " + std::to_string(abi_version) +
                           ", this server has version " + std::to_string(NAA_KERNEL_ABI_VERSION));
  // Checked before the table is read: a bogus count must not walk off its end.
  if (count >= slots_.size())
    return fail(error, where + "declares " + std::to_string(count) +
                           " kernels, more than there are function codes");
  if (count > 0 && table == nullptr) return fail(error, where + "returned no table");

  Slots slots = slots_;
  for (size_t i = 0; i < count; i++) {
    std::string cause;
    if (!add_to(slots, table[i], &cause)) return fail(error, where + cause);
  }
  slots_ = slots;
  plugins_.push_back(std::move(handle));
  NAA_LOG_INFO("kernel plugin %s: %zu kernels registered", path.c_str(), count);
  return true;
}

const naa_kernel *KernelRegistry::find(uint8_t function_code) const {
  if (function_code >= slots_.size() || slots_[function_code].run == nullptr) return nullptr;
  return &slots_[function_code];
}

bool KernelRegistry::is_builtin(uint8_t function_code) const {
  const naa_kernel *k = find(function_code);
  for (const naa_kernel &b : builtins)
    if (k != nullptr && b.function_code == function_code && b.run == k->run) return true;
  return false;
}

std::vector<const naa_kernel *> KernelRegistry::list() const {
  std::vector<const naa_kernel *> kernels;
  for (const naa_kernel &kernel : slots_)
    if (kernel.run != nullptr) kernels.push_back(&kernel);
  return kernels;
}

}  // namespace naa::server
