"""Prints docs/CORPUS.md's table from the corpus's own outputs: each program's native run
(WORK/native.txt, and the driver's `measured: ... (cpu X s)` line in WORK/native.log when
saved; without one, the whole process's CPU time, marked "whole run"), its marker check
(WORK/marker-check.txt) and a short recording's sidecar (from the last SIDECAR_DIR that
has one).

Usage: table.py WORK_ROOT SIDECAR_DIR...    (e.g. target/corpus-work target/corpus-rec)
"""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def read_kv(path):
    if not os.path.exists(path):
        return {}
    return dict(line.split(None, 1) for line in open(path).read().splitlines() if line.strip())


def script_vars(name):
    """SAMPLE_EVERY and INPUT as the program script declares them (sourced, nothing run)."""
    out = subprocess.run(["bash", "-c", f'TK_CORPUS_LIB_ONLY=1 . "{HERE}/programs/{name}.sh"; '
                          'printf "%s\\n%s\\n%s\\n" "$SAMPLE_EVERY" "$INPUT" "$(version)"'],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    return int(out[0]), out[1], out[2]


def main():
    work_root, side_dirs = sys.argv[1], sys.argv[2:]
    names = sorted(f[:-3] for f in os.listdir(os.path.join(HERE, "programs")) if f.endswith(".sh"))
    print("| program | version | input | peak RSS | native load | native measured (wall / CPU) | marker | "
          "S | short recording: instr/miss (at S) | wall after marker, records/s, B/record |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in names:
        s, inp, ver = script_vars(n)
        w = os.path.join(work_root, n)
        nat = read_kv(os.path.join(w, "native.txt"))
        cpu = ""
        if os.path.exists(os.path.join(w, "native.log")):
            m = re.search(r"measured: .*\(cpu ([0-9.]+) s\)", open(os.path.join(w, "native.log")).read())
            cpu = f"{m.group(1)} s" if m else ""
        chk = os.path.join(w, "marker-check.txt")
        marker = "yes" if os.path.exists(chk) and open(chk).read().startswith("marker OK") else "no"
        if marker == "yes" and "thread" in open(chk).read() and "main thread" not in open(chk).read():
            marker = "yes (worker thread)"
        rss = f"{int(nat['rss_kib']) / 1024:.0f} MiB" if "rss_kib" in nat else "?"
        found = [d for d in side_dirs if os.path.exists(os.path.join(d, f"{n}.json"))]
        cal = rec = ""
        if found:
            side_dir = found[-1]
            side = os.path.join(side_dir, f"{n}.json")
            d = json.load(open(side))
            cal = f"{d['instructions'] / (d['records'] * d['sample_every']):.0f} (at S={d['sample_every']})"
            if "records_per_s" in d:
                rec = f"{d['recorded_wall_s']} s, {d['records_per_s']}/s, {d['bytes_per_record']}"
            else:
                rec = f"-, -, {os.path.getsize(os.path.join(side_dir, d['trace'])) / d['records']:.2f}"
        if not cpu and "cpu_s" in nat:
            cpu = f"{nat['cpu_s']} s whole run"
        meas = f"{nat.get('measured_s', '?')} s" + (f" / {cpu}" if cpu else "")
        print(f"| {n} | {ver} | {inp} | {rss} | {nat.get('load_s', '?')} s | {meas} | {marker} | {s} | {cal} | {rec} |")


if __name__ == "__main__":
    main()
