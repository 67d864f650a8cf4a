#!/usr/bin/env python3
"""Write a two-domain memtrace CTF version-3 file, for the reader tests.

No upstream file has more than one domain, so this builds one with the
shared checker's reference writer (shared/spec/tools/mtctf_check.py), one
writer per domain, both appending whole packets to one file, with disjoint
id ranges (domain 0 from 0, domain 1 from 1,000,000, as the master writer's
global range counter would give); the streams are flushed every 100
steps, domain 1 first, so packets interleave in causal order.  Domain 1's blocks are collected from
domain 0's stream, which needs a negative id delta (accepted by master
readers since version 3).

The program: domain 0 allocates A.f (8 words, 1 sample) every 10 us,
domain 1 allocates B.g (32 words, 2 samples, major heap) every 20 us, for
N steps; every B.g block is collected 100 us later by domain 0.  Prints the
expected counts as JSON.
Usage: make_v3_multidomain.py SHARED_SPEC_TOOLS_DIR OUT N
"""
import json
import sys

sys.path.insert(0, sys.argv[1])
import mtctf_check as m  # noqa: E402

out, n = sys.argv[2], int(sys.argv[3])
start = 1_700_000_000_000_000
info = dict(pid=777, domain=0, start=start, sample_rate=1e-4, word_size=64,
            executable='multi', host='h', params='', context='')
records = {0x10: [('main.ml', 1, 0, 5, 'Main.main')],
           0x20: [('a.ml', 3, 2, 9, 'A.f')],
           0x30: [('b.ml', 7, 1, 8, 'B.g'), ('b.ml', 2, 0, 4, 'B.inlined')]}
sink = bytearray()
w0 = m.ReferenceWriter(sink, info, 3, 10_000)
scratch = bytearray()
w1 = m.ReferenceWriter(scratch, dict(info, domain=1), 3, 10_000)
w1.sink = sink                   # only w0's trace-info packet is kept
w1.next_id = w1.first_id = 1_000_000
w1.range_end, w1.global_next = 1_010_000, 2_000_000
w0.global_next = 10_000
pending = []
for i in range(n):
    t = start + 10 * i
    w0.alloc(t, 8, 1, 0, [0x10, 0x20], records.__getitem__)
    if i % 2 == 0:
        pending.append((t + 100, w1.alloc(t, 32, 2, 1, [0x10, 0x30], records.__getitem__)))
    while pending and pending[0][0] <= t:
        w0.mark(4, t, pending.pop(0)[1])
    if i % 100 == 99:
        # Packets interleave: domain 1's allocations are written before
        # domain 0's packet that collects them (file order = causal order).
        w1.flush(t)
        w0.flush(t)
w1.close()
w0.close()
open(out, 'wb').write(bytes(sink))
na, nb = n, (n + 1) // 2
print(json.dumps({"A.f": na, "B.g": nb, "collected": nb - len(pending),
                  "allocs": na + nb}))
