(* stacks.ml: allocations under every kind of stack the tracer's walk must
   get right, run with memprof_verify=1 (each captured stack is compared
   with upstream's caml_get_callstack): a deep recursion (DEPTH frames),
   effect handlers (allocation in the handler, in the continuation, three
   fibers deep), exception handlers, callbacks from C (finalisers,
   Gc.Memprof callbacks, a signal handler), systhreads and domains.
   Usage: stacks [DEPTH [MS]]: all of it again until MS milliseconds have
   passed (the sample trap, runtime/memprof_trap.c, serves samples once
   the trace's TSC clock is calibrated, 5 to 100 ms after the start). *)

type _ Effect.t += Yield : int -> int Effect.t

(* A ring of the last 64 allocations, so that some samples are promoted. *)
let ring = Array.make 64 (Obj.repr 0)
let pos = Atomic.make 0
let keep x = ring.(Atomic.fetch_and_add pos 1 land 63) <- Obj.repr x

let rec deep n =
  if n = 0 then (for i = 1 to 50 do keep (Array.make 3 i) done; 0)
  else 1 + deep (n - 1)

let in_fibers () =
  let open Effect.Deep in
  let body () =
    let s = ref 0 in
    for i = 1 to 2000 do
      keep (Bytes.create 24);
      s := !s + Effect.perform (Yield i)
    done;
    !s
  in
  let handle f =
    match_with f ()
      { retc = (fun x -> x);
        exnc = raise;
        effc = (fun (type a) (e : a Effect.t) ->
          match e with
          | Yield i -> Some (fun (k : (a, _) continuation) ->
              keep (Array.make 2 i);
              continue k (i + 1))
          | _ -> None) }
  in
  (* three fibers deep: the walk goes through two parents *)
  handle (fun () -> handle (fun () -> handle body))

let in_handlers () =
  let r = ref 0 in
  for i = 1 to 3000 do
    try
      try if i mod 2 = 0 then raise Not_found else raise Exit
      with Not_found -> keep (String.make 16 'a'); raise Exit
    with Exit -> keep (ref i); incr r
  done;
  !r

let from_c () =
  (* finalisers, run from C by the GC *)
  for i = 1 to 200 do
    let x = ref i in
    Gc.finalise (fun _ -> keep (Array.make 4 0)) x
  done;
  (* Gc.Memprof callbacks, run from C *)
  let t = Gc.Memprof.start ~sampling_rate:0.01
      { Gc.Memprof.null_tracker with
        alloc_minor = (fun _ -> keep (Array.make 3 1); None) } in
  for _ = 1 to 2000 do keep (Array.make 5 0) done;
  Gc.Memprof.stop (); ignore t;
  (* a signal handler *)
  Sys.set_signal Sys.sigusr1 (Sys.Signal_handle (fun _ -> keep (Array.make 6 0)));
  for _ = 1 to 20 do
    Unix.kill (Unix.getpid ()) Sys.sigusr1;
    keep (Array.make 2 0)
  done;
  Gc.full_major ()

let work depth () =
  for _ = 1 to 20 do ignore (deep depth) done;
  ignore (in_fibers ());
  ignore (in_handlers ())

let all depth =
  work depth ();
  from_c ();
  let th = List.init 2 (fun _ -> Thread.create (work depth) ()) in
  List.iter Thread.join th;
  let ds = List.init 2 (fun _ -> Domain.spawn (work depth)) in
  List.iter Domain.join ds

let () =
  let arg i default =
    if Array.length Sys.argv > i then int_of_string Sys.argv.(i) else default in
  let depth = arg 1 300 and ms = arg 2 0 in
  let until = Unix.gettimeofday () +. float_of_int ms /. 1000. in
  all depth;
  while Unix.gettimeofday () < until do all depth done;
  print_endline "stacks: done"
