/* tk_record: tierkit's Valgrind tool. It simulates a last-level cache over the
   program's data accesses and streams the accesses that reach memory (misses and
   dirty write-backs) to a descriptor as packed binary records, each with the guest
   instructions retired since the previous record.

   The cache is the one of tierkit's LlcFilter (crates/sim/src/trace/llc.rs):
   set-associative, 64-byte lines, true LRU per set (most recent first),
   write-allocate, write-back. A load miss is a read, a store or modify miss a
   write; a dirty line evicted is a write to its page, emitted just before the miss
   that evicted it. An access spanning several lines touches each of them.

   Accesses are taken from the IR the way lackey's --trace-mem=yes takes them, so
   the two give the same cache counts: loads, stores, guarded loads and stores,
   dirty helpers' memory effects and CAS (a load then a store); a store right after
   a load of the same size and address in the same instruction is one modify.
   Instructions are counted per IMark.

   Stream (little-endian u64 words, written through a buffer):
     header  "TKRECORD", then the stream version (1)
     record  (page << 1) | write, then the instruction gap
     trailer 2^64-1, then the count of summary words, then the summary:
             instructions, loads, stores, modifies, hits, misses, write-backs,
             records, instructions before the first record could be emitted
             (2^64-1 when emission never began).

   A child the program forks writes nothing (the parent's stream goes on). The stream
   ends (with its trailer) when the program calls execve: Valgrind does not follow.

   Options: --out-fd=N (required), --llc-bytes=N, --llc-ways=N,
   --sample-every=N, --start-marker=STR, --skip-instructions=N. */

#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_machine.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_aspacemgr.h"
#include "pub_tool_vki.h"
#include "pub_tool_vkiscnums.h"

/* In the core, not the tool headers: moves a descriptor above the client's
   range, where the client cannot close it. */
extern Int VG_(safe_fd)(Int oldfd);

#define LINE_SHIFT 6
#define PAGE_SHIFT 12
#define STREAM_VERSION 1
#define SUMMARY_WORDS 9
#define OUT_WORDS (1 << 17) /* 1 MiB */
#define NO_FIRST (~0ULL)

enum { K_LOAD = 0, K_STORE = 1, K_MODIFY = 2 };

/* Options. */
static Long clo_out_fd = -1;
static Long clo_llc_bytes = 32 << 20;
static Long clo_llc_ways = 16;
static Long clo_sample_every = 1;
static const HChar* clo_marker = NULL;
static Long clo_skip = 0;

/* The cache: sets x ways slots, each (line << 1) | dirty, most recent first;
   fill[set] of them valid. */
static ULong* slots;
static UInt* fill;
static ULong n_sets;
static ULong set_mask; /* n_sets - 1 when a power of two, else 0 */
static UInt n_ways;

/* Counters. */
static ULong icount;
static ULong n_kind[3];
static ULong n_hits, n_misses, n_writebacks, n_records;

/* Emission state. */
static Bool started;        /* the start marker was seen (or none was asked for) */
static Bool emitting;       /* records are being written */
static Bool sink_closed;    /* the reader went away, the stream ended, or this is a forked child */
static ULong start_icount;  /* instructions when started */
static ULong first_icount = NO_FIRST;
static ULong last_icount;   /* instructions at the previous record */
static ULong rng_state = 0x9E3779B97F4A7C15ULL;
static SizeT marker_len;

/* Output. */
static Int out_fd = -1;
static ULong out_buf[OUT_WORDS];
static UInt out_used;

static void out_flush(void)
{
   const UChar* p = (const UChar*)out_buf;
   Int left = (Int)(out_used * sizeof(ULong));
   out_used = 0;
   while (left > 0 && !sink_closed) {
      Int n = VG_(write)(out_fd, p, left);
      if (n <= 0) {
         sink_closed = True;
         break;
      }
      p += n;
      left -= n;
   }
}

