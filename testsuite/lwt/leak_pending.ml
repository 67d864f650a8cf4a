(* Leak (d): promises that never resolve, holding callbacks.  Every request
   subscribes to a notification (Lwt.wait) that never comes and attaches a
   callback to it (Lwt.map, closing over the request's buffer); the
   subscribers' list keeps both pending promises.  `control` notifies each
   subscriber once its request is answered.  Every 500 requests, the true
   number of pending promises per creation site (the lines marked
   "pending:"), from Lwt.state over the promises created ("snapshot wait W
   map M"), then a heap snapshot, which check.py tells from the others by
   its stack root at the line marked "snapshot"; at exit the same
   counts and the callbacks the pending promises hold. *)

let leak = Loopback.leak_mode ()
let subscribers : (unit Lwt.t * int Lwt.t) list ref = ref []

let pending p = Lwt.state p = Lwt.Sleep
let count f = List.length (List.filter f !subscribers)
let waits () = count (fun (n, _) -> pending n)
let maps () = count (fun (_, s) -> pending s)

let handled = ref 0
let snapshot_every = 500

let handle line =
  let buffer = Bytes.create 4000 in (* planted *)
  let notified, notify = Lwt.wait () in (* pending: wait *)
  let size = Lwt.map (fun () -> Bytes.length buffer) notified in (* pending: map *)
  if leak then subscribers := (notified, size) :: !subscribers
  else Lwt.wakeup notify ();
  incr handled;
  if !handled mod snapshot_every = 0 then begin
    Printf.printf "snapshot wait %d map %d\n" (waits ()) (maps ());
    Gc.Memprof_trace.snapshot () (* snapshot *)
  end;
  Lwt.return (line ^ " subscribed")

let () =
  Lwt_main.run (Loopback.run ~requests:2000 ~clients:8 ~handle);
  let planted = List.length !subscribers * Loopback.reachable_bytes (Bytes.create 4000) in
  Printf.printf "holder subscribers reachable_bytes %d\nplanted_bytes %d\n"
    (Loopback.reachable_bytes subscribers) planted;
  (* Each wait promise holds one callback (the map's), each map promise none. *)
  let w = waits () in
  Printf.printf "pending wait %d callbacks %d\npending map %d callbacks %d\n" w w (maps ()) 0
