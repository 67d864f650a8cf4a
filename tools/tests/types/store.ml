(* A library whose values are built inside it: every allocation site of
   its abstract types is here, so only types tell them apart. *)

type entry = { key : string; mutable hits : int }
type t = { entries : (string, entry) Hashtbl.t; mutable recent : entry list }

let create () = { entries = Hashtbl.create 16; recent = [] }

let[@inline never] add s key =
  let e = { key; hits = 0 } in
  Hashtbl.replace s.entries key e;
  s.recent <- e :: s.recent

(* A functor: its body's types are Make(X).cell. *)
module type ORDERED = sig type t val zero : t end

module Make (X : ORDERED) = struct
  type cell = { value : X.t; mutable next : cell option }
  let[@inline never] cell v = { value = v; next = None }
end

(* A first-class module. *)
module type COUNTER = sig val count : int end

let[@inline never] counter n : (module COUNTER) = (module struct let count = n end)

(* A hand-built promise chain, generic: its allocation sites take their
   type from the caller. *)
module Promise = struct
  type 'a state = Pending of ('a -> unit) list | Resolved of 'a
  type 'a t = { mutable state : 'a state }
  let[@inline never] make () = { state = Pending [] }
  let[@inline never] resolved v = { state = Resolved v }
end
