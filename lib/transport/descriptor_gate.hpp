// SPDX-License-Identifier: BSD-3-Clause
// One lock over the steps of this process that take file descriptors in bulk and the one that
// must not run out of them. libfabric 1.17's shm provider crashes inside fi_cq_read when a new
// peer's request arrives while no descriptor is left to map that peer, and it dies holding its
// region's lock, on which every later sender to that region spins for ever. The shm listener
// therefore reads its queue, and a shm endpoint sends its control messages (the first send
// to a peer maps the peer's region), only while descriptors are spare; the tcp listener's
// accepts take one per connection. All of these run under this lock, so that no accept falls
// between a count and the step it allows (one did: test_hostile's flood of idle connections
// on a loaded machine). Private to lib/transport.
#pragma once

#include <cstddef>
#include <mutex>

namespace naa::transport::ofi_detail {

std::mutex &descriptor_gate();

// What a shm step may open (a new peer's region, a request's fresh endpoint), with room to
// spare.
inline constexpr size_t kSpareDescriptors = 16;

// Whether this process can still open `count` descriptors. Call it holding the gate.
bool descriptors_spare(size_t count);

}  // namespace naa::transport::ofi_detail
