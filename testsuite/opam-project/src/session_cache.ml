type entry = { page : Bytes.t; mutable hits : int }

type t = { pages : (int * string, entry) Hashtbl.t; lock : Mutex.t }

let create () = { pages = Hashtbl.create 1024; lock = Mutex.create () }

let find t ~session ~path =
  Mutex.lock t.lock;
  let result =
    match Hashtbl.find_opt t.pages (session, path) with
    | Some e ->
        e.hits <- e.hits + 1;
        Some (Bytes.to_string e.page)
    | None -> None
  in
  Mutex.unlock t.lock;
  result

(* Sessions end but their pages stay: nothing ever removes an entry. *)
let remember t ~session ~path page =
  let copy = Bytes.create (String.length page) in
  Bytes.blit_string page 0 copy 0 (String.length page);
  Mutex.lock t.lock;
  Hashtbl.replace t.pages (session, path) { page = copy; hits = 0 };
  Mutex.unlock t.lock

let length t =
  Mutex.lock t.lock;
  let n = Hashtbl.length t.pages in
  Mutex.unlock t.lock;
  n
