// zipf_reader: the VM tests' workload. Fills a buffer with a known pattern, reads it with a
// Zipf-skewed page popularity (hot pages scattered over the buffer by a seeded shuffle of
// single pages, or of clusters of --cluster-pages pages, as hot arrays and arenas are), and
// re-verifies every word at exit, so a test can tell whether page migration around it ever
// corrupted its data.
//
// Build: gcc -static -O2 -o zipf_reader zipf_reader.c -lm -lpthread
// Output: "READY pid=P addr=0xSTART-0xEND pages=N hot_pages=H cluster_pages=C" once the buffer is filled and --hot-out /
//         --cold-out are written; "READS n=N per_s=R" after the read phase; with --hold,
//         "HOLD seconds=S" when the still time begins and "HELD" when it ends; then
//         "CHECKSUM_OK 0x..." (exit 0) or "CHECKSUM_BAD ..." (exit 1). Exit 2: bad usage or a
//         failed system call. With --fork the child prints its lines prefixed "CHILD " and the
//         parent's verdict covers both processes.
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL
#define WORDS_PER_PAGE (PAGE / sizeof(uint64_t))
#define GOLDEN 0x9E3779B97F4A7C15ULL
// set_mempolicy(2) modes from linux/mempolicy.h (no libnuma in a static build).
#define MPOL_DEFAULT 0
#define MPOL_PREFERRED 1
#define MPOL_INTERLEAVE 3
#define FIRST_TOUCH_NONE (-1)
#define FIRST_TOUCH_INTERLEAVE (-2)

static const char usage[] =
    "usage: zipf_reader [--mib M] [--alpha A] [--seconds S] [--threads T] [--seed N]\n"
    "         [--hot-out PATH] [--cold-out PATH] [--hot-pages N] [--fork] [--mlock FRACTION]\n"
    "         [--munmap-churn] [--first-touch-node N|interleave] [--thp] [--cluster-pages N]\n"
    "         [--shift-every S] [--fork-private] [--hold S]\n"
    "  --seconds 0 reads until SIGINT/SIGTERM; --hot-pages defaults to 1/64 of the pages;\n"
    "  --cluster-pages N shuffles popularity in blocks of N consecutive pages (default 1: every\n"
    "  page on its own), so the hottest pages lie together in N-page clusters;\n"
    "  --thp leaves transparent huge pages on (default: MADV_NOHUGEPAGE, 4 KiB pages);\n"
    "  --shift-every S moves the hot set every S seconds: popularity ranks rotate by a quarter\n"
    "  of the pages, so the new hottest pages were lukewarm before (--hot-out lists the first);\n"
    "  --fork-private: the forked child rewrites its copy of the buffer at once (the same data),\n"
    "  so no page stays shared copy-on-write and both processes' pages are their own (placed by\n"
    "  --first-touch-node as the parent's first touches were);\n"
    "  --hold S: after the read phase (and the child's exit) the parent touches no page for S\n"
    "  seconds before it verifies, so that its placement stands still to be measured.\n";

static struct {
  unsigned long mib, hot_pages, cluster;
  double alpha, seconds, mlock_frac, shift_every, hold;
  int threads, fork_child, fork_private, churn, first_touch, thp;
  const char *hot_out, *cold_out;
  uint64_t seed;
} o = {256, 0, 1, 0.99, 3.0, 0.0, 0.0, 0.0, 1, 0, 0, 0, FIRST_TOUCH_NONE, 0, NULL, NULL, 1};

static uint64_t *buf;          // the whole buffer
static unsigned long npages;   // pages in buf
static unsigned long nread;    // pages the readers use: all but the churned tail
static unsigned long *perm;    // popularity rank -> page index
static double *cdf;            // Zipf CDF over ranks 0..nread-1
static volatile sig_atomic_t stop, signalled;
static volatile unsigned long shift;  // rank offset: rank r reads page perm[(r + shift) % nread]
static const char *tag = "";   // "CHILD " in the forked child