static inline void out_word(ULong w)
{
   out_buf[out_used++] = w;
   if (out_used == OUT_WORDS)
      out_flush();
}

/* xorshift64*: the sample's pseudo-random source, seeded with a constant so that a
   recording is repeatable. */
static inline ULong rng_next(void)
{
   rng_state ^= rng_state >> 12;
   rng_state ^= rng_state << 25;
   rng_state ^= rng_state >> 27;
   return rng_state * 0x2545F4914F6CDD1DULL;
}

static void emit(ULong line, Bool write)
{
   if (!emitting) {
      if (!started || icount - start_icount < (ULong)clo_skip)
         return;
      emitting = True;
      first_icount = start_icount + (ULong)clo_skip;
      last_icount = first_icount;
   }
   if (sink_closed)
      return;
   if (clo_sample_every > 1 && rng_next() % (ULong)clo_sample_every != 0)
      return;
   out_word((((line << LINE_SHIFT) >> PAGE_SHIFT) << 1) | (write ? 1 : 0));
   out_word(icount - last_icount);
   last_icount = icount;
   n_records++;
}

static void access_line(ULong line, Bool write)
{
   ULong set = set_mask ? (line & set_mask) : (line % n_sets);
   ULong* w = slots + set * n_ways;
   UInt n = fill[set];
   UInt i, keep;
   ULong hit;
   if (n > 0 && (w[0] >> 1) == line) {
      n_hits++;
      w[0] |= write;
      return;
   }
   for (i = 1; i < n; i++) {
      if ((w[i] >> 1) == line) {
         n_hits++;
         hit = w[i] | write;
         for (; i > 0; i--)
            w[i] = w[i - 1];
         w[0] = hit;
         return;
      }
   }
   n_misses++;
   if (n == n_ways) {
      ULong victim = w[n - 1];
      if (victim & 1) {
         n_writebacks++;
         emit(victim >> 1, True);
      }
      keep = n - 1;
   } else {
      fill[set] = n + 1;
      keep = n;
   }
   for (i = keep; i > 0; i--)
      w[i] = w[i - 1];
   w[0] = (line << 1) | (write ? 1 : 0);
   emit(line, write);
}

/* Called before each access: `instrs` guest instructions began since the last
   count (this one's included); `size_kind` is size << 2 | kind. */
static VG_REGPARM(3) void tk_access(Addr addr, UWord size_kind, UWord instrs)
{
   UWord kind = size_kind & 3;
   UWord size = size_kind >> 2;
   ULong first = addr >> LINE_SHIFT;
   ULong last = (addr + (size ? size - 1 : 0)) >> LINE_SHIFT;
   ULong line;
   Bool write = kind != K_LOAD;
   if (last < first) /* the access wraps the address space: clamp, as LlcFilter does */
      last = ~0ULL >> LINE_SHIFT;
   icount += instrs;
   n_kind[kind]++;
   for (line = first;; line++) {
      access_line(line, write);
      if (line == last)
         break;
   }
}

/* ---- Instrumentation ---- */

/* A load not yet instrumented: a store of the same size to the same address right
   after it (same instruction) makes it a modify. */
static Bool pend_valid;
static IRExpr* pend_addr;
static Int pend_size;
static ULong instrs_pending;

static void add_icount(IRSB* sb)
{
   IRTemp old, sum;
   IRExpr* where;
   if (instrs_pending == 0)
      return;
   old = newIRTemp(sb->tyenv, Ity_I64);
   sum = newIRTemp(sb->tyenv, Ity_I64);
   where = mkIRExpr_HWord((HWord)&icount);
   addStmtToIRSB(sb, IRStmt_WrTmp(old, IRExpr_Load(Iend_LE, Ity_I64, where)));
   addStmtToIRSB(sb, IRStmt_WrTmp(sum, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(old),
                                                     IRExpr_Const(IRConst_U64(instrs_pending)))));
   addStmtToIRSB(sb, IRStmt_Store(Iend_LE, where, IRExpr_RdTmp(sum)));
   instrs_pending = 0;
}

