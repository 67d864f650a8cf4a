(* Sampled blocks typed by their allocation site (tests/snaptypes_tests.py):
   the array is held through an Obj.t, whose type says nothing, and the
   list by a local of the running function. *)
type item = { k : int; v : string }

let keep = ref (Obj.repr 0)

let () =
  let l = List.init 1000 (fun i -> { k = i; v = string_of_int i }) in
  keep := Obj.repr (Array.of_list l);
  Gc.Memprof_trace.snapshot ();
  ignore (Sys.opaque_identity l)
