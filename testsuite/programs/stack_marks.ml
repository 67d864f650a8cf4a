(* stack_marks.ml: adversarial stacks for the tracer's marks on return
   addresses (memprof_stack_marks.c, issue 35), run with memprof_verify=1:
   every sample's stack is compared with caml_get_callstack's.  Each
   scenario checks its own results too (a mark that broke a return, a
   raise or the GC's stack scan shows as a wrong sum or a crash).

   stack_marks.exe SCENARIO ROUNDS, SCENARIO one of map, exn, notrace,
   reraise, effects, overflow, threads, callbacks, callstack, realloc,
   tailcall, swap, all. *)

let fail fmt = Printf.ksprintf (fun s -> prerr_endline s; exit 2) fmt

(* List.map's shape: deep, allocating on the way up. *)
let[@inline never] rec map f = function
  | [] -> []
  | x :: l -> let y = f x in y :: map f l

let map_rounds rounds =
  let l = List.init 3000 (fun i -> i) in
  for r = 1 to rounds do
    let m = map (fun x -> x + r) l in
    if List.length m <> 3000 || List.hd m <> r then fail "map: wrong result"
  done

(* Down to [depth] allocating on the way, a raise at the bottom caught
   [catch_at] levels up, then the same recursion from there to the same
   depth again (the ABA case: the same return addresses at the same
   places), and a sum on the way back. *)
exception Bottom of int

let[@inline never] rec down n acc catch_at =
  if n = 0 then raise (Bottom (List.length acc))
  else if n = catch_at then
    (match down (n - 1) (n :: acc) catch_at with
     | v -> v
     | exception Bottom k ->
       (* regrow from here to the bottom, this time returning *)
       k + again (n - 1) (n :: acc))
  else begin
    let r = down (n - 1) (n :: acc) catch_at in
    let p = Sys.opaque_identity (r, n) in
    fst p + 0 * snd p
  end

and[@inline never] again n acc =
  if n = 0 then List.length acc
  else begin
    let r = again (n - 1) (n :: acc) in
    let p = Sys.opaque_identity (r, n) in
    fst p + 0 * snd p
  end

let exn_rounds rounds =
  for r = 1 to rounds do
    let depth = 1500 + (r mod 7) * 100 in
    let catch_at = 200 + (r mod 5) * 250 in
    let v = down depth [] catch_at in
    let expect = depth + depth in
    if v <> expect then fail "exn: %d <> %d (depth %d, catch %d)" v expect depth catch_at;
    (* caught at the top, then the same recursion regrown *)
    (match down depth [] (-1) with
     | _ -> fail "exn: no raise"
     | exception Bottom k -> if k <> depth then fail "exn: bottom %d" k);
    if again depth [] <> depth then fail "exn: again"
  done

(* raise_notrace: the compiler's inline raise, no runtime call. *)
exception Out
let[@inline never] rec down_nt n acc =
  if n = 0 then raise_notrace Out
  else begin
    let r = down_nt (n - 1) (n :: acc) in
    let p = Sys.opaque_identity (r, n) in
    fst p + snd p
  end

let notrace_rounds rounds =
  for r = 1 to rounds do
    let depth = 1000 + (r mod 9) * 150 in
    (try ignore (down_nt depth []) with Out -> ());
    if again depth [] <> depth then fail "notrace: again"
  done

(* A handler at every level that re-raises: every raise lands just
   above the frame it left. *)
let[@inline never] rec down_re n acc =
  if n = 0 then raise (Bottom (List.length acc))
  else
    try
      let r = down_re (n - 1) (n :: acc) in
      let p = Sys.opaque_identity (r, n) in
      fst p + snd p
    with Bottom k -> let _ = Sys.opaque_identity (ref k) in raise (Bottom (k + 1))

let reraise_rounds rounds =
  for r = 1 to rounds do
    let depth = 500 + (r mod 4) * 200 in
    match down_re depth [] with
    | _ -> fail "reraise: no raise"
    | exception Bottom k -> if k <> 2 * depth then fail "reraise: %d" k
  done

(* Effects: a deep root stack, fibers on top that allocate deep and
   perform; continuations resumed later, some discontinued. *)
type _ Effect.t += Yield : int -> int Effect.t

let effects_rounds rounds =
  let open Effect.Deep in
  let[@inline never] rec fiber_body n acc =
    if n = 0 then List.length acc
    else begin
      let acc = if n mod 97 = 0 then Effect.perform (Yield n) :: acc else n :: acc in
      let r = fiber_body (n - 1) acc in
      let p = Sys.opaque_identity (r, n) in
      fst p + 0 * snd p
    end
  in
  let[@inline never] rec root n k =
    if n = 0 then k ()
    else begin
      let r = root (n - 1) k in
      let p = Sys.opaque_identity (r, n) in
      fst p + 0 * snd p
    end
  in
  for r = 1 to rounds do
    let pending = Queue.create () in
    let run () =
      match_with (fun () -> fiber_body (800 + r mod 300) []) ()
        { retc = (fun v -> v);
          exnc = raise;
          effc = (fun (type a) (e : a Effect.t) ->
            match e with
            | Yield n -> Some (fun (k : (a, _) continuation) ->
                (* resumed from a deeper root stack than it was made on *)
                Queue.push () pending;
                root (n mod 500) (fun () -> continue k n))
            | _ -> None) }
    in
    let v = root (1000 + r mod 200) run in
    if v <> 800 + r mod 300 then fail "effects: %d" v;
    (* a continuation discontinued from the root stack *)
    (match match_with (fun () -> fiber_body 300 []) ()
             { retc = (fun v -> v); exnc = (fun _ -> -1);
               effc = (fun (type a) (e : a Effect.t) ->
                 match e with
                 | Yield _ -> Some (fun (k : (a, _) continuation) ->
                     root 400 (fun () -> discontinue k Exit))
                 | _ -> None) } with
     | -1 -> ()
     | v -> fail "effects: discontinue %d" v)
  done

(* Stack_overflow caught, the stack regrown (run with a small l=). *)
let[@inline never] rec forever n acc =
  let r = forever (n + 1) (n :: acc) in
  let p = Sys.opaque_identity (r, n) in
  fst p + snd p

let overflow_rounds rounds =
  for _ = 1 to rounds do
    (match forever 0 [] with
     | _ -> fail "overflow: returned"
     | exception Stack_overflow -> ());
    if again 2000 [] <> 2000 then fail "overflow: again"
  done

(* Systhreads alternating, each with its own root stack (grown by
   reallocation after the first samples), yielding deep. *)
let threads_rounds rounds =
  let[@inline never] rec deep n acc =
    if n = 0 then (Thread.yield (); List.length acc)
    else begin
      if n mod 250 = 0 then Thread.yield ();
      let r = deep (n - 1) (n :: acc) in
      let p = Sys.opaque_identity (r, n) in
      fst p + 0 * snd p
    end
  in
  let worker id () =
    for r = 1 to rounds do
      let d = 500 + (id * 300 + r * 37) mod 1500 in
      if deep d [] <> d then fail "threads: %d" id
    done
  in
  let ts = List.init 3 (fun i -> Thread.create (worker i) ()) in
  worker 3 ();
  List.iter Thread.join ts

(* OCaml called from C: finalisers and Gc.Memprof callbacks that recurse
   and allocate, run from deep stacks. *)
let callbacks_rounds rounds =
  let count = ref 0 in
  let tracker = Gc.Memprof.{ null_tracker with
    alloc_minor = (fun _ -> incr count; ignore (again 300 []); None) } in
  let _ = Gc.Memprof.start ~sampling_rate:1e-3 tracker in
  let[@inline never] rec deep n =
    if n = 0 then ()
    else begin
      let v = ref n in
      Gc.finalise (fun r -> ignore (again (200 + !r mod 200) [])) v;
      deep (n - 1);
      ignore (Sys.opaque_identity v)
    end
  in
  for _ = 1 to rounds do
    deep 1500;
    Gc.full_major ()
  done;
  Gc.Memprof.stop ();
  if !count = 0 then fail "callbacks: no Gc.Memprof callback"

(* Printexc.get_callstack and exception backtraces through marks:
   upstream's walk maps a mark back to its return address. *)
let callstack_rounds rounds =
  Printexc.record_backtrace true;
  let[@inline never] rec deep n acc =
    if n = 0 then begin
      let cs = Printexc.get_callstack 10_000 in
      Printexc.raw_backtrace_length cs
    end else begin
      let r = deep (n - 1) (n :: acc) in
      let p = Sys.opaque_identity (r, n) in
      fst p + 0 * snd p
    end
  in
  let base = deep 0 [] in
  for r = 1 to rounds do
    let d = 1000 + r mod 500 in
    let len = deep d [] in
    if len <> base + d then fail "callstack: %d frames, %d expected" len (base + d);
    (match down d [] (-1) with
     | _ -> fail "callstack: no raise"
     | exception Bottom _ ->
       let bt = Printexc.get_raw_backtrace () in
       if Printexc.raw_backtrace_length bt < d then
         fail "callstack: backtrace of %d" (Printexc.raw_backtrace_length bt))
  done;
  Printexc.record_backtrace false

(* The stack reallocated under marks: new threads start on a small
   stack, go deep slowly (samples, so marks), then deeper at once. *)
let realloc_rounds rounds =
  for r = 1 to rounds do
    let t = Thread.create (fun () ->
        let v = again 1000 [] in
        let w = again (20_000 + r) [] in
        if v <> 1000 || w <> 20_000 + r then fail "realloc") () in
    Thread.join t
  done

(* Tail calls from frames whose return-address word holds a mark: the
   callee takes the frame's place and returns through the mark. *)
let[@inline never] rec tc_down n acc =
  if n = 0 then List.length acc
  else begin
    let r = tc_down (n - 1) (n :: acc) in
    tc_tail r n
  end

and[@inline never] tc_tail r n =
  let p = Sys.opaque_identity (r, n) in
  if n mod 3 = 0 then tc_loop (fst p) n 40 else fst p + 0 * snd p

and[@inline never] tc_loop r n k =
  if k = 0 then r
  else begin
    let x = Sys.opaque_identity (ref n) in
    tc_loop (r + 0 * !x) n (k - 1)
  end

let tailcall_rounds rounds =
  for r = 1 to rounds do
    let d = 1500 + (r mod 5) * 300 in
    let v = tc_down d [] in
    if v <> d then fail "tailcall: %d <> %d" v d
  done

(* The same frames at the same addresses under a different outer frame:
   [sw_a] and [sw_b] have one shape, so that a recursion under one and
   then under the other puts the same inner frames at the same places;
   only the outer frame's return address differs, which the check must
   see (it is no mark). *)
let[@inline never] sw_a n = 1 + again n []
let[@inline never] sw_b n = 2 + again n []

let swap_rounds rounds =
  for r = 1 to 20 * rounds do
    let d = 600 + (r mod 3) * 100 in
    if sw_a d <> d + 1 || sw_b d <> d + 2 then fail "swap"
  done

let () =
  let scenario = if Array.length Sys.argv > 1 then Sys.argv.(1) else "all" in
  let rounds = if Array.length Sys.argv > 2 then int_of_string Sys.argv.(2) else 20 in
  let all = [ "map", map_rounds; "exn", exn_rounds; "notrace", notrace_rounds;
              "reraise", reraise_rounds; "effects", effects_rounds;
              "overflow", overflow_rounds; "threads", threads_rounds;
              "callbacks", callbacks_rounds; "callstack", callstack_rounds;
              "realloc", realloc_rounds; "tailcall", tailcall_rounds;
              "swap", swap_rounds ] in
  List.iter (fun (name, f) ->
      if scenario = "all" || scenario = name then begin
        f rounds;
        Printf.printf "%s ok\n%!" name
      end) all