static void call_access(IRSB* sb, IRExpr* addr, Int size, UWord kind, IRExpr* guard)
{
   IRDirty* di;
   if (guard)
      add_icount(sb); /* the call may not run: count the instructions apart */
   di = unsafeIRDirty_0_N(3, "tk_access", VG_(fnptr_to_fnentry)(tk_access),
                          mkIRExprVec_3(addr, mkIRExpr_HWord(((UWord)size << 2) | kind),
                                        mkIRExpr_HWord(instrs_pending)));
   instrs_pending = 0;
   if (guard)
      di->guard = guard;
   addStmtToIRSB(sb, IRStmt_Dirty(di));
}

static void flush_pending_load(IRSB* sb)
{
   if (pend_valid) {
      pend_valid = False;
      call_access(sb, pend_addr, pend_size, K_LOAD, NULL);
   }
}

static void on_load(IRSB* sb, IRExpr* addr, Int size)
{
   flush_pending_load(sb);
   pend_valid = True;
   pend_addr = addr;
   pend_size = size;
}

static void on_store(IRSB* sb, IRExpr* addr, Int size)
{
   if (pend_valid && pend_size == size && eqIRAtom(pend_addr, addr)) {
      pend_valid = False;
      call_access(sb, addr, size, K_MODIFY, NULL);
      return;
   }
   flush_pending_load(sb);
   call_access(sb, addr, size, K_STORE, NULL);
}

static IRSB* tk_instrument(VgCallbackClosure* closure, IRSB* in, const VexGuestLayout* layout,
                           const VexGuestExtents* vge, const VexArchInfo* archinfo_host,
                           IRType gWordTy, IRType hWordTy)
{
   IRSB* out = deepCopyIRSBExceptStmts(in);
   IRTypeEnv* tyenv = in->tyenv;
   Int i = 0;
   (void)closure;
   (void)layout;
   (void)vge;
   (void)archinfo_host;
   if (gWordTy != hWordTy)
      VG_(tool_panic)("tk_record: host and guest word sizes differ");
   for (; i < in->stmts_used && in->stmts[i]->tag != Ist_IMark; i++)
      addStmtToIRSB(out, in->stmts[i]);
   pend_valid = False;
   instrs_pending = 0;
   for (; i < in->stmts_used; i++) {
      IRStmt* st = in->stmts[i];
      if (!st || st->tag == Ist_NoOp)
         continue;
      switch (st->tag) {
      case Ist_IMark:
         flush_pending_load(out);
         instrs_pending++;
         break;
      case Ist_WrTmp:
         if (st->Ist.WrTmp.data->tag == Iex_Load)
            on_load(out, st->Ist.WrTmp.data->Iex.Load.addr,
                    sizeofIRType(st->Ist.WrTmp.data->Iex.Load.ty));
         break;
      case Ist_Store:
         on_store(out, st->Ist.Store.addr, sizeofIRType(typeOfIRExpr(tyenv, st->Ist.Store.data)));
         break;
      case Ist_StoreG: {
         IRStoreG* sg = st->Ist.StoreG.details;
         flush_pending_load(out);
         call_access(out, sg->addr, sizeofIRType(typeOfIRExpr(tyenv, sg->data)), K_STORE, sg->guard);
         break;
      }
      case Ist_LoadG: {
         IRLoadG* lg = st->Ist.LoadG.details;
         IRType loaded = Ity_INVALID, widened = Ity_INVALID;
         typeOfIRLoadGOp(lg->cvt, &widened, &loaded);
         flush_pending_load(out);
         call_access(out, lg->addr, sizeofIRType(loaded), K_LOAD, lg->guard);
         break;
      }
      case Ist_Dirty: {
         IRDirty* d = st->Ist.Dirty.details;
         if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify)
            on_load(out, d->mAddr, d->mSize);
         if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
            on_store(out, d->mAddr, d->mSize);
         break;
      }
      case Ist_CAS: {
         IRCAS* cas = st->Ist.CAS.details;
         Int size = sizeofIRType(typeOfIRExpr(tyenv, cas->dataLo)) * (cas->dataHi ? 2 : 1);
         on_load(out, cas->addr, size);
         on_store(out, cas->addr, size);
         break;
      }
      case Ist_LLSC:
         if (st->Ist.LLSC.storedata == NULL) {
            on_load(out, st->Ist.LLSC.addr, sizeofIRType(typeOfIRTemp(tyenv, st->Ist.LLSC.result)));
            flush_pending_load(out);
         } else {
            on_store(out, st->Ist.LLSC.addr, sizeofIRType(typeOfIRExpr(tyenv, st->Ist.LLSC.storedata)));
         }
         break;
      case Ist_Exit:
         flush_pending_load(out);
         add_icount(out);
         break;
      default:
         break;
      }
      addStmtToIRSB(out, st);
   }
   flush_pending_load(out);
   add_icount(out);
   return out;
}

