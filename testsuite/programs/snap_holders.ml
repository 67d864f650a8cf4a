(* A list held by a module global and by a local of a running function at
   once: the snapshot is taken inside [process], whose frame holds [local]
   (it is used after the snapshot) while the global [cache] holds it too;
   [archive], a second global list of the same site, only the global
   holds.  The shortest retainer path to make_entry's strings starts at
   the stack frame; once [process] returns the global still keeps them.
   Prints the entries held by the frame and by the global alone. *)
let cache = ref []
let archive = ref []

let make_entry i = String.make 200 (Char.chr (65 + i mod 26))

let process n =
  let local = List.init n make_entry in
  cache := local;
  Gc.Memprof_trace.snapshot ();
  List.length (Sys.opaque_identity local)

let () =
  archive := List.init 10_000 (fun i -> make_entry (i + 1));
  let n = process 20_000 in
  Printf.printf "stack_and_global %d global_only %d\n" n (List.length !archive)
