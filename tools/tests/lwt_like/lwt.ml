(* lwt.ml: a miniature of Lwt's promises, not Lwt: enough of its shape
   that the frames of a program built on it are named as Lwt's
   (Lwt.Sequential_composition.bind, Lwt.Pending_promises.new_pending,
   Lwt.pause...), for the tests of ocaml-memprof's Lwt preset and hint
   (tools/tests/run_tests.py, test_presets), and that its promises have
   Lwt 5.6.1's layout, for those of `ocaml-memprof lwt` and the report's
   Lwt view (tools/tests/run_tests.py, test_lwt_threads): a promise is a
   one-field record of its state; Pending (the third constructor with an
   argument, tag 2) holds a four-field callbacks record whose first field
   is the list of regular callbacks, each a tag-1 leaf holding its closure
   under tag-0 concatenation nodes.  Callbacks of a promise run when it is
   resolved; paused ones wait in [paused] for Lwt_main.run. *)

type 'a regular_callbacks =
  | No_callback
  | Concat of 'a regular_callbacks * 'a regular_callbacks
  | Callback of ('a -> unit)

type 'a callbacks = {
  mutable regular : 'a regular_callbacks;
  mutable cancel : unit list;
  mutable how_to_cancel : int;
  mutable cleanups_deferred : int;
}

type 'a state =
  | Fulfilled of 'a
  | Rejected of exn
  | Pending of 'a callbacks
  | Proxy of 'a t
and 'a t = { mutable state : 'a state }

module Pending_promises = struct
  (* The three blocks of a pending promise, 9 words with their headers. *)
  let[@inline never] new_pending () =
    { state = Pending { regular = No_callback; cancel = []; how_to_cancel = 0; cleanups_deferred = 0 } }

  let[@inline never] add_callback p f =
    match p.state with
    | Pending cbs ->
      cbs.regular <- (match cbs.regular with No_callback -> Callback f | l -> Concat (Callback f, l))
    | Fulfilled x -> f x
    | Rejected e -> raise e
    | Proxy _ -> invalid_arg "Lwt.add_callback: proxy"
end

module Trivial_promises = struct
  let[@inline never] return x = { state = Fulfilled x }
end

let return = Trivial_promises.return

let rec run_callbacks x = function
  | No_callback -> ()
  | Callback f -> f x
  | Concat (a, b) -> run_callbacks x b; run_callbacks x a

let[@inline never] wakeup p x =
  match p.state with
  | Pending cbs -> p.state <- Fulfilled x; run_callbacks x cbs.regular
  | Fulfilled _ | Rejected _ | Proxy _ -> invalid_arg "Lwt.wakeup"

let[@inline never] wait () = Pending_promises.new_pending ()

let is_pending p = match p.state with Pending _ -> true | _ -> false

module Sequential_composition = struct
  let[@inline never] bind p f =
    match p.state with
    | Fulfilled x -> f x
    | Rejected e -> raise e
    | Proxy _ -> invalid_arg "Lwt.bind: proxy"
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
