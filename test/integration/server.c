/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

const char *test_host(void) {
  const char *host = getenv("NAA_TEST_HOST");
  return host != NULL && *host != '\0' ? host : "127.0.0.1";
}

static int start(test_server *s, const char *binary_variable, const char *const *extra, int logged);

int test_server_start(test_server *s, const char *const *extra) {
  return start(s, "NAA_SERVER", extra, 0);
}

int test_server_start_logged(test_server *s, const char *const *extra) {
  return start(s, "NAA_SERVER", extra, 1);
}

int test_peer_start(test_server *s, const char *binary_variable, const char *const *extra) {
  return start(s, binary_variable, extra, 0);
}

static int start(test_server *s, const char *binary_variable, const char *const *extra,
                 int logged) {
  const char *binary = getenv(binary_variable);
  s->log[0] = '\0';
  if (binary == NULL) {
    fprintf(stderr, "test_server: %s is not set (run through make check)\n", binary_variable);
    return -1;
  }
  strcpy(s->dir, "/tmp/naa-test-XXXXXX");
  if (mkdtemp(s->dir) == NULL) return -1;
  char ready[128];
  snprintf(ready, sizeof ready, "%s/port", s->dir);

  const int port = test_port();
  if (port < 0) {
    fprintf(stderr, "test_server: no port for %s\n", binary_variable);
    return -1;
  }
  char port_text[16];
  snprintf(port_text, sizeof port_text, "%d", port);
  const char *argv[32] = {binary,    "--address",    test_host(), "--port",
                          port_text, "--ready-file", ready};
  int argc = 7;
  for (; extra != NULL && *extra != NULL && argc < 31; extra++) argv[argc++] = *extra;
  argv[argc] = NULL;

  /* A logged server's environment, made before the fork (the child only execs): ours with
   * NAA_LOG_LEVEL=debug. */
  size_t n_env = 0;
  while (environ[n_env] != NULL) n_env++;
  char **env = calloc(n_env + 2, sizeof *env);
  if (env == NULL) return -1;
  size_t k = 0;
  for (size_t i = 0; i < n_env; i++)
    if (!logged || strncmp(environ[i], "NAA_LOG_LEVEL=", 14) != 0) env[k++] = environ[i];
  static char debug[] = "NAA_LOG_LEVEL=debug";
  if (logged) env[k++] = debug;
  int log_fd = -1;
  if (logged) {
    snprintf(s->log, sizeof s->log, "%s/log", s->dir);
    log_fd = open(s->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (log_fd < 0) {
      free(env);
      return -1;
    }
  }

  const pid_t parent = getpid();
  s->pid = fork();
  if (s->pid == 0) {
    /* A failed cmocka assertion longjmps past the test's test_server_stop: the server must
     * not outlive the test (a failed CI run left three serving for hours). */
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent) _exit(127);
    if (log_fd >= 0 && dup2(log_fd, STDERR_FILENO) < 0) _exit(127);
    execve(binary, (char *const *)argv, env);
    _exit(127);
  }
  free(env);
  if (log_fd >= 0) close(log_fd);
  if (s->pid < 0) return -1;
  for (int waited = 0; waited < 60000; waited += 10) { /* 60 s: a loaded CI, or TCG in rdma-vm */
    FILE *f = fopen(ready, "r");
    if (f != NULL) {
      int ok = fscanf(f, "%d", &s->port) == 1;
      fclose(f);
      if (ok) return 0;
    }
    int status;
    if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
      fprintf(stderr, "test_server: naa-server exited before it was ready\n");
      return -1;
    }
    sleep_ms(10);
  }
  fprintf(stderr, "test_server: naa-server not ready after 60 s\n");
  test_server_kill(s);
  return -1;
}

/* A logged server's log goes to our standard error (the test's log) before it is removed. */
static void cleanup_dir(test_server *s) {
  char path[128];
  snprintf(path, sizeof path, "%s/port", s->dir);
  unlink(path);
  if (s->log[0] != '\0') {
    FILE *f = fopen(s->log, "r");
    if (f != NULL) {
      fprintf(stderr, "--- the log of naa-server (%s):\n", s->log);
      char buf[4096];
      for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) fwrite(buf, 1, n, stderr);
      fprintf(stderr, "--- end of the log of naa-server\n");
      fclose(f);
    }
    unlink(s->log);
    s->log[0] = '\0';
  }
  rmdir(s->dir);
}

int test_server_log_wait(const test_server *s, const char *text, int count, double seconds,
                         char *line, size_t size) {
  const long limit_ms = (long)(seconds * test_time_scale() * 1000);
  int found = 0;
  for (long waited = 0;; waited += 10) {
    FILE *f = s->log[0] != '\0' ? fopen(s->log, "r") : NULL;
    if (f == NULL) return 0;
    char text_line[1024];
    found = 0;
    while (fgets(text_line, sizeof text_line, f) != NULL)
      if (strstr(text_line, text) != NULL && ++found == count && line != NULL)
        snprintf(line, size, "%s", text_line);
    fclose(f);
    if (found >= count || waited >= limit_ms) return found;
    sleep_ms(10);
  }
}

