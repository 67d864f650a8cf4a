(* Serves a deterministic stream of page requests over a socket pair: one
   thread sends the requests, one reads the responses, the main thread serves. *)

let paths = [| "/"; "/news"; "/account"; "/search"; "/help"; "/cart" |]

(* Most requests come from a few recent sessions; some open a new one. *)
let requests n =
  let rng = Random.State.make [| 2024 |] in
  let sessions = ref 1 in
  List.init n (fun _ ->
      if Random.State.int rng 32 = 0 then incr sessions;
      let session = max 1 (!sessions - Random.State.int rng 8) in
      let path = paths.(Random.State.int rng (Array.length paths)) in
      { Pagecache.Request.path; session })

let send fd reqs =
  let oc = Unix.out_channel_of_descr fd in
  List.iter
    (fun r ->
      output_string oc (Pagecache.Request.to_line r);
      output_char oc '\n')
    reqs;
  flush oc;
  (* The receiving thread still holds the socket open: end our direction. *)
  Unix.shutdown fd Unix.SHUTDOWN_SEND;
  close_out oc

let receive fd total =
  let ic = Unix.in_channel_of_descr fd in
  (try
     while true do
       let line = input_line ic in
       match String.split_on_char ' ' line with
       | "200" :: len :: _ -> total := !total + int_of_string len
       | _ -> ()
     done
   with End_of_file -> ());
  close_in ic

let () =
  let n = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1) else 250_000 in
  let t0 = Unix.gettimeofday () in
  let client, server = Unix.socketpair Unix.PF_UNIX Unix.SOCK_STREAM 0 in
  let client_out = Unix.dup client in
  let total = ref 0 in
  let sender = Thread.create (send client_out) (requests n) in
  let receiver = Thread.create (receive client) total in
  let cache = Pagecache.Session_cache.create () in
  let stats =
    Pagecache.Server.serve cache
      (Unix.in_channel_of_descr server)
      (Unix.out_channel_of_descr server)
  in
  Unix.shutdown server Unix.SHUTDOWN_SEND;
  Thread.join sender;
  Thread.join receiver;
  Printf.printf
    "served %d requests (%d rendered, %d bad, %d paths recently), %d pages \
     cached, %d bytes sent\n"
    stats.served stats.rendered stats.bad stats.recent_paths
    (Pagecache.Session_cache.length cache)
    !total;
  Printf.eprintf "%.2f s\n" (Unix.gettimeofday () -. t0)
