// raw_move: the baseline for tierkit's move_pages throughput. Moves N 4 KiB pages of its own
// buffer node A -> node B -> node A with plain move_pages(2) calls of a given batch size and
// reports pages moved per second; the buffer's contents are verified at the end.
//
// Build: gcc -static -O2 -o raw_move raw_move.c
// Usage: raw_move [--pages N] [--batch B] [--rounds R] [--from A] [--to B] [--thp]
// Output: "RAW_MOVE pages=N batch=B rounds=R moved=M failed=F seconds=S pages_per_s=P data=ok|bad"
// Exit 0 when every page moved and the data is intact, 1 otherwise, 2 on bad usage or errors.
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL
#define MPOL_MF_MOVE (1 << 1)

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  long npages = 16384, batch = 1024, rounds = 2;
  int from = 0, to = 1, thp = 0;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--thp")) thp = 1;
    else if (v && !strcmp(argv[i], "--pages")) npages = atol(v), i++;
    else if (v && !strcmp(argv[i], "--batch")) batch = atol(v), i++;
    else if (v && !strcmp(argv[i], "--rounds")) rounds = atol(v), i++;
    else if (v && !strcmp(argv[i], "--from")) from = atoi(v), i++;
    else if (v && !strcmp(argv[i], "--to")) to = atoi(v), i++;
    else {
      fprintf(stderr, "usage: raw_move [--pages N] [--batch B] [--rounds R] [--from A] [--to B] [--thp]\n");
      return 2;
    }
  }
  if (npages < 1 || batch < 1 || rounds < 1) {
    fprintf(stderr, "raw_move: --pages, --batch and --rounds must be positive\n");
    return 2;
  }
  size_t bytes = npages * PAGE;
  uint64_t *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void **pages = malloc(npages * sizeof *pages);
  int *nodes = malloc(npages * sizeof *nodes), *status = malloc(npages * sizeof *status);
  if (buf == MAP_FAILED || !pages || !nodes || !status) {
    fprintf(stderr, "raw_move: cannot allocate %ld pages: %s\n", npages, strerror(errno));
    return 2;
  }
  if (!thp) madvise(buf, bytes, MADV_NOHUGEPAGE);
  for (size_t w = 0; w < bytes / 8; w++) buf[w] = w * 0x9E3779B97F4A7C15ULL;
  for (long i = 0; i < npages; i++) pages[i] = (char *)buf + i * PAGE;

  // Start from a known placement: everything on `from` (not timed).
  for (long i = 0; i < npages; i++) nodes[i] = from;
  if (syscall(SYS_move_pages, 0, npages, pages, nodes, status, MPOL_MF_MOVE) < 0) {
    fprintf(stderr, "raw_move: move_pages to node %d: %s\n", from, strerror(errno));
    return 2;
  }
  long moved = 0, failed = 0;
  int first_err = 0;
  double t0 = now();
  for (long r = 0; r < 2 * rounds; r++) {
    int dst = r % 2 ? from : to;
    for (long i = 0; i < npages; i++) nodes[i] = dst;
    for (long i = 0; i < npages; i += batch) {
      long n = npages - i < batch ? npages - i : batch;
      long rc = syscall(SYS_move_pages, 0, n, pages + i, nodes + i, status + i, MPOL_MF_MOVE);
      if (rc < 0) {
        fprintf(stderr, "raw_move: move_pages to node %d: %s\n", dst, strerror(errno));
        return 2;
      }
      for (long k = i; k < i + n; k++) {
        if (status[k] == dst) moved++;
        else if (failed++ == 0) first_err = status[k];
      }
    }
  }
  double dt = now() - t0;
  long bad = 0;
  for (size_t w = 0; w < bytes / 8; w++) bad += buf[w] != w * 0x9E3779B97F4A7C15ULL;
  printf("RAW_MOVE pages=%ld batch=%ld rounds=%ld moved=%ld failed=%ld seconds=%.3f pages_per_s=%.0f data=%s",
         npages, batch, rounds, moved, failed, dt, moved / dt, bad ? "bad" : "ok");
  if (failed) printf(" first_status=%d", first_err);
  printf("\n");
  return failed || bad ? 1 : 0;
}
