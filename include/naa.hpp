// SPDX-License-Identifier: BSD-3-Clause
/*
 * naa.hpp - a small header-only C++17 layer over naa.h; see naa(7), LANGUAGE BINDINGS.
 *
 *   std::vector<double> a(n), b(n), c(n);
 *   naa::handle h(10, {naa::buffer(a), naa::buffer(b).single_send()}, {naa::buffer(c)});
 *   h.invoke();
 *   naa_status st = h.wait();   // or poll: std::optional<naa_status> s; while (!(s = h.test()))
 * {...}
 *
 *   naa_attr_t attr = NAA_ATTR_INIT;   // per-handle settings (naa_create_attr(3))
 *   attr.naa = "10.0.0.7:12345";
 *   naa::handle fpga(10, {naa::buffer(a), naa::buffer(b)}, {naa::buffer(c)}, attr);
 *
 * Every failure throws naa::error, which keeps the naa_error_t code (and, for NAA_ERR_NAA,
 * the status with the NAA's return code). The handle finalizes itself when it goes out of
 * scope. It needs only libnaa (pkg-config naa) and C++17; nothing here is compiled into the
 * library, so the C ABI stays the only binary interface.
 */
#ifndef NAA_HPP
#define NAA_HPP

#include <naa.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace naa {

/* A failed libnaa call: what() is its cause as naa_last_error(3) tells it ("CALL: cause"), or
 * "CALL: naa_strerror(code)" where there is none. */
class error : public std::runtime_error {
 public:
  error(int code, const char *call, const naa_status &status = naa_status{},
        const std::string &cause = std::string())
      : std::runtime_error(cause.empty() ? std::string(call) + ": " + naa_strerror(code) : cause),
        code_(code),
        status_(status) {}

  naa_error_t code() const noexcept { return static_cast<naa_error_t>(code_); }
  /* Filled when code() is NAA_ERR_NAA: status().naa_return_code is what the NAA reported. */
  const naa_status &status() const noexcept { return status_; }

 private:
  int code_;
  naa_status status_;
};

/* A non-owning view of one parameter buffer of arithmetic elements, like std::span: the memory
 * must stay valid (and, for a vector, unreallocated) as long as the handle using it lives.
 * Built from pointer + count or from any contiguous container (std::vector, std::array,
 * C array). A view of const elements may only be an input. */
class buffer {
 public:
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  buffer(T *data, std::size_t count) noexcept
      : param_{const_cast<std::remove_const_t<T> *>(data), count * sizeof(T), false},
        read_only_(std::is_const_v<T>) {}

  // Taking C& rather than C&& keeps temporaries out: their memory would be gone by invoke().
  template <class C,
            class = decltype(std::data(std::declval<C &>()) + std::size(std::declval<C &>()))>
  buffer(C &container) noexcept : buffer(std::data(container), std::size(container)) {}

  /* The same buffer sent with the first invoke() only; the NAA keeps it (naa_create(3)). */
  buffer single_send() const noexcept {
    buffer b = *this;
    b.param_.single_send = true;
    return b;
  }

  const naa_param_t &param() const noexcept { return param_; }
  bool read_only() const noexcept { return read_only_; }

 private:
  naa_param_t param_;
  bool read_only_;
};

/* One naa_handle, finalized by the destructor. Move-only: two owners would finalize twice. */
class handle {
 public:
  handle(std::uint32_t function_code, std::initializer_list<buffer> inputs,
         std::initializer_list<buffer> outputs)
      : handle(function_code, inputs.begin(), inputs.size(), outputs.begin(), outputs.size(),
               nullptr) {}
  handle(std::uint32_t function_code, const std::vector<buffer> &inputs,
         const std::vector<buffer> &outputs)
      : handle(function_code, inputs.data(), inputs.size(), outputs.data(), outputs.size(),
               nullptr) {}
  /* With per-handle settings instead of the environment's: naa_create_attr(3). */
  handle(std::uint32_t function_code, std::initializer_list<buffer> inputs,
         std::initializer_list<buffer> outputs, const naa_attr_t &attr)
      : handle(function_code, inputs.begin(), inputs.size(), outputs.begin(), outputs.size(),
               &attr) {}
  handle(std::uint32_t function_code, const std::vector<buffer> &inputs,
         const std::vector<buffer> &outputs, const naa_attr_t &attr)
      : handle(function_code, inputs.data(), inputs.size(), outputs.data(), outputs.size(), &attr) {
  }

