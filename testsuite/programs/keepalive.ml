(* keepalive.ml DOMAINS BLOCKS: each of DOMAINS domains allocates BLOCKS
   blocks at one site (Keepalive.kept, 7 fields, a size nothing else here
   allocates) and keeps every one reachable until exit, through a major-heap
   array: the remembered set then makes other domains promote some of them
   during parallel minor collections.  Short-lived churn keeps the minor GC
   busy.  No COLLECT may name a kept block, and upstream Gc.Memprof, running
   in the same process, must see no deallocation of one: its counts are
   printed as "gc_memprof allocs N deallocs M". *)

let kept i = (i, i + 1, i + 2, i + 3, i + 4, i + 5, i + 6)
  [@@inline never]

let worker blocks () =
  let slots = Array.make blocks (0, 0, 0, 0, 0, 0, 0) in  (* major heap *)
  let churn = ref [] in                                   (* this domain's *)
  for i = 0 to blocks - 1 do
    slots.(i) <- kept i;
    if i land 7 = 0 then churn := [ i; i ] :: (if i land 63 = 0 then [] else !churn)
  done;
  ignore (Sys.opaque_identity !churn);
  slots

let allocs = Atomic.make 0 and deallocs = Atomic.make 0

let tracker =
  let is_kept (info : Gc.Memprof.allocation) = info.size = 7 in
  let alloc info = if is_kept info then (Atomic.incr allocs; Some ()) else None in
  let dealloc () = Atomic.incr deallocs in
  { Gc.Memprof.alloc_minor = alloc; alloc_major = alloc;
    promote = (fun () -> Some ());
    dealloc_minor = dealloc; dealloc_major = dealloc }

let () =
  let domains = int_of_string Sys.argv.(1) and blocks = int_of_string Sys.argv.(2) in
  let _profile = Gc.Memprof.start ~sampling_rate:0.05 tracker in
  let spawned = List.init (domains - 1) (fun _ -> Domain.spawn (worker blocks)) in
  let mine = worker blocks () in
  let all = mine :: List.map Domain.join spawned in
  Gc.full_major ();
  Gc.Memprof.stop ();
  Printf.printf "gc_memprof allocs %d deallocs %d\n" (Atomic.get allocs) (Atomic.get deallocs);
  (* reachable until here *)
  ignore (Sys.opaque_identity all)
