(** A line-protocol page server. *)

type stats = { served : int; rendered : int; bad : int; recent_paths : int }

val serve : Session_cache.t -> in_channel -> out_channel -> stats
(** Answers every request line read from the input with one response line
    ["200 <length> <digest>"] (or ["400"]) until end of input. *)
