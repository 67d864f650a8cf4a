(* report4.ml: four domains with distinct memory behaviours, for the HTML
   report tests (tools/tests/run_tests.py, test_report):
   - Report4.leak_step (domain 1) keeps every block: a leak;
   - Report4.race_step (domain 2) pushes blocks into a queue that it drains
     at a slower rate than it fills it: every block dies eventually, but the
     volume in flight grows (an "allocation race", not a leak);
   - Report4.temp_step (domain 3) allocates blocks that die at once;
   - the main domain fills and clears a Hashtbl (Report4.table_step).
   Argument: the number of steps per domain. *)

let[@inline never] leak_step keep n = keep := Array.make 6 n :: !keep

let[@inline never] race_step q n =
  Queue.push (Array.make 10 n) q;
  if n mod 3 <> 0 then ignore (Sys.opaque_identity (Queue.pop q))

let[@inline never] temp_step n = ignore (Sys.opaque_identity (Array.make 4 n))

let[@inline never] table_step h n =
  Hashtbl.replace h n (string_of_int n);
  if n mod 1000 = 0 then Hashtbl.reset h

let () =
  let steps = int_of_string Sys.argv.(1) in
  let leak () = let keep = ref [] in for n = 1 to steps do leak_step keep n done; !keep in
  let race () =
    let q = Queue.create () in
    for n = 1 to steps do race_step q n done;
    while not (Queue.is_empty q) do ignore (Queue.pop q) done;
    Gc.full_major (); [] in
  let temp () = for n = 1 to steps do temp_step n done; [] in
  let ds = List.map Domain.spawn [leak; race; temp] in
  let h = Hashtbl.create 16 in
  for n = 1 to steps do table_step h n done;
  let kept = List.concat_map Domain.join ds in
  Gc.full_major ();
  Printf.printf "%d\n" (List.length kept)