int test_server_stop(test_server *s) {
  if (s->pid <= 0) return -1;
  kill(s->pid, SIGTERM);
  int status = 0;
  for (int waited = 0; waited < 10000; waited += 10) {
    if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
      s->pid = 0;
      cleanup_dir(s);
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    sleep_ms(10);
  }
  test_server_kill(s);
  return -1;
}

void test_server_kill(test_server *s) {
  if (s->pid <= 0) return;
  kill(s->pid, SIGKILL);
  waitpid(s->pid, NULL, 0);
  s->pid = 0;
  cleanup_dir(s);
}

void test_timeout_default(void) {
  static long given = -1; /* the environment's, read at the first call */
  if (given < 0) given = getenv("NAA_TIMEOUT") != NULL ? atol(getenv("NAA_TIMEOUT")) : 0;
  long seconds = (long)(30 * test_time_scale());
  if (given > seconds) seconds = given;
  char timeout[24];
  snprintf(timeout, sizeof timeout, "%ld", seconds);
  setenv("NAA_TIMEOUT", timeout, 1);
}

int test_server_start_shared(test_server *s) {
  test_timeout_default();
  return test_server_start(s, NULL);
}

void test_server_use(const test_server *s, unsigned fncode, unsigned n_inputs) {
  char spec[128];
  snprintf(spec, sizeof spec, "%s:%d:%u:%u", test_host(), s->port, fncode, n_inputs);
  setenv("NAA_SPEC", spec, 1);
}

/* The ports test_port hands out: below the ephemeral range, or above it where too few lie
 * below. */
static int port_range(int *first, int *count) {
  int low = 32768, high = 60999;
  FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
  if (f != NULL) {
    if (fscanf(f, "%d %d", &low, &high) != 2) low = 32768, high = 60999;
    fclose(f);
  }
  enum { kLowest = 1024, kWanted = 12000, kEnough = 2000 };
  if (low - kLowest >= kEnough) {
    *first = low - kWanted > kLowest ? low - kWanted : kLowest;
    *count = low - *first;
  } else if (65535 - high >= kEnough) {
    *first = high + 1;
    *count = 65535 - high;
  } else {
    return -1;
  }
  return 0;
}

/* Whether a listener could bind `port` on test_host() now (without SO_REUSEADDR, as strict as
 * any server's bind). */
static int bindable(int port) {
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, test_host(), &addr.sin_addr) != 1)
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  const int ok = bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0;
  close(fd);
  return ok;
}

int test_port(void) {
  int first, count;
  if (port_range(&first, &count) != 0) return -1;
  const char *tmp = getenv("TMPDIR");
  char path[256];
  snprintf(path, sizeof path, "%s/naa-test-ports-%u", tmp != NULL && *tmp != '\0' ? tmp : "/tmp",
           (unsigned)getuid());
  const int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0 || flock(fd, LOCK_EX) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  char text[32] = {0};
  const ssize_t n = pread(fd, text, sizeof text - 1, 0);
  long next = n > 0 ? atol(text) : 0;
  int port = -1;
  for (int tried = 0; tried < 100 && port < 0; ++tried, ++next) {
    const int candidate = first + (int)(next % count);
    if (bindable(candidate)) port = candidate;
  }
  const int len = snprintf(text, sizeof text, "%ld\n", next % count);
  if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)len, 0) != len) port = -1;
  close(fd); /* and with it the lock */
  return port;
}

double test_time_scale(void) {
  const char *v = getenv("NAA_TEST_TIME_SCALE");
  double f = v != NULL ? atof(v) : 1;
  return f >= 1 ? f : 1;
}

pid_t test_spawn_self(char *const argv[], int *to_child, FILE **from_child) {
  int in[2], out[2];
  if (pipe(in) != 0) return -1;
  if (pipe(out) != 0) {
    close(in[0]);
    close(in[1]);
    return -1;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[0]);
    close(in[1]);
    close(out[0]);
    close(out[1]);
    execv("/proc/self/exe", argv);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  FILE *f = pid > 0 ? fdopen(out[0], "r") : NULL;
  if (f == NULL) {
    close(in[1]);
    close(out[0]);
    if (pid > 0) waitpid(pid, NULL, 0);
    return -1;
  }
  *to_child = in[1];
  *from_child = f;
  return pid;
}

pid_t test_thread_id(void) {
  return (pid_t)syscall(SYS_gettid);
}

long test_thread_syscall(pid_t tid) {
  return test_thread_syscall_args(tid, NULL);
}

long test_thread_syscall_args(pid_t tid, unsigned long args[3]) {
  char path[64], text[256];
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
  FILE *f = fopen(path, "r");
  if (f == NULL) return -2;
  long nr = -1;
  unsigned long a[3] = {0, 0, 0};
  if (fgets(text, sizeof text, f) == NULL ||
      sscanf(text, "%ld %lx %lx %lx", &nr, &a[0], &a[1], &a[2]) < 1)
    nr = -1;
  fclose(f);
  if (args != NULL) memcpy(args, a, sizeof a);
  return nr;
}
