// SPDX-License-Identifier: BSD-3-Clause
// fi_connect_floor: what a connection costs libfabric itself, beside which naa_create's warm
// setup is read (doc/performance.md), as fi_pingpong is the floor of a round trip. A client
// opens a MSG endpoint, connects, and exchanges one 8-byte message each way (naa_create's
// MRSP request and answer), then closes; the server accepts and answers, one client after
// another, on one thread. Both poll without sleeping; the fabric, domain, EQ and CQ are opened
// once per process (a libnaa client keeps them in its transport Context too), so what is
// timed is libfabric's and the kernel's work per connection.
//
//   fi_connect_floor -s PORT [PROVIDER]          server on 127.0.0.1 (PORT 0: any; the port
//                                                is printed), until killed
//   fi_connect_floor -c PORT COUNT [PROVIDER]    client: median, minimum, 90th percentile (us)
//
// PROVIDER: a libfabric provider with MSG endpoints (default tcp).
#define _GNU_SOURCE
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                            \
  do {                                                                         \
    int rc_ = (int)(call);                                                     \
    if (rc_ < 0) {                                                             \
      fprintf(stderr, "fi_connect_floor: %s: %s\n", #call, fi_strerror(-rc_)); \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

static struct fid_eq *eq;
static struct fid_cq *cq;
static char inbox[64], outbox[64];

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

// The next event `want` (a connection request carries its info in `entry`).
static void await_event(uint32_t want, struct fi_eq_cm_entry *entry) {
  for (;;) {
    uint32_t event = 0;
    ssize_t rc = fi_eq_read(eq, &event, entry, sizeof *entry, 0);
    if (rc == -FI_EAGAIN) {
      sched_yield();  // the peer may share this core
      continue;
    }
    if (rc < 0) {
      struct fi_eq_err_entry err = {0};
      fi_eq_readerr(eq, &err, 0);
      fprintf(stderr, "fi_connect_floor: event queue: %s\n", fi_strerror(err.err));
      exit(1);
    }
    if (event == want) return;
    if (event == FI_CONNREQ) fi_freeinfo(entry->info);
  }
}

static void await_completions(int count) {
  struct fi_cq_entry done[4];
  while (count > 0) {
    ssize_t rc = fi_cq_read(cq, done, 4);
    if (rc == -FI_EAGAIN) {
      sched_yield();
      continue;
    }
    if (rc < 0) {
      fprintf(stderr, "fi_connect_floor: completion queue: %s\n", fi_strerror((int)-rc));
      exit(1);
    }
    count -= (int)rc;
  }
}

static struct fid_ep *open_endpoint(struct fid_domain *domain, struct fi_info *info) {
  struct fid_ep *ep = NULL;
  CHECK(fi_endpoint(domain, info, &ep, NULL));
  CHECK(fi_ep_bind(ep, &eq->fid, 0));
  CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
  CHECK(fi_enable(ep));
  CHECK(fi_recv(ep, inbox, sizeof inbox, NULL, 0, NULL));
  return ep;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  const int server = argc >= 3 && strcmp(argv[1], "-s") == 0;
  const int client = argc >= 4 && strcmp(argv[1], "-c") == 0;
  if (!server && !client) {
    fprintf(stderr, "usage: fi_connect_floor -s PORT [PROVIDER] | -c PORT COUNT [PROVIDER]\n");
    return 2;
  }
  const char *provider = argc > (server ? 3 : 4) ? argv[server ? 3 : 4] : "tcp";
  struct fi_info *hints = fi_allocinfo(), *info = NULL;
  hints->ep_attr->type = FI_EP_MSG;
  hints->caps = FI_MSG;
  hints->fabric_attr->prov_name = strdup(provider);
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  CHECK(fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", argv[2], server ? FI_SOURCE : 0, hints, &info));
  struct fid_fabric *fabric = NULL;
  struct fid_domain *domain = NULL;
  CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
  struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_UNSPEC};
  CHECK(fi_eq_open(fabric, &eq_attr, &eq, NULL));
  CHECK(fi_domain(fabric, info, &domain, NULL));
  struct fi_cq_attr cq_attr = {
      .format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_NONE, .size = 64};
  CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
  char entry_space[sizeof(struct fi_eq_cm_entry) + 64];
  struct fi_eq_cm_entry *entry = (struct fi_eq_cm_entry *)entry_space;

  if (server) {
    struct fid_pep *pep = NULL;
    CHECK(fi_passive_ep(fabric, info, &pep, NULL));
    CHECK(fi_pep_bind(pep, &eq->fid, 0));
    CHECK(fi_listen(pep));
    struct sockaddr_in bound = {0};
    size_t bound_len = sizeof bound;
    CHECK(fi_getname(&pep->fid, &bound, &bound_len));
    printf("listening on port %u\n", (unsigned)ntohs(bound.sin_port));
    fflush(stdout);
    for (;;) {
      await_event(FI_CONNREQ, entry);
      struct fid_ep *ep = open_endpoint(domain, entry->info);
      CHECK(fi_accept(ep, NULL, 0));
      fi_freeinfo(entry->info);
      await_event(FI_CONNECTED, entry);
      await_completions(1);  // the request
      CHECK(fi_send(ep, outbox, 8, NULL, 0, NULL));
      await_completions(1);  // the answer is in the socket: the close does not lose it
      fi_close(&ep->fid);
    }
  }

  const int count = atoi(argv[3]);
  double *took = count > 0 ? calloc((size_t)count, sizeof *took) : NULL;
  if (took == NULL) return 2;
  for (int i = 0; i < count; ++i) {
    const double start = now_us();
    struct fid_ep *ep = open_endpoint(domain, info);
    CHECK(fi_connect(ep, info->dest_addr, NULL, 0));
    await_event(FI_CONNECTED, entry);
    CHECK(fi_send(ep, outbox, 8, NULL, 0, NULL));
    await_completions(2);  // the send and the answer
    took[i] = now_us() - start;
    fi_shutdown(ep, 0);
    fi_close(&ep->fid);
  }
  qsort(took, (size_t)count, sizeof *took, by_value);
  printf("%s connection + one exchange, %d: median %.1f us, min %.1f, p90 %.1f\n", provider, count,
         took[count / 2], took[0], took[count * 9 / 10]);
  free(took);
  fi_close(&cq->fid);
  fi_close(&domain->fid);
  fi_close(&eq->fid);
  fi_close(&fabric->fid);
  fi_freeinfo(info);
  fi_freeinfo(hints);
  return 0;
}
