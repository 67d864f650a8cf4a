(* orphans.ml ROUNDS [gc_memprof]: short-lived domains allocate (traced at
   a high rate) and keep part of what they allocate in a global structure,
   so that they terminate while the tracer tracks their blocks; meanwhile
   the main domain compacts the heap.  A tracer that loses track of the
   blocks a terminating domain leaves behind, or touches them
   unsynchronised, reads stale pointers after a compaction (issue: SIGSEGV
   in the major-GC hook).  With gc_memprof, upstream's Gc.Memprof tracks
   every sampled block at 0.1 too: 5.3.0's statmemprof handed a terminating
   domain's tracked blocks over after it had left the stop-the-world set,
   so that a compaction in between left them stale (SIGSEGV in
   entry_update_after_major_gc, 12 runs in 100 before the fix). *)

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
  if Array.length Sys.argv > 2 && Sys.argv.(2) = "gc_memprof" then begin
    let track _ = Some () in
    ignore (Gc.Memprof.start ~sampling_rate:0.1
              { Gc.Memprof.null_tracker with alloc_minor = track; alloc_major = track;
                                             promote = (fun () -> Some ()) })
  end;
  for r = 1 to rounds do
    let ds = List.init 4 (fun i -> Domain.spawn (work (4 * r + i))) in
    Gc.compact ();
    List.iter Domain.join ds;
    if r land 1 = 0 then Gc.compact ()
  done;
  print_endline "done"
