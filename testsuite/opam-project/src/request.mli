(** Requests of the line protocol: ["GET <path> <session>"]. *)

type t = { path : string; session : int }

val to_line : t -> string
(** The request as one line, without the newline. *)

val of_line : string -> t option
(** [None] for a malformed line. *)