  handle(handle &&other) noexcept : h_(std::exchange(other.h_, NAA_HANDLE_NULL)) {}
  handle &operator=(handle &&other) noexcept {
    if (this != &other) {
      release();
      h_ = std::exchange(other.h_, NAA_HANDLE_NULL);
    }
    return *this;
  }
  handle(const handle &) = delete;
  handle &operator=(const handle &) = delete;
  ~handle() { release(); }

  void invoke() { check(naa_invoke(&h_), "naa_invoke"); }

  /* The status once the invocation has completed, std::nullopt while it runs. */
  std::optional<naa_status> test() {
    bool done = false;
    naa_status st{};
    check(naa_test(&h_, &done, &st), "naa_test", st);
    return done ? std::optional<naa_status>(st) : std::nullopt;
  }

  naa_status wait() {
    naa_status st{};
    check(naa_wait(&h_, &st), "naa_wait", st);
    return st;
  }

  /* Abandons the invocation in flight (naa_cancel(3)); the handle stays usable. */
  void cancel() { check(naa_cancel(&h_), "naa_cancel"); }

  /* Finalizes now and reports a failure, which the destructor cannot. */
  void finalize() { check(naa_finalize(&h_), "naa_finalize"); }

  /* The C handle, for calls this layer does not wrap; it stays owned by *this. */
  naa_handle native() const noexcept { return h_; }
  explicit operator bool() const noexcept { return h_.id != 0; }

 private:
  handle(std::uint32_t function_code, const buffer *in, std::size_t n_in, const buffer *out,
         std::size_t n_out, const naa_attr_t *attr) {
    std::vector<naa_param_t> inputs, outputs;
    for (std::size_t i = 0; i < n_in; i++) inputs.push_back(in[i].param());
    for (std::size_t i = 0; i < n_out; i++) {
      // The NAA writes every output: a const one would be modified behind the compiler's back.
      if (out[i].read_only())
        throw error(NAA_ERR_INVALID_ARGUMENT, "naa::handle (output buffer of const elements)");
      outputs.push_back(out[i].param());
    }
    if (attr == nullptr)
      check(naa_create(function_code, inputs.data(), inputs.size(), outputs.data(), outputs.size(),
                       &h_),
            "naa_create");
    else
      check(naa_create_attr(function_code, inputs.data(), inputs.size(), outputs.data(),
                            outputs.size(), attr, &h_),
            "naa_create_attr");
  }

  static void check(int rc, const char *call, const naa_status &st = naa_status{}) {
    if (rc == NAA_SUCCESS) return;
    char cause[512];
    (void)naa_last_error(nullptr, cause, sizeof cause);  // this thread's failure: the call's
    throw error(rc, call, st, cause);
  }

  // Destructors must not throw; a failing finalize has already released what it could.
  void release() noexcept {
    if (*this) (void)naa_finalize(&h_);
  }

  naa_handle h_ = NAA_HANDLE_NULL;
};

/* Completion over many handles, as naa_waitall(3)/naa_waitany(3); a handle with nothing in
 * flight is inactive. wait_all returns each handle's status (zeroed for inactive ones) and
 * throws the first failed handle's error; wait_any returns the index of a completed handle and
 * its status, std::nullopt if none was active. */
