(* Leak (a): a table of requests and their promises, filled as requests
   arrive and never pruned when they finish.  `control` removes each
   request when its reply is sent.  At exit: the table's reachable bytes
   and the bytes of the request bodies it keeps (the planted line's). *)

open Lwt.Syntax

type request = { id : int; body : Bytes.t; reply : string Lwt.t }

let in_flight : (int, request) Hashtbl.t = Hashtbl.create 16
let leak = Loopback.leak_mode ()

let handle line =
  let id = int_of_string line in
  let body = Bytes.create 4000 in (* planted *)
  let reply =
    let* () = Lwt.pause () in
    Lwt.return (Printf.sprintf "%d %d" id (Bytes.length body))
  in
  Hashtbl.replace in_flight id { id; body; reply };
  let* answer = reply in
  if not leak then Hashtbl.remove in_flight id;
  Lwt.return answer

let () =
  Lwt_main.run (Loopback.run ~requests:2000 ~clients:8 ~handle);
  let planted = Hashtbl.fold (fun _ r n -> n + Loopback.reachable_bytes r.body) in_flight 0 in
  Printf.printf "holder in_flight reachable_bytes %d\nplanted_bytes %d\nrequests_kept %d\n"
    (Loopback.reachable_bytes in_flight) planted (Hashtbl.length in_flight)
