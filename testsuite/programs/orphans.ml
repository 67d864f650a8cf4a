(* orphans.ml ROUNDS: short-lived domains allocate (traced at a high rate)
   and keep part of what they allocate in a global structure, so that they
   terminate while the tracer tracks their blocks; meanwhile the main
   domain compacts the heap.  A tracer that loses track of the blocks a
   terminating domain leaves behind, or touches them unsynchronised, reads
   stale pointers after a compaction (issue: SIGSEGV in the major-GC hook). *)

let keep = Array.make 64 []
let lock = Mutex.create ()

let work k () =
  let local = ref [] in
  for i = 1 to 20_000 do
    let b = Array.make (1 + i land 15) i in
    if i land 3 = 0 then local := b :: !local;
    if i land 4095 = 0 then local := []
  done;
  Mutex.lock lock;
  keep.(k land 63) <- !local;
  Mutex.unlock lock

let () =
  let rounds = int_of_string Sys.argv.(1) in
  for r = 1 to rounds do
    let ds = List.init 4 (fun i -> Domain.spawn (work (4 * r + i))) in
    Gc.compact ();
    List.iter Domain.join ds;
    if r land 1 = 0 then Gc.compact ()
  done;
  print_endline "done"
