"""Checks, from `strace -f -e trace=write,writev,clone,clone3,fork,vfork,execve` output,
that the start marker was written exactly once, with one write(2) or writev(2) call, by the
traced command's own process (its first pid or one of that process's threads), which is the
process `tierkit record` runs under Valgrind.

Usage: check_marker.py STRACE_FILE [MARKER]
Exits 0 and prints the write when it holds; exits 1 naming what is wrong otherwise.
"""
import re
import sys


def main():
    path = sys.argv[1]
    marker = sys.argv[2] if len(sys.argv) > 2 else "TK_START"
    tgid = {}  # tid -> the process (thread group) it belongs to
    first = None
    hits = []
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"(\d+)\s+(.*)", line)
            if not m:
                continue
            tid, rest = int(m.group(1)), m.group(2)
            if first is None:
                first = tid
            tgid.setdefault(tid, tid)
            c = re.match(r"(clone3?|fork|vfork)\((.*)\)\s*=\s*(\d+)", rest)
            if c:
                child = int(c.group(3))
                tgid[child] = tgid[tid] if "CLONE_THREAD" in c.group(2) else child
            if re.match(r"(write|writev)\(", rest) and marker in rest:
                hits.append((tid, rest.strip()))
    if first is None:
        sys.exit(f"check_marker: {path}: no system calls traced")
    if len(hits) != 1:
        sys.exit(f"check_marker: {path}: {len(hits)} writes hold {marker!r} (want exactly 1)")
    tid, call = hits[0]
    if tgid.get(tid, tid) != first:
        sys.exit(f"check_marker: {path}: {marker!r} was written by pid {tid} of process {tgid.get(tid)}, "
                 f"not by the traced process {first}")
    kind = "main thread" if tid == first else f"thread {tid}"
    print(f"marker OK: one write by the recorded process {first} ({kind}): {call[:120]}")


if __name__ == "__main__":
    main()
