#!/usr/bin/env python3
"""Decode a trace written by bench/programs/gcmemprof_tracer.ml ("BGMT1") and
check it is complete and consistent: every record well formed, every
location and string defined before use, every promotion/collection naming an
allocated block, and no block collected twice.  Prints the counts in the
same form as the tracer's own summary line, so the two can be compared:

    check_gcmemprof_trace.py TRACE [EXPECTED-SUMMARY-LINE]

Exit status 0 when the trace is consistent (and matches the summary line
when one is given), 1 otherwise.  The format is described at the top of
gcmemprof_tracer.ml."""

import sys


class Bad(Exception):
    pass


def decode(data):
    pos = 0

    def uvar():
        nonlocal pos
        n, shift = 0, 0
        while True:
            if pos >= len(data):
                raise Bad("truncated varint at byte %d" % pos)
            b = data[pos]
            pos += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return n

    nl = data.find(b"\n", 6)
    if not data.startswith(b"BGMT1\n") or nl < 0:
        raise Bad("not a BGMT1 trace")
    rate = float.fromhex(data[6:nl].decode())
    pos = nl + 1
    strings, locs = set(), set()
    next_id = 0
    samples = allocs = promotes = collects = 0
    stack_len = 0
    alive, promoted = set(), set()
    while pos < len(data):
        tag = chr(data[pos])
        pos += 1
        if tag == "S":
            sid, n = uvar(), uvar()
            if sid != len(strings):
                raise Bad("string id %d out of order" % sid)
            if pos + n > len(data):
                raise Bad("truncated string")
            strings.add(sid)
            pos += n
        elif tag == "L":
            code, nslots = uvar(), uvar()
            if code != len(locs):
                raise Bad("location code %d out of order" % code)
            for _ in range(nslots):
                f, _line, _s, _e, name = uvar(), uvar(), uvar(), uvar(), uvar()
                if f not in strings or name not in strings:
                    raise Bad("location %d uses an undefined string" % code)
            locs.add(code)
        elif tag in "Aa":
            _size, ns = uvar(), uvar()
            if pos >= len(data):
                raise Bad("truncated allocation")
            pos += 1  # source
            shared, nnew = uvar(), uvar()
            if shared > stack_len:
                raise Bad("allocation %d shares %d frames of a %d-frame stack"
                          % (next_id, shared, stack_len))
            for _ in range(nnew):
                if uvar() not in locs:
                    raise Bad("allocation %d uses an undefined location" % next_id)
            stack_len = shared + nnew
            alive.add(next_id)
            next_id += 1
            allocs += 1
            samples += ns
        elif tag in "PC":
            dist = uvar()
            bid = next_id - dist
            if bid not in alive:
                raise Bad("%s of unknown or dead block %d" % (tag, bid))
            if tag == "P":
                if bid in promoted:
                    raise Bad("block %d promoted twice" % bid)
                promoted.add(bid)
                promotes += 1
            else:
                alive.discard(bid)
                collects += 1
        else:
            raise Bad("unknown record %r at byte %d" % (tag, pos - 1))
    return rate, "samples=%d allocs=%d promotes=%d collects=%d locations=%d bytes=%d" % (
        samples, allocs, promotes, collects, len(locs), len(data))


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
    try:
        with open(sys.argv[1], "rb") as f:
            data = f.read()
        rate, summary = decode(data)
    except (OSError, Bad, ValueError) as e:
        print("check_gcmemprof_trace: %s: %s" % (sys.argv[1], e), file=sys.stderr)
        sys.exit(1)
    print("rate=%g %s" % (rate, summary))
    if len(sys.argv) == 3:
        expected = sys.argv[2].split("gcmemprof: ")[-1].strip()
        if expected != summary:
            print("check_gcmemprof_trace: mismatch with tracer summary: %s"
                  % expected, file=sys.stderr)
            sys.exit(1)


if __name__ == "__main__":
    main()
