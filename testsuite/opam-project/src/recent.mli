(** The last requests served, for the status line. *)

type t

val create : int -> t
(** Keeps at most this many requests. *)

val add : t -> Request.t -> unit

val distinct_paths : t -> int