/* Ends the stream: the trailer, then nothing more from this process. */
static void write_trailer(void)
{
   if (sink_closed)
      return;
   out_word(~0ULL);
   out_word(SUMMARY_WORDS);
   out_word(icount);
   out_word(n_kind[K_LOAD]);
   out_word(n_kind[K_STORE]);
   out_word(n_kind[K_MODIFY]);
   out_word(n_hits);
   out_word(n_misses);
   out_word(n_writebacks);
   out_word(n_records);
   out_word(first_icount);
   out_flush();
   sink_closed = True;
   VG_(close)(out_fd);
}

/* ---- The start marker, and the end at exec ---- */

static Bool holds_marker(Addr buf, SizeT len)
{
   const HChar* p = (const HChar*)buf;
   SizeT i;
   if (len < marker_len || !VG_(am_is_valid_for_client)(buf, len, VKI_PROT_READ))
      return False;
   for (i = 0; i + marker_len <= len; i++)
      if (p[i] == clo_marker[0] && VG_(memcmp)(p + i, clo_marker, marker_len) == 0)
         return True;
   return False;
}

static void start_now(void)
{
   started = True;
   start_icount = icount;
}

static void tk_pre_syscall(ThreadId tid, UInt sysno, UWord* args, UInt nargs)
{
   Bool seen = False;
   (void)tid;
   /* The program is about to be replaced by one Valgrind does not follow: the stream
      ends here (if the exec fails, the rest of the run is not recorded). */
   if (sysno == __NR_execve || sysno == __NR_execveat) {
      write_trailer();
      return;
   }
   if (started || nargs < 3)
      return;
   if (sysno == __NR_write) {
      seen = holds_marker(args[1], args[2]);
   } else if (sysno == __NR_writev) {
      const struct vki_iovec* iov = (const struct vki_iovec*)args[1];
      UWord n = args[2], k;
      if (VG_(am_is_valid_for_client)((Addr)iov, n * sizeof(*iov), VKI_PROT_READ))
         for (k = 0; k < n && !seen; k++)
            seen = holds_marker((Addr)iov[k].iov_base, iov[k].iov_len);
   }
   if (seen)
      start_now();
}

static void tk_post_syscall(ThreadId tid, UInt sysno, UWord* args, UInt nargs, SysRes res)
{
   (void)tid;
   (void)sysno;
   (void)args;
   (void)nargs;
   (void)res;
}

/* A child forked by the program runs on under Valgrind with the parent's descriptor:
   it writes nothing (its records would mix with the parent's), not even what the
   parent had buffered. */
static void tk_atfork_child(ThreadId tid)
{
   (void)tid;
   out_used = 0;
   sink_closed = True;
   VG_(close)(out_fd); /* so that the reader sees the end when the parent's ends */
}

/* ---- Options, start and end ---- */

