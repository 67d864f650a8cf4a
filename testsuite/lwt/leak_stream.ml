(* Leak (c): every request pushes an event into an unbounded Lwt_stream
   whose consumer is far slower than the requests, so the stream only
   grows.  `control` sheds load instead: a bounded stream of 16, events
   dropped when it is full.  The consumer is the same in both. *)

open Lwt.Syntax

let capacity = 16
let leak = Loopback.leak_mode ()

(* One global each, so that the stream and its push function are one
   holder for retainers. *)
let unbounded = Lwt_stream.create ()
let bounded = Lwt_stream.create_bounded capacity
let dropped = ref 0
let pushed = ref 0
let consumed = ref 0

let publish event =
  incr pushed;
  if leak then (snd unbounded) (Some event)
  else if (snd bounded)#count < capacity then Lwt.async (fun () -> (snd bounded)#push event)
  else (decr pushed; incr dropped)

let rec consume stream =
  let* event = Lwt_stream.get stream in
  match event with
  | None -> Lwt.return_unit
  | Some (_ : Bytes.t) ->
    incr consumed;
    let* () = Lwt_unix.sleep 0.1 in
    consume stream

let handle line =
  let event = Bytes.create 4000 in (* planted *)
  publish event;
  Lwt.return (line ^ " queued")

let () =
  let consumer = consume (if leak then fst unbounded else fst bounded) in
  Lwt_main.run (Loopback.run ~requests:2000 ~clients:8 ~handle);
  Lwt.cancel consumer;
  let queued = !pushed - !consumed in
  let planted = queued * Loopback.reachable_bytes (Bytes.create 4000) in
  Printf.printf "holder %s reachable_bytes %d\nplanted_bytes %d\nevents_queued %d\ndropped %d\n"
    (if leak then "unbounded" else "bounded")
    (if leak then Loopback.reachable_bytes unbounded else Loopback.reachable_bytes bounded)
    planted queued !dropped
