type t = { ring : Request.t option array; mutable next : int }

let create n = { ring = Array.make n None; next = 0 }

let add t r =
  t.ring.(t.next) <- Some r;
  t.next <- (t.next + 1) mod Array.length t.ring

let distinct_paths t =
  let seen = Hashtbl.create 64 in
  Array.iter
    (function Some r -> Hashtbl.replace seen r.Request.path () | None -> ())
    t.ring;
  Hashtbl.length seen
