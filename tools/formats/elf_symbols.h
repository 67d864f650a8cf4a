/* elf_symbols.h: data symbols of an ELF64 executable, to name the module
   globals of a heap snapshot.

   A native snapshot labels each module's global block by its runtime
   address and records the runtime address of caml_globals (the anchor);
   the executable's symbol table (.symtab, absent if stripped) gives the
   load bias (anchor - value of caml_globals) and the symbol at each
   address, camlFoo__Bar for module Foo.Bar.  Only little-endian ELF64 is
   read; anything else yields "no symbols" and labels stay addresses.
   The executable's path comes from the trace: only a regular file is
   read, and at most ELF_SYMBOLS_MAX_MB of symbol and string tables. */

#ifndef OCAML_MEMPROF_ELF_SYMBOLS_H
#define OCAML_MEMPROF_ELF_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#define ELF_SYMBOLS_MAX_MB 256

typedef struct {
  struct { uint64_t value; char *name; } *syms;
  size_t n;
  uint64_t globals;             /* file address of caml_globals */
  int have_globals;
} elf_symbols;

/* 0 if [path] is a regular file with a symbol table holding caml_globals;
   else -1 with the reason in [why] (nothing to free). */
int elf_symbols_load(elf_symbols *e, const char *path, char *why, size_t whylen);
/* The module name ("Foo.Bar") of the global block at runtime address
   [addr] of a process whose caml_globals was at [anchor], written into
   [out]; 0 if no OCaml module symbol is there. */
int elf_symbols_module(const elf_symbols *e, uint64_t anchor, uint64_t addr, char *out,
                       size_t len);
void elf_symbols_free(elf_symbols *e);

#endif
