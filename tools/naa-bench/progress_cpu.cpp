// SPDX-License-Identifier: BSD-3-Clause
#include "progress_cpu.hpp"

#include <dirent.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace naa::bench {

int64_t progress_thread_cpu_ns() {
  DIR *d = opendir("/proc/self/task");
  if (d == nullptr) return -1;
  int64_t ns = -1;
  for (dirent *e; ns < 0 && (e = readdir(d)) != nullptr;) {
    if (e->d_name[0] == '.') continue;
    const std::string task = std::string("/proc/self/task/") + e->d_name;
    char name[32] = "";
    if (FILE *f = std::fopen((task + "/comm").c_str(), "r")) {
      if (std::fgets(name, sizeof name, f) == nullptr) name[0] = '\0';
      std::fclose(f);
    }
    if (std::strcmp(name, "naa-progress\n") != 0) continue;
    if (FILE *f = std::fopen((task + "/schedstat").c_str(), "r")) {
      long long run = 0;
      if (std::fscanf(f, "%lld", &run) == 1) ns = run;
      std::fclose(f);
    }
  }
  closedir(d);
  return ns;
}

}  // namespace naa::bench
