(* leaky.ml: a program with a known leak, traced by the 5.3.0+memprof
   runtime in tools/tests/run_tests.py.

   Each step, [leak_step] keeps a fresh 4-field record forever (5 words
   with its header) plus the list cell holding it (3 words); [churn_step]
   allocates a 10-field record that dies at once (11 words).  So over
   STEPS steps, leak_step allocates 8 * STEPS words that all stay live,
   and churn_step 11 * STEPS words that are all collected. *)

type big = { a : int; b : int; c : int; d : int; e : int;
             f : int; g : int; h : int; i : int; j : int }
type small = { w : int; x : int; y : int; z : int }

let leaked = ref []

let[@inline never] leak_step n =
  leaked := { w = n; x = n + 1; y = n + 2; z = n + 3 } :: !leaked

let[@inline never] churn_step n =
  let r = { a = n; b = n; c = n; d = n; e = n; f = n; g = n; h = n; i = n; j = n } in
  ignore (Sys.opaque_identity r)

let () =
  let steps = int_of_string Sys.argv.(1) in
  for n = 1 to steps do
    leak_step n;
    churn_step n;
    (* Spread the run over time so that live volume grows with it. *)
    if n mod 10_000 = 0 then ignore (Sys.opaque_identity (Unix.gettimeofday ()))
  done;
  Printf.printf "%d\n" (List.length !leaked)