inline std::vector<naa_status> wait_all(std::initializer_list<std::reference_wrapper<handle>> hs) {
  std::vector<naa_handle> natives;
  for (handle &h : hs) natives.push_back(h.native());
  std::vector<naa_status> statuses(natives.size());
  const int rc = naa_waitall(static_cast<int>(natives.size()), natives.data(), statuses.data());
  if (rc == NAA_SUCCESS) return statuses;
  char cause[512];
  (void)naa_last_error(nullptr, cause, sizeof cause);
  for (const naa_status &st : statuses)
    if (rc == NAA_ERR_IN_STATUS && st.error != NAA_SUCCESS)
      throw error(st.error, "naa_waitall", st, cause);
  throw error(rc, "naa_waitall", naa_status{}, cause);
}

inline std::optional<std::pair<std::size_t, naa_status>> wait_any(
    std::initializer_list<std::reference_wrapper<handle>> hs) {
  std::vector<naa_handle> natives;
  for (handle &h : hs) natives.push_back(h.native());
  int index = NAA_UNDEFINED;
  naa_status st{};
  const int rc = naa_waitany(static_cast<int>(natives.size()), natives.data(), &index, &st);
  if (rc != NAA_SUCCESS) {
    char cause[512];
    (void)naa_last_error(nullptr, cause, sizeof cause);
    throw error(rc, "naa_waitany", st, cause);
  }
  if (index == NAA_UNDEFINED) return std::nullopt;
  return std::make_pair(static_cast<std::size_t>(index), st);
}

/* naa_attr_t built by name, keeping the strings it points to:
 *   naa::handle h(10, {a, b}, {c}, naa::attr().naa("10.0.0.7:12345").timeout_ms(5000));
 * (timeout_ms, connect_timeout_ms and reconnect as NAA_TIMEOUT, NAA_CONNECT_TIMEOUT and
 * NAA_RECONNECT; a cancelled or lost invocation: handle::cancel, naa_cancel(3)).
 * A field not set falls back to its environment variable, as in naa_create_attr(3). */
class attr {
 public:
  attr() = default;
  attr(const attr &) = delete;  // the struct points into this object
  attr &operator=(const attr &) = delete;
  attr &naa(std::string v) { return text(naa_, std::move(v), &a_.naa); }
  attr &transport(std::string v) { return text(transport_, std::move(v), &a_.transport); }
  attr &progress(std::string v) { return text(progress_, std::move(v), &a_.progress); }
  attr &auth_key(std::string v) { return text(auth_key_, std::move(v), &a_.auth_key); }
  attr &local_ip(std::string v) { return text(local_ip_, std::move(v), &a_.local_ip); }
  attr &device(std::string v) { return text(device_, std::move(v), &a_.device); }
  attr &timeout_ms(std::int64_t v) {
    a_.timeout_ms = v;
    return *this;
  }
  attr &connect_timeout_ms(std::int64_t v) {
    a_.connect_timeout_ms = v;
    return *this;
  }
  attr &reconnect(std::int64_t attempts) {
    a_.reconnect = attempts;
    return *this;
  }
  attr &pacing_us(std::int64_t v) {
    a_.pacing_us = v;
    return *this;
  }
  /* Any runtime parameter of naa(7), as "NAME=value". */
  attr &param(std::string name_value) {
    params_.push_back(std::move(name_value));
    return *this;
  }
  operator const naa_attr_t &() {
    param_ptrs_.clear();
    for (const std::string &p : params_) param_ptrs_.push_back(p.c_str());
    param_ptrs_.push_back(nullptr);
    a_.params = params_.empty() ? nullptr : param_ptrs_.data();
    return a_;
  }

 private:
  attr &text(std::optional<std::string> &keep, std::string v, const char **field) {
    keep = std::move(v);
    *field = keep->c_str();
    return *this;
  }
  naa_attr_t a_ = NAA_ATTR_INIT;
  std::optional<std::string> naa_, transport_, progress_, auth_key_, local_ip_, device_;
  std::vector<std::string> params_;
  std::vector<const char *> param_ptrs_;
};

}  // namespace naa

#endif /* NAA_HPP */