static Bool tk_option(const HChar* arg)
{
   if VG_BINT_CLO(arg, "--out-fd", clo_out_fd, 0, 1 << 20) {
   } else if VG_BINT_CLO(arg, "--llc-bytes", clo_llc_bytes, 64, 1LL << 40) {
   } else if VG_BINT_CLO(arg, "--llc-ways", clo_llc_ways, 1, 1 << 16) {
   } else if VG_BINT_CLO(arg, "--sample-every", clo_sample_every, 1, 1LL << 40) {
   } else if VG_STR_CLO(arg, "--start-marker", clo_marker) {
      if (clo_marker[0] == '\0')
         VG_(fmsg_bad_option)(arg, "the start marker is empty\n");
   } else if VG_BINT_CLO(arg, "--skip-instructions", clo_skip, 0, 1LL << 62) {
   } else
      return False;
   return True;
}

static void tk_usage(void)
{
   VG_(printf)("    --out-fd=N              descriptor the records go to (required)\n"
               "    --llc-bytes=N           simulated last-level cache size [32 MiB]\n"
               "    --llc-ways=N            its ways per set [16]\n"
               "    --sample-every=N        emit a 1-in-N sample of the memory-level accesses [1]\n"
               "    --start-marker=STR      emit nothing until the program writes STR\n"
               "    --skip-instructions=N   then emit nothing for N more instructions [0]\n");
}

static void tk_debug_usage(void)
{
   VG_(printf)("    (none)\n");
}

static void tk_post_clo_init(void)
{
   ULong set_bytes = (ULong)clo_llc_ways << LINE_SHIFT;
   ULong n;
   if (clo_out_fd < 0)
      VG_(fmsg_bad_option)("--out-fd", "tk_record needs --out-fd=N, the descriptor to write records to\n");
   if (clo_llc_bytes % set_bytes != 0)
      VG_(fmsg_bad_option)("--llc-bytes", "the size must be a multiple of 64 bytes x %lld ways\n",
                           clo_llc_ways);
   n_ways = (UInt)clo_llc_ways;
   n_sets = (ULong)clo_llc_bytes / set_bytes;
   set_mask = (n_sets & (n_sets - 1)) == 0 ? n_sets - 1 : 0;
   if (n_sets == 1)
      set_mask = 0; /* line % 1 == 0: the modulo path */
   n = n_sets * n_ways;
   slots = VG_(malloc)("tk_record.slots", n * sizeof(ULong));
   fill = VG_(malloc)("tk_record.fill", n_sets * sizeof(UInt));
   VG_(memset)(fill, 0, n_sets * sizeof(UInt));
   marker_len = clo_marker ? VG_(strlen)(clo_marker) : 0;
   if (!clo_marker)
      start_now();
   out_fd = VG_(safe_fd)((Int)clo_out_fd);
   if (out_fd < 0)
      VG_(fmsg_bad_option)("--out-fd", "descriptor %lld is not open\n", clo_out_fd);
   VG_(atfork)(NULL, NULL, tk_atfork_child);
   VG_(memcpy)(&out_buf[0], "TKRECORD", 8);
   out_used = 1;
   out_word(STREAM_VERSION);
}

static void tk_fini(Int exitcode)
{
   (void)exitcode;
   write_trailer();
}

static void tk_pre_clo_init(void)
{
   VG_(details_name)("tk_record");
   VG_(details_version)("1");
   VG_(details_description)("tierkit's memory-level access recorder");
   VG_(details_copyright_author)("tierkit");
   VG_(details_bug_reports_to)("the tierkit project");
   VG_(details_avg_translation_sizeB)(300);
   VG_(basic_tool_funcs)(tk_post_clo_init, tk_instrument, tk_fini);
   VG_(needs_command_line_options)(tk_option, tk_usage, tk_debug_usage);
   VG_(needs_syscall_wrapper)(tk_pre_syscall, tk_post_syscall);
}

VG_DETERMINE_INTERFACE_VERSION(tk_pre_clo_init)