static void die(const char *what) {
  printf("%sERROR %s: %s\n", tag, what, strerror(errno));
  fflush(stdout);
  exit(2);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t xorshift(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1DULL;
}

static inline uint64_t pattern(unsigned long word) { return (word * GOLDEN) ^ o.seed; }

static void fill(unsigned long first_page, unsigned long pages) {
  unsigned long w1 = (first_page + pages) * WORDS_PER_PAGE;
  for (unsigned long w = first_page * WORDS_PER_PAGE; w < w1; w++) buf[w] = pattern(w);
}

// One word's contribution to the checksum: mixed with its index, so moved words count too.
static inline uint64_t mix(uint64_t v, unsigned long w) { return ((v ^ (v >> 31)) * 0xBF58476D1CE4E5B9ULL) ^ w; }

// The checksum the buffer must have: the sum of the expected words' contributions.
static uint64_t expected_checksum(void) {
  uint64_t sum = 0;
  for (unsigned long w = 0; w < npages * WORDS_PER_PAGE; w++) sum += mix(pattern(w), w);
  return sum;
}

// The same sum over what the buffer holds; *bad gets the first wrong word's index or -1.
static uint64_t actual_checksum(long *bad) {
  uint64_t sum = 0;
  *bad = -1;
  for (unsigned long w = 0; w < npages * WORDS_PER_PAGE; w++) {
    uint64_t v = buf[w];
    if (v != pattern(w) && *bad < 0) *bad = (long)w;
    sum += mix(v, w);
  }
  return sum;
}

static void *reader(void *arg) {
  uint64_t rng = (o.seed + 1) * 0x100000001B3ULL + (uintptr_t)arg * GOLDEN, sink = 0;
  unsigned long n = 0;
  while (!stop) {
    for (int i = 0; i < 1024; i++) {
      double u = (xorshift(&rng) >> 11) * 0x1.0p-53;
      unsigned long lo = 0, hi = nread - 1;
      while (lo < hi) {
        unsigned long mid = (lo + hi) / 2;
        if (cdf[mid] < u) lo = mid + 1;
        else hi = mid;
      }
      unsigned long rank = lo + shift;
      if (rank >= nread) rank -= nread;
      sink += buf[perm[rank] * WORDS_PER_PAGE + (xorshift(&rng) & (WORDS_PER_PAGE - 1))];
    }
    n += 1024;
  }
  __asm__ volatile("" : : "r"(sink));  // keep the loads
  return (void *)(uintptr_t)n;
}

// Repeatedly unmaps the buffer's tail and maps it back at the same address, refilled.
static void *churner(void *arg) {
  (void)arg;
  char *tail = (char *)buf + nread * PAGE;
  size_t len = (npages - nread) * PAGE;
  unsigned long cycles = 0;
  while (!stop) {
    if (munmap(tail, len)) die("munmap churn tail");
    void *p = mmap(tail, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED) die("mmap churn tail");
    if (p != tail) {
      errno = EEXIST;
      die("mmap churn tail landed elsewhere");
    }
    if (!o.thp) madvise(tail, len, MADV_NOHUGEPAGE);
    fill(nread, npages - nread);
    cycles++;
    usleep(10000);
  }
  return (void *)(uintptr_t)cycles;
}

static void on_signal(int sig) {
  (void)sig;
  stop = signalled = 1;
}

static void write_pages(const char *path, unsigned long first_rank, unsigned long count) {
  FILE *f = fopen(path, "w");
  if (!f) die(path);
  for (unsigned long r = first_rank; r < first_rank + count; r++)
    fprintf(f, "0x%lx\n", (unsigned long)((char *)buf + perm[r] * PAGE));
  if (fclose(f)) die(path);
}

static void set_policy(int mode, unsigned long mask) {
  if (syscall(SYS_set_mempolicy, mode, mode == MPOL_DEFAULT ? NULL : &mask, mode == MPOL_DEFAULT ? 0 : 64))
    die("set_mempolicy");
}

// Reads for --seconds (or until a signal) with the reader (and churn) threads.
static void read_phase(void) {
  pthread_t th[64], ch;
  double t0 = now();
  for (int i = 0; i < o.threads; i++)
    if ((errno = pthread_create(&th[i], NULL, reader, (void *)(uintptr_t)i))) die("pthread_create");
  if (o.churn && (errno = pthread_create(&ch, NULL, churner, NULL))) die("pthread_create");
  unsigned long shifts = 0;
  double next_shift = t0 + o.shift_every;
  while (!stop && (o.seconds <= 0 || now() - t0 < o.seconds)) {
    usleep(20000);
    if (o.shift_every > 0 && now() >= next_shift) {
      shift = (shift + nread / 4) % nread;
      shifts++;
      next_shift += o.shift_every;
    }
  }
  stop = 1;
  unsigned long reads = 0;
  for (int i = 0; i < o.threads; i++) {
    void *r;
    pthread_join(th[i], &r);
    reads += (uintptr_t)r;
  }
  double dt = now() - t0;
  if (o.churn) {
    void *r;
    pthread_join(ch, &r);
    printf("%sCHURN cycles=%lu pages=%lu\n", tag, (unsigned long)(uintptr_t)r, npages - nread);
  }
  printf("%sREADS n=%lu per_s=%.0f shifts=%lu\n", tag, reads, reads / dt, shifts);
}

// Re-checks every word and prints the verdict; other_failed makes an intact buffer BAD too.
static int verify(const char *other_failed) {
  long bad;
  uint64_t want = expected_checksum(), got = actual_checksum(&bad);
  if (bad >= 0 || got != want || other_failed) {
    printf("%sCHECKSUM_BAD got=0x%016llx want=0x%016llx first_bad_word=%ld addr=%p%s\n", tag,
           (unsigned long long)got, (unsigned long long)want, bad, bad >= 0 ? (void *)&buf[bad] : NULL,
           other_failed ? other_failed : "");
    fflush(stdout);
    return 1;
  }
  printf("%sCHECKSUM_OK 0x%016llx\n", tag, (unsigned long long)got);
  fflush(stdout);
  return 0;
}

static void parse(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int takes = 1;
    if (!strcmp(a, "--fork")) o.fork_child = 1, takes = 0;
    else if (!strcmp(a, "--fork-private")) o.fork_child = o.fork_private = 1, takes = 0;
    else if (!strcmp(a, "--munmap-churn")) o.churn = 1, takes = 0;
    else if (!strcmp(a, "--thp")) o.thp = 1, takes = 0;
    else if (!v) goto bad;
    else if (!strcmp(a, "--mib")) o.mib = strtoul(v, NULL, 0);
    else if (!strcmp(a, "--alpha")) o.alpha = atof(v);
    else if (!strcmp(a, "--seconds")) o.seconds = atof(v);
    else if (!strcmp(a, "--threads")) o.threads = atoi(v);
    else if (!strcmp(a, "--seed")) o.seed = strtoull(v, NULL, 0);
    else if (!strcmp(a, "--hot-out")) o.hot_out = v;
    else if (!strcmp(a, "--cold-out")) o.cold_out = v;
    else if (!strcmp(a, "--hot-pages")) o.hot_pages = strtoul(v, NULL, 0);
    else if (!strcmp(a, "--cluster-pages")) o.cluster = strtoul(v, NULL, 0);
    else if (!strcmp(a, "--mlock")) o.mlock_frac = atof(v);
    else if (!strcmp(a, "--shift-every")) o.shift_every = atof(v);
    else if (!strcmp(a, "--hold")) o.hold = atof(v);
    else if (!strcmp(a, "--first-touch-node"))
      o.first_touch = !strcmp(v, "interleave") ? FIRST_TOUCH_INTERLEAVE : atoi(v);
    else goto bad;
    i += takes;
    continue;
  bad:
    fprintf(stderr, "zipf_reader: bad argument '%s'\n%s", a, usage);
    exit(2);
  }
  if (o.mib < 1 || o.cluster < 1 || o.threads < 1 || o.threads > 64 || o.alpha <= 0 || o.mlock_frac < 0 || o.mlock_frac > 1 || o.shift_every < 0 || o.hold < 0 ||
      o.first_touch < FIRST_TOUCH_INTERLEAVE || o.first_touch > 63) {
    fprintf(stderr, "zipf_reader: value out of range\n%s", usage);
    exit(2);
  }
}

