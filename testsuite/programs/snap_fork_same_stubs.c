/* snap_fork_same's C stub: calls [f] with [v] and a block of its own held
   by C local roots only (CAMLparam, CAMLlocal). */
#include <caml/alloc.h>
#include <caml/callback.h>
#include <caml/memory.h>
#include <caml/mlvalues.h>

value snap_fork_with_local_roots(value v, value f)
{
  CAMLparam2(v, f);
  CAMLlocal1(own);
  own = caml_alloc_tuple(3);
  Store_field(own, 0, v);
  Store_field(own, 1, Val_int(42));
  Store_field(own, 2, caml_copy_string("held by a C local root"));
  caml_callback(f, Val_unit);
  CAMLreturn(Val_unit);
}
