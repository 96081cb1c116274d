#!/usr/bin/env python3
"""Derive the compact replay streams of run 25's allocator traces (results/trace-*.csv.gz -> replay/*.txt).

The simulator's build has no zlib, so the caching-allocator replay test (tests/sim/test_caching_allocator_replay.cpp)
reads these plain-text files. They hold, in trace order, exactly what a caching-allocator model needs as input
(the allocation requests and their completed frees) plus torch's own outcome to compare with (the segments it
created and where it placed each block). Nothing is dropped except `free_requested` (a free takes effect at its
`free_completed`, which in these traces always follows it at once) and `snapshot` markers.

Line format (space separated; `#` starts a comment line):
  s STEP SIZE STREAM ADDR      torch created a segment (segment_alloc) of SIZE bytes on stream index STREAM at
                               ADDR (bytes above the lowest segment address of the trace); segments are numbered
                               0, 1, ... in order of these lines
  a STEP SIZE STREAM SEG OFF   an allocation request of SIZE bytes (as requested, before rounding) on STREAM;
                               torch placed it in segment SEG at offset OFF; allocations are numbered 0, 1, ...
  f STEP ID                    the block of allocation ID was freed (free_completed)
  x STEP                       any other allocator action (segment_free, oom, ...): the replay refuses the file
STEP is the training step (0-4; -1 before the first), as in the trace. Streams are numbered in order of first
appearance (0 is the default stream).
Usage: derive_replay.py [RESULTS_DIR [OUT_DIR]]   (defaults: results/ and replay/ next to this script)
"""
import bisect, csv, glob, gzip, os, sys

here = os.path.dirname(os.path.abspath(__file__))
src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "results")
dst = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "replay")
os.makedirs(dst, exist_ok=True)
for path in sorted(glob.glob(os.path.join(src, "trace-*.csv.gz"))):
    tag = os.path.basename(path)[len("trace-"):-len(".csv.gz")]
    with gzip.open(path, "rt", newline="") as f:
        rows = list(csv.DictReader(f))
    streams, segs = {}, []
    for r in rows:
        if r["action"] == "segment_alloc":
            segs.append((int(r["addr"]), int(r["size"])))
    base = min(a for a, _ in segs)
    order = sorted(range(len(segs)), key=lambda i: segs[i][0])
    starts = [segs[i][0] for i in order]
    seg_index = {}
    for i, (a, _) in enumerate(segs):
        seg_index[a] = i

    def locate(addr):
        k = bisect.bisect_right(starts, addr) - 1
        if k < 0:
            sys.exit(f"{tag}: address {addr} below every segment")
        i = order[k]
        a, s = segs[i]
        if not a <= addr < a + s:
            sys.exit(f"{tag}: address {addr} in no segment")
        return i, addr - a

    def sid(s):
        return streams.setdefault(s, len(streams))

    sid("0")
    live, n_alloc, out = {}, 0, []
    for r in rows:
        act, step = r["action"], r["step"]
        if act == "segment_alloc":
            out.append(f"s {step} {r['size']} {sid(r['stream'])} {int(r['addr']) - base}")
        elif act == "alloc":
            seg, off = locate(int(r["addr"]))
            live[int(r["addr"])] = n_alloc
            out.append(f"a {step} {r['size']} {sid(r['stream'])} {seg} {off}")
            n_alloc += 1
        elif act == "free_completed":
            out.append(f"f {step} {live.pop(int(r['addr']))}")
        elif act in ("free_requested", "snapshot"):
            continue
        else:
            out.append(f"x {step} {act}")
    with open(os.path.join(dst, f"{tag}.txt"), "w") as f:
        f.write(f"# run 25 allocator trace {tag}, derived by derive_replay.py from results/trace-{tag}.csv.gz\n")
        f.write("\n".join(out) + "\n")
    print(tag, len(out), "lines,", len(segs), "segments,", len(live), "live at end")
