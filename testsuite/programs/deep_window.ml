(* deep_window.ml: stacks that change depth by hundreds to thousands of
   frames between samples, in every way a program leaves frames other
   than by returning, run with memprof_verify=1 (each captured stack is
   compared with upstream's caml_get_callstack) at caps above and below
   the depth (issue 35: outer frames reused whatever the depth changes;
   a cut stack's window moving along the stack):
   - List.map's shape over lists of random lengths (allocation on the way
     up), and a recursion that allocates on the way down and up;
   - exceptions raised from deep inside to a handler thousands of frames
     out, then a new descent at another depth;
   - an effect performed deep in a fiber, its handler allocating under
     its own recursion, the continuation resumed (the fiber's stack grows
     by reallocation as it deepens);
   - Stack_overflow raised by a runaway recursion and recovered from;
   - callbacks from C (a Gc.Memprof callback, finalisers) that recurse
     and allocate at depth;
   - two systhreads doing all of it at once.
   Usage: deep_window [MAX_DEPTH [ROUNDS]] *)

type _ Effect.t += Deep : int -> int Effect.t

let sink = ref (Obj.repr 0)
let state = ref 424242
let next () =
  state := (!state * 1103515245 + 12345) land 0x3fffffff;
  !state lsr 8
let max_depth = try int_of_string Sys.argv.(1) with _ -> 3000
let depth () = 1 + next () mod max_depth

let rec map f = function [] -> [] | x :: l -> let y = f x in y :: map f l

let rec updown n =
  if n = 0 then 0
  else begin
    let c = Sys.opaque_identity (ref n) in
    let r = updown (n - 1) in
    sink := Obj.repr (r, !c);
    r + 1
  end

exception Out of int

(* Allocates on the way down, raises at the bottom: the handler is
   [depth] frames out. *)
let rec down_raise n =
  sink := Obj.repr (Array.make 2 n);
  if n = 0 then raise (Out n) else 1 + down_raise (n - 1)

(* In a fiber: allocate down to [n], perform there, allocate again on the
   way up after the handler (which recursed and allocated) resumed us. *)
let rec down_perform n =
  if n = 0 then Effect.perform (Deep (depth ()))
  else begin
    sink := Obj.repr (ref n);
    let r = down_perform (n - 1) in
    sink := Obj.repr (Some r);
    r + 1
  end

let in_fiber n =
  let open Effect.Deep in
  try_with down_perform n
    { effc = (fun (type a) (e : a Effect.t) ->
        match e with
        | Deep d -> Some (fun (k : (a, _) continuation) ->
            ignore (updown (d / 4));
            continue k 1)
        | _ -> None) }

let rec runaway n = sink := Obj.repr (ref n); 1 + runaway (n + 1)

let round () =
  let l = List.init (depth ()) (fun i -> i) in
  ignore (map (fun x -> x + 1) l);
  ignore (updown (depth ()));
  (try ignore (down_raise (depth ())) with Out _ -> ());
  (* the handler in the middle of a deep stack *)
  ignore (updown (depth () / 2));
  ignore (map (fun x -> (try if x mod 97 = 0 then ignore (down_raise (x mod 300))
                         with Out _ -> ()); x)
            (List.init (depth ()) (fun i -> i)));
  ignore (in_fiber (depth ()));
  ignore (map (fun x -> x) (List.init (depth ()) (fun i -> i)))

(* A Gc.Memprof callback: OCaml called from C, with a recursion of its own. *)
let tracker = {
  Gc.Memprof.null_tracker with
  alloc_minor = (fun _ -> ignore (updown (1 + next () mod 200)); None) }

let () =
  let rounds = try int_of_string Sys.argv.(2) with _ -> 20 in
  let _ = Gc.Memprof.start ~sampling_rate:1e-4 ~callstack_size:10 tracker in
  (* Stack_overflow: a runaway recursion, caught, then deep stacks again
     (under OCAMLRUNPARAM's l, which the test sets low). *)
  (try ignore (runaway 0) with Stack_overflow -> ());
  let worker () =
    for _ = 1 to rounds do
      round ();
      (* finalisers run at depth, from C *)
      let r = ref 0 in
      Gc.finalise (fun _ -> ignore (updown 300)) (ref 1);
      ignore (updown (depth () / 3));
      r := !r + 1
    done
  in
  let t = Thread.create worker () in
  worker ();
  Thread.join t;
  (try ignore (runaway 0) with Stack_overflow -> ());
  round ();
  Gc.Memprof.stop ();
  print_endline "done"
