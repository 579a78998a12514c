// bench/spawn_floor.cpp — the bare process spawn that `queuectl work` is measured against.
//
//   spawn_floor N P COMMAND    runs COMMAND (no arguments, an absolute path) N times, at most
//                              P at a time, and exits 0 when every run exited 0
//
// Each child starts with posix_spawn, which glibc makes with clone(CLONE_VM | CLONE_VFORK):
// the parent's page tables are neither copied nor torn down, as in queuectl's own children
// (src/core/subprocess.cpp). `xargs -P`, the floor used before, forks: on a machine where
// copying page tables is slow it was slower than the worker it was meant to bound. Nothing
// else is done per child (no pipes, no process group), so this is as cheap as starting a
// process from a program gets.
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern char** environ;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: spawn_floor N P COMMAND\n");
    return 2;
  }
  const long total = std::strtol(argv[1], nullptr, 10);
  const long at_once = std::strtol(argv[2], nullptr, 10);
  if (total < 0 || at_once < 1) {
    std::fprintf(stderr, "spawn_floor: N must be >= 0 and P >= 1\n");
    return 2;
  }
  char* child_argv[] = {argv[3], nullptr};
  long started = 0, running = 0, failed = 0;
  while (started < total || running > 0) {
    while (running < at_once && started < total) {
      pid_t pid = 0;
      const int error = posix_spawn(&pid, argv[3], nullptr, nullptr, child_argv, environ);
      if (error != 0) {
        std::fprintf(stderr, "spawn_floor: cannot start %s: %s\n", argv[3], std::strerror(error));
        return 1;
      }
      ++started;
      ++running;
    }
    int status = 0;
    const pid_t pid = wait(&status);
    if (pid < 0) {
      if (errno == EINTR) continue;
      std::perror("spawn_floor: wait");
      return 1;
    }
    --running;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  if (failed > 0) {
    std::fprintf(stderr, "spawn_floor: %ld of %ld runs failed\n", failed, total);
    return 1;
  }
  return 0;
}
