// placement: an independent query of where a process's pages are, for the VM tests.
// Asks move_pages(2) with NULL nodes (which moves nothing) for the node of each page.
//
// Build: gcc -static -O2 -o placement placement.c
// Usage: placement PID ADDRS_FILE   (one address per line, e.g. zipf_reader's --hot-out)
//        placement PID 0xSTART-0xEND (every 4 KiB page of that range)
// Output: one line "PLACEMENT total=N node0=N node1=N [nodeK=N...] ENOENT=N EFAULT=N other=N"
// where ENOENT counts pages not present (never touched or swapped) and EFAULT addresses with no
// mapping. Exit 0 when the query ran, 2 on bad usage or a failed move_pages call.
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAGE 4096UL
#define BATCH 4096
#define MAX_NODES 64

static unsigned long *addrs;
static size_t naddrs, cap;

static void push(unsigned long a) {
  if (naddrs == cap) {
    cap = cap ? cap * 2 : 4096;
    addrs = realloc(addrs, cap * sizeof *addrs);
    if (!addrs) {
      fprintf(stderr, "placement: out of memory for %zu addresses\n", cap);
      exit(2);
    }
  }
  addrs[naddrs++] = a & ~(PAGE - 1);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: placement PID ADDRS_FILE | placement PID 0xSTART-0xEND\n");
    return 2;
  }
  int pid = atoi(argv[1]);
  unsigned long start, end;
  char dash;
  if (sscanf(argv[2], "0x%lx%c0x%lx", &start, &dash, &end) == 3 && dash == '-' && start < end) {
    for (unsigned long a = start; a < end; a += PAGE) push(a);
  } else {
    FILE *f = fopen(argv[2], "r");
    if (!f) {
      fprintf(stderr, "placement: cannot open %s: %s\n", argv[2], strerror(errno));
      return 2;
    }
    char line[128];
    while (fgets(line, sizeof line, f))
      if (line[0] != '\n' && line[0] != '#') push(strtoul(line, NULL, 0));
    fclose(f);
  }
  unsigned long per_node[MAX_NODES] = {0}, enoent = 0, efault = 0, other = 0;
  int status[BATCH], first_other = 0;
  for (size_t i = 0; i < naddrs; i += BATCH) {
    size_t n = naddrs - i < BATCH ? naddrs - i : BATCH;
    void *pages[BATCH];
    for (size_t k = 0; k < n; k++) pages[k] = (void *)addrs[i + k];
    if (syscall(SYS_move_pages, pid, n, pages, NULL, status, 0) < 0) {
      fprintf(stderr, "placement: move_pages(pid %d): %s\n", pid, strerror(errno));
      return 2;
    }
    for (size_t k = 0; k < n; k++) {
      int s = status[k];
      if (s >= 0 && s < MAX_NODES) per_node[s]++;
      else if (s == -ENOENT) enoent++;
      else if (s == -EFAULT) efault++;
      else if (!other++) first_other = s;
    }
  }
  printf("PLACEMENT total=%zu node0=%lu node1=%lu", naddrs, per_node[0], per_node[1]);
  for (int n = 2; n < MAX_NODES; n++)
    if (per_node[n]) printf(" node%d=%lu", n, per_node[n]);
  printf(" ENOENT=%lu EFAULT=%lu other=%lu", enoent, efault, other);
  if (other) printf(" first_other=%d", first_other);
  printf("\n");
  return 0;
}
