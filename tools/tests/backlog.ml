(* backlog.ml: the programs of the allocation-race flag's tests
   (tools/tests/report_tests.py, test_race_flag).  One loop of STEPS steps
   runs side by side, each at its own allocation site:
   - Backlog.job: jobs arrive 2 per step for the first 30 % of the run,
     then 1 per step.  Mode "backlog": the consumer takes 1 per step
     while 2 arrive (the queue grows), then 2 per step until the queue is
     empty (it drains), then what arrives: a true backlog, which rises
     and drains.  Mode "fixed": the consumer takes every job in the step
     it arrives (the same allocations, no backlog).
   - Backlog.request: client churn, 2 requests per step, each kept in a
     ring of the last 2,000 (promoted, then dead 1,000 steps later).
   - Backlog.work_item: a bounded queue (a ring of 250,000 slots) that
     its consumer keeps full, emptied at the end: a queue that ends empty,
     whose blocks live several major cycles, always as long (a ring, so
     that Stdlib__Queue.add's cells are the backlog's alone).
   - Backlog.cache_entry: the program's state, a Hashtbl that grows by an
     entry every 4 steps (the heap grows and major cycles lengthen) until
     it is dropped at 70 %.
   Arguments: MODE STEPS. *)

let[@inline never] job n = Array.make 8 n
let[@inline never] request n = Array.make 20 n
let[@inline never] work_item n = Array.make 4 n
let[@inline never] cache_entry n = Array.make 5 n

let () =
  let backlog = match Sys.argv.(1) with
    | "backlog" -> true | "fixed" -> false | m -> failwith ("unknown mode " ^ m) in
  let steps = int_of_string Sys.argv.(2) in
  let jobs = Queue.create () and items = Array.make 250_000 [||] in
  let ring = Array.make 2000 [||] and cache = Hashtbl.create 16 in
  let fill_end = steps * 3 / 10 and drop = steps * 7 / 10 in
  let sum = ref 0 in
  let take q = sum := !sum + (Queue.pop q).(0) in
  for n = 1 to steps do
    let arriving = if n <= fill_end then 2 else 1 in
    for _ = 1 to arriving do Queue.push (job n) jobs done;
    let leaving =
      if not backlog then arriving
      else if n <= fill_end then 1
      else 2 in
    for _ = 1 to leaving do if not (Queue.is_empty jobs) then take jobs done;
    ring.((2 * n) mod 2000) <- request n;
    ring.((2 * n + 1) mod 2000) <- request n;
    let slot = n mod 250_000 in
    if n > 250_000 then sum := !sum + items.(slot).(0);
    items.(slot) <- work_item n;
    if n < drop && n mod 4 = 0 then Hashtbl.replace cache n (cache_entry n)
    else if n = drop then Hashtbl.reset cache
  done;
  Array.fill items 0 250_000 [||];
  Printf.printf "%d %d\n" !sum (Queue.length jobs)
