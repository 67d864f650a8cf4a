(* Heap snapshots beside Gc.Memprof: what statmemprof holds.

   With argument "memprof", Gc.Memprof tracks this program's 4-field
   records (the blocks kept in [kept]) with a tracker whose callbacks
   return, as tracking data, a 1000-byte buffer per record: the buffers
   are held by statmemprof alone.  Two worker domains do the same while
   the main domain takes the snapshot (they go on allocating untracked
   garbage during it).  With "plain", no Gc.Memprof.

   Prints "held B" (the bytes of the buffers alive at the snapshot,
   headers included) and "kept B" (what the module global's lists
   retain); the test checks that `ocaml-memprof retainers` puts the
   buffers under the memprof kind and that the global's retained size is
   the same with and without Gc.Memprof. *)

type record = { a : int; b : int; c : int; d : int }

let per_domain = 2000
let kept : record list Atomic.t array = Array.init 3 (fun _ -> Atomic.make [])
let live_buffers = Atomic.make 0
let buffer_bytes = (Obj.reachable_words (Obj.repr (Bytes.create 1000))) * (Sys.word_size / 8)

let tracker =
  let track (info : Gc.Memprof.allocation) =
    if info.size = 4 then begin
      Atomic.incr live_buffers; Some (Bytes.create 1000)
    end else None in
  let release _ = Atomic.decr live_buffers in
  { Gc.Memprof.alloc_minor = track; alloc_major = track;
    promote = (fun b -> Some b);
    dealloc_minor = release; dealloc_major = release }

let[@inline never] keep slot i =
  let r = { a = i; b = i + 1; c = i + 2; d = i + 3 } in
  Atomic.set kept.(slot) (r :: Atomic.get kept.(slot))

let[@inline never] churn () = ignore (Sys.opaque_identity (Array.make 9 0))

let () =
  let with_memprof = Array.length Sys.argv > 1 && Sys.argv.(1) = "memprof" in
  let profile =
    if with_memprof then Some (Gc.Memprof.start ~sampling_rate:0.05 tracker) else None in
  let ready = Atomic.make 0 and stop = Atomic.make false in
  let worker slot () =
    for i = 1 to per_domain do keep slot i done;
    Atomic.incr ready;
    while not (Atomic.get stop) do churn () done in
  let workers = [ Domain.spawn (worker 1); Domain.spawn (worker 2) ] in
  for i = 1 to per_domain do keep 0 i done;
  while Atomic.get ready < 2 do churn () done;
  Gc.full_major ();
  let held = Atomic.get live_buffers * buffer_bytes in
  let kept_bytes = Obj.reachable_words (Obj.repr kept) * (Sys.word_size / 8) in
  Gc.Memprof_trace.snapshot ();
  Atomic.set stop true;
  List.iter Domain.join workers;
  Option.iter (fun _ -> Gc.Memprof.stop ()) profile;
  Printf.printf "held %d\nkept %d\n" held kept_bytes
