(* Leak (d): promises that never resolve, holding callbacks.  Every request
   subscribes to a notification (Lwt.wait) that never comes and attaches a
   callback to it (Lwt.map, closing over the request's buffer); the
   subscribers' list keeps both pending promises.  `control` notifies each
   subscriber once its request is answered.  At exit: the true number of
   pending promises per creation site (the lines marked "pending:") and of
   the callbacks they hold, from Lwt.state over the promises created. *)

let leak = Loopback.leak_mode ()
let subscribers : (unit Lwt.t * int Lwt.t) list ref = ref []

let handle line =
  let buffer = Bytes.create 4000 in (* planted *)
  let notified, notify = Lwt.wait () in (* pending: wait *)
  let size = Lwt.map (fun () -> Bytes.length buffer) notified in (* pending: map *)
  if leak then subscribers := (notified, size) :: !subscribers
  else Lwt.wakeup notify ();
  Lwt.return (line ^ " subscribed")

let () =
  Lwt_main.run (Loopback.run ~requests:2000 ~clients:8 ~handle);
  let pending p = Lwt.state p = Lwt.Sleep in
  let count f = List.length (List.filter f !subscribers) in
  let waits = count (fun (n, _) -> pending n) and maps = count (fun (_, s) -> pending s) in
  let planted = List.length !subscribers * Loopback.reachable_bytes (Bytes.create 4000) in
  Printf.printf "holder subscribers reachable_bytes %d\nplanted_bytes %d\n"
    (Loopback.reachable_bytes subscribers) planted;
  (* Each wait promise holds one callback (the map's), each map promise none. *)
  Printf.printf "pending wait %d callbacks %d\npending map %d callbacks %d\n" waits waits maps 0