int main(int argc, char **argv) {
  parse(argc, argv);
  npages = o.mib * 256;
  nread = o.churn ? npages - (npages / 16 ? npages / 16 : 1) : npages;
  if (nread < 1) {
    fprintf(stderr, "zipf_reader: --mib too small for --munmap-churn\n");
    return 2;
  }
  if (!o.hot_pages) o.hot_pages = nread / 64 ? nread / 64 : 1;
  if (o.hot_pages > nread) o.hot_pages = nread;

  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  // Popularity: rank r has weight 1/(r+1)^alpha; ranks map to pages through a seeded shuffle
  // of blocks of --cluster-pages consecutive pages (ranks within a block in address order). With
  // blocks of one page this is a plain shuffle of the pages.
  unsigned long nblocks = (nread + o.cluster - 1) / o.cluster;
  unsigned long *blocks = malloc(nblocks * sizeof *blocks);
  perm = malloc(nread * sizeof *perm);
  cdf = malloc(nread * sizeof *cdf);
  if (!perm || !cdf || !blocks) die("malloc");
  double total = 0;
  for (unsigned long r = 0; r < nread; r++) cdf[r] = total += pow(r + 1.0, -o.alpha);
  for (unsigned long r = 0; r < nread; r++) cdf[r] /= total;
  cdf[nread - 1] = 1.0;
  uint64_t rng = o.seed ^ GOLDEN;
  for (unsigned long i = 0; i < nblocks; i++) blocks[i] = i;
  for (unsigned long i = nblocks - 1; i > 0; i--) {
    unsigned long j = xorshift(&rng) % (i + 1), t = blocks[i];
    blocks[i] = blocks[j], blocks[j] = t;
  }
  unsigned long ranked = 0;
  for (unsigned long b = 0; b < nblocks; b++)
    for (unsigned long p = blocks[b] * o.cluster; p < (blocks[b] + 1) * o.cluster && p < nread; p++) perm[ranked++] = p;
  free(blocks);

  size_t bytes = npages * PAGE;
  buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buf == MAP_FAILED) die("mmap buffer");
  if (!o.thp && madvise(buf, bytes, MADV_NOHUGEPAGE)) die("madvise(MADV_NOHUGEPAGE)");
  if (o.first_touch == FIRST_TOUCH_INTERLEAVE) set_policy(MPOL_INTERLEAVE, 3);
  else if (o.first_touch >= 0) set_policy(MPOL_PREFERRED, 1UL << o.first_touch);
  fill(0, npages);
  if (o.first_touch != FIRST_TOUCH_NONE) set_policy(MPOL_DEFAULT, 0);
  if (o.mlock_frac > 0) {
    size_t locked = (size_t)(o.mlock_frac * nread) * PAGE;
    if (locked && mlock(buf, locked)) die("mlock");
    printf("MLOCKED bytes=%zu\n", locked);
  }
  if (o.hot_out) write_pages(o.hot_out, 0, o.hot_pages);
  if (o.cold_out) write_pages(o.cold_out, nread - o.hot_pages, o.hot_pages);
  printf("READY pid=%d addr=%p-%p pages=%lu hot_pages=%lu cluster_pages=%lu\n", getpid(), (void *)buf,
         (void *)((char *)buf + bytes), npages, o.hot_pages, o.cluster);
  fflush(stdout);

  pid_t child = -1;
  if (o.fork_child) {
    child = fork();
    if (child < 0) die("fork");
    if (child == 0) {
      tag = "CHILD ";
      o.churn = 0;  // the child reads its copy-on-write view; the parent alone churns
      if (o.fork_private) {  // first touches of the copy, placed as the parent's were
        if (o.first_touch == FIRST_TOUCH_INTERLEAVE) set_policy(MPOL_INTERLEAVE, 3);
        else if (o.first_touch >= 0) set_policy(MPOL_PREFERRED, 1UL << o.first_touch);
        fill(0, npages);
        if (o.first_touch != FIRST_TOUCH_NONE) set_policy(MPOL_DEFAULT, 0);
      }
      printf("CHILD READY pid=%d\n", getpid());
      fflush(stdout);
      read_phase();
      _exit(verify(NULL));
    }
  }
  read_phase();
  const char *child_failed = NULL;
  if (child > 0) {
    int st;
    if (signalled) kill(child, SIGTERM);
    while (waitpid(child, &st, 0) < 0)
      if (errno != EINTR) die("waitpid");
    if (!WIFEXITED(st) || WEXITSTATUS(st)) child_failed = " child_failed=1";
  }
  if (o.hold > 0 && !signalled) {
    printf("HOLD seconds=%g\n", o.hold);
    fflush(stdout);
    double until = now() + o.hold;
    while (!signalled && now() < until) usleep(20000);
    printf("HELD\n");
    fflush(stdout);
  }
  return verify(child_failed);
}
