(** Renders the page a request asks for. *)

val render : path:string -> session:int -> string
(** A deterministic HTML page of about one kilobyte. *)
