(** Rendered pages, per session and path, so that a page is rendered once. *)

type t

val create : unit -> t

val find : t -> session:int -> path:string -> string option

val remember : t -> session:int -> path:string -> string -> unit
(** Stores a copy of the page. *)

val length : t -> int
(** Number of pages stored. *)
