// move_pid: the raw baseline for tierkit's mover on another process's pages. Moves the given
// pages of process PID to one node with plain move_pages(2) calls of a fixed batch size, timed,
// and reports pages moved per second. tierkit's throughput is compared with this loop on the
// same pages of the same running process (tests/vm/bench/10-move-throughput.sh).
//
// Build: gcc -static -O2 -o move_pid move_pid.c
// Usage: move_pid PID ADDRS_FILE|0xSTART-0xEND --to NODE [--batch B]
// Output: "MOVE_PID pid=P pages=N batch=B to=NODE calls=C moved=M already=A failed=F seconds=S
//          cpu_seconds=T pages_per_s=R" (T: the loop's own user + system time) where already
//          counts pages that were on NODE before (the kernel reports
//          NODE for them too, so they count as moved), failed the rest [first_status=-errno].
// Exit 0 when the loop ran (some pages may have failed), 2 on bad usage or a failed call.
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL
#define MPOL_MF_MOVE (1 << 1)

static void **pages;
static size_t npages, cap;

static void add(unsigned long a) {
  if (npages == cap) {
    cap = cap ? cap * 2 : 4096;
    pages = realloc(pages, cap * sizeof *pages);
    if (!pages) {
      fprintf(stderr, "move_pid: out of memory for %zu addresses\n", cap);
      exit(2);
    }
  }
  pages[npages++] = (void *)(a & ~(PAGE - 1));
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// The node of each page before the move, to tell moved pages from ones already there.
static void query(int pid, int *status) {
  for (size_t i = 0; i < npages; i += 4096) {
    size_t n = npages - i < 4096 ? npages - i : 4096;
    if (syscall(SYS_move_pages, pid, n, pages + i, NULL, status + i, 0) < 0) {
      fprintf(stderr, "move_pid: move_pages query (pid %d): %s\n", pid, strerror(errno));
      exit(2);
    }
  }
}

int main(int argc, char **argv) {
  static const char usage[] = "usage: move_pid PID ADDRS_FILE|0xSTART-0xEND --to NODE [--batch B]\n";
  if (argc < 5) {
    fputs(usage, stderr);
    return 2;
  }
  int pid = atoi(argv[1]), to = -1;
  long batch = 512;
  for (int i = 3; i < argc; i++) {
    if (i + 1 < argc && !strcmp(argv[i], "--to")) to = atoi(argv[++i]);
    else if (i + 1 < argc && !strcmp(argv[i], "--batch")) batch = atol(argv[++i]);
    else {
      fputs(usage, stderr);
      return 2;
    }
  }
  if (pid <= 0 || to < 0 || batch < 1) {
    fputs(usage, stderr);
    return 2;
  }
  unsigned long start, end;
  char dash;
  if (sscanf(argv[2], "0x%lx%c0x%lx", &start, &dash, &end) == 3 && dash == '-' && start < end) {
    for (unsigned long a = start; a < end; a += PAGE) add(a);
  } else {
    FILE *f = fopen(argv[2], "r");
    if (!f) {
      fprintf(stderr, "move_pid: cannot open %s: %s\n", argv[2], strerror(errno));
      return 2;
    }
    char line[128];
    while (fgets(line, sizeof line, f))
      if (line[0] != '\n' && line[0] != '#') add(strtoul(line, NULL, 0));
    fclose(f);
  }
  if (!npages) {
    fprintf(stderr, "move_pid: no pages given\n");
    return 2;
  }
  int *nodes = malloc(npages * sizeof *nodes), *status = malloc(npages * sizeof *status);
  int *before = malloc(npages * sizeof *before);
  if (!nodes || !status || !before) {
    fprintf(stderr, "move_pid: out of memory for %zu pages\n", npages);
    return 2;
  }
  query(pid, before);
  for (size_t i = 0; i < npages; i++) nodes[i] = to;
  long calls = 0, moved = 0, already = 0, failed = 0;
  int first_err = 0;
  struct rusage r0, r1;
  getrusage(RUSAGE_SELF, &r0);
  double t0 = now();
  for (size_t i = 0; i < npages; i += batch) {
    size_t n = npages - i < (size_t)batch ? npages - i : (size_t)batch;
    if (syscall(SYS_move_pages, pid, n, pages + i, nodes + i, status + i, MPOL_MF_MOVE) < 0) {
      fprintf(stderr, "move_pid: move_pages (pid %d) to node %d: %s\n", pid, to, strerror(errno));
      return 2;
    }
    calls++;
  }
  double dt = now() - t0;
  getrusage(RUSAGE_SELF, &r1);
  double cpu = (r1.ru_utime.tv_sec - r0.ru_utime.tv_sec + r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
               (r1.ru_utime.tv_usec - r0.ru_utime.tv_usec + r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) * 1e-6;
  for (size_t i = 0; i < npages; i++) {
    if (status[i] == to) {
      moved++;
      already += before[i] == to;
    } else if (failed++ == 0) {
      first_err = status[i];
    }
  }
  printf("MOVE_PID pid=%d pages=%zu batch=%ld to=%d calls=%ld moved=%ld already=%ld failed=%ld seconds=%.3f "
         "cpu_seconds=%.3f pages_per_s=%.0f",
         pid, npages, batch, to, calls, moved, already, failed, dt, cpu, (moved - already) / dt);
  if (failed) printf(" first_status=%d", first_err);
  printf("\n");
  return 0;
}
