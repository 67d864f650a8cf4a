(* backlog.ml: the programs of the allocation-race flag's tests
   (tools/tests/report_tests.py, test_race_flag).  One loop of STEPS steps
   runs side by side, each at its own allocation site:
   - Backlog.job: jobs arrive 5 every 4 steps for the first half of the
     run, then 1 per step.  Mode "backlog": the consumer takes 1 per step
     while they arrive faster (the queue grows, and each job waits longer
     than the one before), then 2 per step until the queue is empty (it
     drains), then what arrives: a true backlog, which rises and drains.  Mode "fixed": the consumer takes every job in the step
     it arrives (the same allocations, no backlog).
   - Backlog.request: client churn, 4 requests per step, each kept in a
     ring of the last 4,000 (promoted, then dead 1,000 steps later): most
     of what the program promotes, so that major cycles are frequent
     beside the backlog's time scale, as in a server.
   - Backlog.work_item: a bounded queue (a ring of 250,000 slots) that
     its consumer keeps full, emptied at the end: a queue that ends empty,
     whose blocks live several major cycles, always as long (a ring, so
     that Stdlib__Queue.add's cells are the backlog's alone).
   - Backlog.cache_entry: the program's state, a Hashtbl that grows by an
     entry every 16 steps (the heap grows and major cycles lengthen) until
     it is dropped at 70 %.  Mode "growing": the jobs as in "fixed", and
     an entry every step, never dropped: the heap grows tenfold, major
     cycles lengthen as much, and with them the time every promoted block
     waits to be seen dead, the churn's too.
   Arguments: MODE STEPS. *)

let[@inline never] job n = Array.make 1 n
let[@inline never] request n = Array.make 20 n
let[@inline never] work_item n = Array.make 4 n
let[@inline never] cache_entry n = Array.make 5 n

let () =
  let backlog, growing = match Sys.argv.(1) with
    | "backlog" -> true, false | "fixed" -> false, false | "growing" -> false, true
    | m -> failwith ("unknown mode " ^ m) in
  let steps = int_of_string Sys.argv.(2) in
  let jobs = Queue.create () and items = Array.make 250_000 [||] in
  let ring = Array.make 4000 [||] and cache = Hashtbl.create 16 in
  let fill_end = steps / 2 and drop = if growing then steps + 1 else steps * 7 / 10 in
  let every = if growing then 1 else 16 in
  let sum = ref 0 in
  let take q = sum := !sum + (Queue.pop q).(0) in
  for n = 1 to steps do
    let arriving = if n <= fill_end && n mod 4 = 0 then 2 else 1 in
    for _ = 1 to arriving do Queue.push (job n) jobs done;
    let leaving =
      if not backlog then arriving
      else if n <= fill_end then 1
      else 2 in
    for _ = 1 to leaving do if not (Queue.is_empty jobs) then take jobs done;
    for k = 0 to 3 do ring.((4 * n + k) mod 4000) <- request n done;
    let slot = n mod 250_000 in
    if n > 250_000 then sum := !sum + items.(slot).(0);
    items.(slot) <- work_item n;
    if n < drop && n mod every = 0 then Hashtbl.replace cache n (cache_entry n)
    else if n = drop then Hashtbl.reset cache
  done;
  Array.fill items 0 250_000 [||];
  Printf.printf "%d %d\n" !sum (Queue.length jobs)
