/* SPDX-License-Identifier: BSD-3-Clause */
/* LD_PRELOAD for answer_then_disconnect.sh: the first rdma_get_cm_event after the process's
 * connection is established is held until its channel has an event (the peer's disconnect),
 * then returns it. The CQ poll that came just before that call found nothing, so whatever the
 * peer sent before it disconnected lands in between: the order a client preempted between its
 * poll and its look at the channel meets on a loaded machine. Prints to stderr
 * "hold_cm_event: nothing pending when held; held for EVENT" (or "an event was pending"), and
 * "hold_cm_event: passed EVENT" for each event it did not hold. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>

static int established;
static int held;

int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event) {
  static int (*real)(struct rdma_event_channel *, struct rdma_cm_event **);
  if (real == NULL) *(void **)&real = dlsym(RTLD_NEXT, "rdma_get_cm_event");
  if (__atomic_load_n(&established, __ATOMIC_ACQUIRE) &&
      !__atomic_exchange_n(&held, 1, __ATOMIC_ACQ_REL)) {
    struct pollfd p = {channel->fd, POLLIN, 0};
    const int pending = poll(&p, 1, 0) > 0;
    poll(&p, 1, 30000);
    const int rc = real(channel, event);
    fprintf(stderr, "hold_cm_event: %s; held for %s\n",
            pending ? "an event was pending" : "nothing pending when held",
            rc == 0 ? rdma_event_str((*event)->event) : "no event");
    return rc;
  }
  const int rc = real(channel, event);
  if (rc == 0) fprintf(stderr, "hold_cm_event: passed %s\n", rdma_event_str((*event)->event));
  if (rc == 0 && (*event)->event == RDMA_CM_EVENT_ESTABLISHED)
    __atomic_store_n(&established, 1, __ATOMIC_RELEASE);
  return rc;
}
