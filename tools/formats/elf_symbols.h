/* elf_symbols.h: data symbols of an ELF64 executable, to name the module
   globals of a heap snapshot.

   A native snapshot labels each module's global block by its runtime
   address and records the runtime address of caml_globals (the anchor);
   the executable's symbol table (.symtab, absent if stripped) gives the
   load bias (anchor - value of caml_globals) and the symbol at each
   address, camlFoo__Bar for module Foo.Bar.  Only little-endian ELF64 is
   read; anything else yields "no symbols" and labels stay addresses. */

#ifndef OCAML_MEMPROF_ELF_SYMBOLS_H
#define OCAML_MEMPROF_ELF_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  struct { uint64_t value; char *name; } *syms;
  size_t n;
  uint64_t bias;                /* runtime address - file address */
} elf_symbols;

/* 0 if [path] has a symbol table with caml_globals (bias from [anchor]),
   else -1 (nothing to free). */
int elf_symbols_load(elf_symbols *e, const char *path, uint64_t anchor);
/* The module name ("Foo.Bar") of the global block at runtime address
   [addr], written into [out]; 0 if no OCaml module symbol is there. */
int elf_symbols_module(const elf_symbols *e, uint64_t addr, char *out, size_t len);
void elf_symbols_free(elf_symbols *e);

#endif
