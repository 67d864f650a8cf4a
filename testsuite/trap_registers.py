#!/usr/bin/env python3
"""The sample trap uses the general registers only (runtime/caml/memprof_trap.h).

caml_call_gc saves only the general registers C may clobber before it
calls caml_memprof_tracer_trap; OCaml code may hold floats in vector
registers across the allocation.  This reads the disassembly of a native
runtime library and follows every direct call and jump from
caml_memprof_tracer_trap: each function reached must be defined in the
library, use no vector, MMX or x87 register, and make no indirect call
but one: the clock's call of the vDSO's clock_gettime through
caml_trace_mono (memprof_trace_writer.h: the kernel compiles its vDSO
without such registers), whose pointer is read within the few
instructions before the call.

usage: trap_registers.py LIBASMRUN.a...   prints "ok ..." or "FAIL ..." per
library and exits 1 on a failure."""

import re
import subprocess
import sys

ENTRY = "caml_memprof_tracer_trap"
# Registers a function compiled for the general registers never names.
OTHER_REGS = re.compile(r"%([xyz]mm\d+|mm\d|st(\(\d\))?|k[0-7])\b")
# x87 and SSE/AVX mnemonics without a register operand (fxsave, ldmxcsr...).
OTHER_OPS = re.compile(r"^\s*[0-9a-f]+:\s+(f[a-z]+|v[a-z]+|[a-z]*mxcsr)\s")
FUNC = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
RELOC = re.compile(r"^\s+[0-9a-f]+: R_X86_64_(PLT32|PC32|GOTPCRELX|REX_GOTPCRELX)\s+(\S+)")
BRANCH = re.compile(r"^\s*[0-9a-f]+:\s+(call|jmp|j[a-z]+)\s+(\S.*)$")


def parse(lib):
    """{object: {function: [lines]}} from objdump -dr."""
    r = subprocess.run(["objdump", "-dr", "--no-show-raw-insn", lib],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None
    out = r.stdout
    objs, obj, fn = {}, None, None
    for line in out.splitlines():
        m = re.match(r"^(\S+\.o):\s+file format", line)
        if m:
            obj = m.group(1); objs[obj] = {}; fn = None
            continue
        m = FUNC.match(line)
        if m and obj is not None:
            fn = m.group(1); objs[obj][fn] = []
            continue
        if fn is not None and line.strip():
            objs[obj][fn].append(line)
    return objs


def target_name(sym):
    sym = re.sub(r"[-+]0x[0-9a-f]+$", "", sym)
    return sym[len(".text."):] if sym.startswith(".text.") else sym


def check(lib):
    objs = parse(lib)
    if objs is None:
        return ["%s: objdump cannot read it" % lib]
    defined = {}
    for obj, fns in objs.items():
        for fn in fns:
            defined.setdefault(fn, []).append(obj)
    start = [(o, ENTRY) for o in defined.get(ENTRY, [])]
    if not start:
        return ["no %s in %s" % (ENTRY, lib)]
    seen, todo, errors = set(start), list(start), []
    while todo:
        obj, fn = todo.pop()
        lines = objs[obj][fn]
        for i, line in enumerate(lines):
            if OTHER_REGS.search(line.split("#")[0]) or OTHER_OPS.match(line):
                errors.append("%s: %s" % (fn, line.strip()))
            b = BRANCH.match(line)
            if not b:
                continue
            if b.group(2).startswith("*"):
                if b.group(1) == "call" and any(
                        "caml_trace_mono" in l for l in lines[max(0, i - 8):i + 2]
                        if RELOC.match(l)):
                    continue        # the vDSO's clock
                errors.append("%s: indirect %s" % (fn, line.strip()))
                continue
            reloc = RELOC.match(lines[i + 1]) if i + 1 < len(lines) else None
            if reloc is None:
                continue            # within this function
            name = target_name(reloc.group(2))
            where = [obj] if obj in defined.get(name, []) else defined.get(name, [])
            if not where:
                errors.append("%s calls %s, not in the library" % (fn, name))
                continue
            for o in where[:1]:
                if (o, name) not in seen:
                    seen.add((o, name)); todo.append((o, name))
    return errors or None, len(seen)


def main():
    failed = False
    for lib in sys.argv[1:]:
        res = check(lib)
        if isinstance(res, list):
            print("FAIL trap registers: " + res[0]); failed = True
            continue
        errors, n = res
        if errors:
            failed = True
            print("FAIL trap registers: %s: %d functions reached, %d faults:"
                  % (lib, n, len(errors)))
            for e in errors[:20]:
                print("    " + e)
        else:
            print("ok   trap registers: %s: %d functions reached from %s, "
                  "general registers only" % (lib.split("/")[-1], n, ENTRY))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
