(* A heap of known shape, snapshotted once, for comparing the forked walk
   with the in-pause one (testsuite/snapshots.sh runs it with
   memprof_snapshot_fork=1 and =0 and compares the analyses).  Every kind
   of root the walk takes from the running world holds a share: a module
   global, the stacks of NDOMAINS - 1 other domains waiting in OCaml code,
   a systhread blocked in Condition.wait, a fiber suspended by an effect
   (its continuation held by a global), C local roots (the snapshot is
   taken inside a C stub's callback), the main stack.  Deterministic: the
   same shape on every run. *)
external with_local_roots : 'a -> (unit -> unit) -> unit = "snap_fork_with_local_roots"

let cells tag n = List.init n (fun i -> (tag, i, Array.make (1 + i mod 7) tag))

let by_global = Hashtbl.create 16
let () = for i = 0 to 999 do Hashtbl.replace by_global i (cells i 3) done

type _ Effect.t += Pause : unit Effect.t
let suspended : (unit, unit) Effect.Deep.continuation option ref = ref None
let fiber_sum = ref 0

(* The other domains and the systhread wait on [c] (in a blocking
   section: the same frames on every run) until [released]. *)
let ready = Atomic.make 0
let m = Mutex.create ()
let c = Condition.create ()
let released = ref false

let domain_worker k () =
  let mine = cells (100 + k) (2000 * (k + 1)) in
  Mutex.lock m;
  Atomic.incr ready;
  while not !released do Condition.wait c m done;
  Mutex.unlock m;
  List.length mine

let thread_worker () =
  let mine = cells 7 3000 in
  Mutex.lock m;
  Atomic.incr ready;
  while not !released do Condition.wait c m done;
  Mutex.unlock m;
  ignore (Sys.opaque_identity (List.length mine))

let () =
  let ndomains = int_of_string Sys.argv.(1) in
  let doms = List.init (ndomains - 1) (fun k -> Domain.spawn (domain_worker k)) in
  let th = Thread.create thread_worker () in
  Effect.Deep.match_with
    (fun () ->
       let in_fiber = cells 5 4000 in
       Effect.perform Pause;
       fiber_sum := List.length in_fiber)
    ()
    { retc = (fun () -> ());
      exnc = raise;
      effc = (fun (type a) (e : a Effect.t) ->
        match e with
        | Pause -> Some (fun (k : (a, unit) Effect.Deep.continuation) -> suspended := Some k)
        | _ -> None) };
  while Atomic.get ready < ndomains do Domain.cpu_relax () done;
  let on_stack = cells 3 1500 in
  with_local_roots (cells 4 2500) (fun () -> Gc.Memprof_trace.snapshot ());
  Mutex.lock m; released := true; Condition.broadcast c; Mutex.unlock m;
  Thread.join th;
  let from_domains = List.fold_left (fun a d -> a + Domain.join d) 0 doms in
  (match !suspended with Some k -> Effect.Deep.continue k () | None -> ());
  Printf.printf "%d %d %d %d\n" (List.length on_stack) from_domains !fiber_sum
    (Hashtbl.length by_global)
