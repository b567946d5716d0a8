// node_hog: holds memory on one NUMA node for the VM tests' "node 0 full" case, as a process the
// kernel's OOM killer picks first (oom_score_adj 1000 by default). Should something push node 0
// to its min watermark, the kernel kills the hog instead of the workload or the test's shell, which
// frees the hog's memory and keeps the guest alive, and the test sees the OOM kill in dmesg.
//
// Build: gcc -static -O2 -o node_hog node_hog.c
// Usage: node_hog --node N --mib M [--oom-score-adj A]
// Output: "HOG pid=P node=N mib=M" once every page is touched; then it sleeps until SIGTERM or
// SIGINT and exits 0. Exit 2 on bad usage or a failed system call.
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MPOL_BIND 2

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

static int fail(const char *what) {
  fprintf(stderr, "node_hog: %s: %s\n", what, strerror(errno));
  return 2;
}

int main(int argc, char **argv) {
  long node = -1, mib = 0, adj = 1000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--node")) node = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--mib")) mib = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--oom-score-adj")) adj = atol(argv[i + 1]);
    else node = -2;
  }
  if (argc % 2 == 0 || node < 0 || node > 63 || mib < 1 || adj < -1000 || adj > 1000) {
    fprintf(stderr, "usage: node_hog --node N --mib M [--oom-score-adj A]\n");
    return 2;
  }
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  FILE *f = fopen("/proc/self/oom_score_adj", "w");
  if (!f || fprintf(f, "%ld\n", adj) < 0 || fclose(f)) return fail("/proc/self/oom_score_adj");
  unsigned long mask = 1UL << node;
  if (syscall(SYS_set_mempolicy, MPOL_BIND, &mask, 64)) return fail("set_mempolicy(MPOL_BIND)");
  size_t bytes = (size_t)mib << 20;
  char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return fail("mmap");
  madvise(p, bytes, MADV_NOHUGEPAGE);
  for (size_t off = 0; off < bytes; off += 4096) p[off] = 1;
  printf("HOG pid=%d node=%ld mib=%ld\n", getpid(), node, mib);
  fflush(stdout);
  while (!stop) pause();
  return 0;
}
