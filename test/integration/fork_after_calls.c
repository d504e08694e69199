/* SPDX-License-Identifier: BSD-3-Clause */
/* Client of trace_files.sh: 3 invocations of vecadd (function 10) through NAA_SPEC, then
 * fork(); the child exits at once through exit(3), which runs libnaa's exit handlers; the
 * parent waits for it, makes 2 more invocations and finalizes. Prints "child PID" first. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "naa.h"

static int invoke(naa_handle *h) {
  naa_status st;
  return naa_invoke(h) == NAA_SUCCESS && naa_wait(h, &st) == NAA_SUCCESS ? 0 : 1;
}

int main(void) {
  double a[64] = {0}, b[64] = {0}, c[64];
  naa_param_t in[2] = {{a, sizeof a, false}, {b, sizeof b, false}}, out[1] = {{c, sizeof c, false}};
  naa_handle h = NAA_HANDLE_NULL;
  if (naa_create(10, in, 2, out, 1, &h) != NAA_SUCCESS) return 1;
  for (int i = 0; i < 3; i++)
    if (invoke(&h)) return 1;
  fflush(stdout);
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) exit(0);
  printf("child %d\n", (int)child);
  int status;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return 1;
  for (int i = 0; i < 2; i++)
    if (invoke(&h)) return 1;
  return naa_finalize(&h) == NAA_SUCCESS ? 0 : 1;
}
