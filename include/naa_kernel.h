/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * naa_kernel.h - the kernel ABI of naa-server, libnaa's software NAA.
 *
 * A host offloads an invocation by writing its parameter regions to the NAA and
 * naming a function code (1..127). naa-server looks the code up among its
 * kernels, runs the kernel on its copies of the regions, and writes the output
 * regions back together with the kernel's return code. Besides its built-in
 * kernels the server loads kernels from plugins: shared objects that export a
 * table of naa_kernel entries.
 *
 * Writing a plugin (C; C++ works the same, the declaration below gives the table
 * function C linkage):
 *
 *   #include <naa_kernel.h>
 *
 *   static uint8_t invert(const naa_kernel_region *regions, size_t n_regions,
 *                         uint32_t user_data)
 *   {
 *     (void)user_data;
 *     for (size_t r = 0; r < n_regions; r++) {
 *       uint8_t *bytes = regions[r].addr;
 *       if (regions[r].flags & NAA_REGION_OUTPUT)
 *         for (size_t i = 0; i < regions[r].size; i++) bytes[i] = (uint8_t)~bytes[i];
 *     }
 *     return 0;
 *   }
 *
 *   static const naa_kernel kernels[] = {{100, "invert", invert}};
 *
 *   const naa_kernel *naa_kernel_table(unsigned *abi_version, size_t *count)
 *   {
 *     *abi_version = NAA_KERNEL_ABI_VERSION;
 *     *count = sizeof kernels / sizeof kernels[0];
 *     return kernels;
 *   }
 *
 * Building and loading it:
 *
 *   gcc -shared -fPIC -o libk.so k.c
 *   naa-server --kernel ./libk.so
 *
 * The server refuses a plugin whose ABI version differs from its own, and a
 * plugin entry whose function code is outside 1..127 or already taken (by a
 * built-in kernel or an earlier plugin); nothing of a refused plugin is
 * registered. A plugin stays loaded until the server exits, so the names in its
 * table may point to string literals.
 *
 * The header is C99 and C++ compatible.
 */
#ifndef NAA_KERNEL_H
#define NAA_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Raised on every incompatible change of anything in this header. */
#define NAA_KERNEL_ABI_VERSION 1

/* Region flags, same values as the wire protocol (MRSP). A SINGLE_SEND region is
 * also INPUT: the host sends it on the first invocation only and the server keeps
 * its contents, including any change a kernel makes to it, for later invocations. */
#define NAA_REGION_SINGLE_SEND 0x02
#define NAA_REGION_INPUT 0x04
#define NAA_REGION_OUTPUT 0x08

/* One parameter region as the server holds it. Only OUTPUT regions travel back to
 * the host. addr carries no alignment promise: a kernel reading wider types than
 * bytes copies them out with memcpy (which compilers turn into plain loads) or
 * checks the alignment itself. */
typedef struct naa_kernel_region {
  void *addr;
  size_t size;
  uint8_t flags; /* NAA_REGION_* */
} naa_kernel_region;

/* A kernel computes in place on the server's copies of all parameter regions,
 * given in region-index order (host parameter order: inputs first, then outputs
 * that are not also inputs; an in-place region has INPUT|OUTPUT). It must stay
 * within [addr, addr + size) of each region: the sizes come from the host and are
 * not to be trusted.
 *
 * It returns 0 on success or an application code 0x10..0x7d, which the host sees
 * as the invocation's return code. user_data is the upper 24 bits of the host's
 * immediate, shifted down (the immediate V gives V >> 8; 0 from libnaa).
 *
 * The server may run kernels for several connections at the same time, so a
 * kernel must be reentrant. */
typedef uint8_t (*naa_kernel_fn)(const naa_kernel_region *regions, size_t n_regions,
                                 uint32_t user_data);

typedef struct naa_kernel {
  uint8_t function_code; /* 1..127, unique within the server */
  const char *name;      /* for logs and listings; static storage (a string literal) */
  naa_kernel_fn run;
} naa_kernel;

/* A plugin shared object exports this symbol, a function of type
 * naa_kernel_table_fn. The server stores its own NAA_KERNEL_ABI_VERSION in
 * *abi_version before the call, so that a plugin may serve several versions; the
 * plugin overwrites it with the version its table follows and stores the number
 * of entries in *count. The server copies the entries during load. */
#define NAA_KERNEL_TABLE_SYMBOL "naa_kernel_table"
typedef const naa_kernel *(*naa_kernel_table_fn)(unsigned *abi_version, size_t *count);

/* Declared so that a plugin's definition is checked against the ABI and, in C++,
 * gets C linkage; the server itself only looks the symbol up. */
#if defined(__GNUC__)
__attribute__((visibility("default")))
#endif
const naa_kernel *
naa_kernel_table(unsigned *abi_version, size_t *count);

/* Application return codes used by the built-in kernels. */
#define NAA_KERNEL_RC_BAD_LAYOUT 0x10 /* wrong number/kind of regions */
#define NAA_KERNEL_RC_BAD_SIZE 0x11   /* sizes inconsistent or not a multiple of the element */
/* 0x7e and 0x7f are reserved: naa-server answers 0x7e when an isolated kernel crashed (its
 * worker process died) and 0x7f for an unknown function code; 0x02 is the protocol's "kernel
 * timeout", answered when an isolated kernel overran naa-server's --kernel-timeout. */
#define NAA_KERNEL_RC_TIMEOUT 0x02
#define NAA_KERNEL_RC_CRASHED 0x7e
#define NAA_KERNEL_RC_UNKNOWN_FUNCTION 0x7f

#ifdef __cplusplus
}
#endif

#endif /* NAA_KERNEL_H */
