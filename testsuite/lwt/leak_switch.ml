(* Leak (b): a cleanup hook per request added to a long-lived Lwt_switch,
   the server's, which is never turned off while the server runs, so the
   hooks (and what they close over) pile up.  `control` gives each request
   its own switch, turned off when the request is answered. *)

let server_switch = Lwt_switch.create ()
let leak = Loopback.leak_mode ()
let hooks_added = ref 0

let handle line =
  let scratch = Bytes.create 4000 in (* planted *)
  let release () = Bytes.fill scratch 0 1 '-'; Lwt.return_unit in
  let reply = Printf.sprintf "%s %d" line (Bytes.length scratch) in
  if leak then begin
    incr hooks_added;
    Lwt_switch.add_hook (Some server_switch) release;
    Lwt.return reply
  end else
    Lwt_switch.with_switch (fun request_switch ->
      Lwt_switch.add_hook (Some request_switch) release;
      Lwt.return reply)

let () =
  Lwt_main.run (Loopback.run ~requests:2000 ~clients:8 ~handle);
  (* Each hook holds one scratch buffer of 4000 bytes. *)
  let planted = !hooks_added * Loopback.reachable_bytes (Bytes.create 4000) in
  Printf.printf "holder server_switch reachable_bytes %d\nplanted_bytes %d\nhooks_kept %d\n"
    (Loopback.reachable_bytes server_switch) planted !hooks_added
