(* lwt.ml: a miniature of Lwt's promises, not Lwt: enough of its shape
   that the frames of a program built on it are named as Lwt's
   (Lwt.Sequential_composition.bind, Lwt.Pending_promises.new_pending,
   Lwt.pause...), for the tests of ocaml-memprof's Lwt preset and hint
   (tools/tests/run_tests.py, test_presets).  Callbacks of a promise run
   when it is resolved; paused ones wait in [paused] for Lwt_main.run. *)

type 'a state = Resolved of 'a | Pending of ('a -> unit) list
type 'a t = { mutable state : 'a state }

module Pending_promises = struct
  let[@inline never] new_pending () = { state = Pending [] }

  let[@inline never] add_callback p f =
    match p.state with
    | Pending cbs -> p.state <- Pending (f :: cbs)
    | Resolved x -> f x
end

let[@inline never] return x = { state = Resolved x }

let[@inline never] wakeup p x =
  match p.state with
  | Pending cbs -> p.state <- Resolved x; List.iter (fun f -> f x) (List.rev cbs)
  | Resolved _ -> invalid_arg "Lwt.wakeup"

module Sequential_composition = struct
  let[@inline never] bind p f =
    match p.state with
    | Resolved x -> f x
    | Pending _ ->
      let r = Pending_promises.new_pending () in
      Pending_promises.add_callback p (fun x ->
          Pending_promises.add_callback (f x) (fun y -> wakeup r y));
      r
end

let bind = Sequential_composition.bind

let paused : (unit -> unit) Queue.t = Queue.create ()

let[@inline never] pause () =
  let p = Pending_promises.new_pending () in
  Queue.push (fun () -> wakeup p ()) paused;
  p
