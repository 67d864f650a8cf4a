(* server.ml: a "server" on the miniature Lwt of this directory: it reads
   request lines and parses each into a record (the program's own
   allocations, Server.handle), while most of what it allocates is the
   scheduler's.  Argument: the number of requests. *)

type request = { id : int; path : string; words : string list }

let[@inline never] handle id line =
  { id; path = line; words = String.split_on_char ' ' line }

let rec serve ic n acc =
  Lwt.bind (Lwt_io.read_line ic) (fun line ->
      if line = "" then Lwt.return acc
      else serve ic (n + 1) (acc + List.length (handle n line).words))

let () =
  let lines = int_of_string Sys.argv.(1) in
  let text =
    String.concat "\n" (List.init lines (Printf.sprintf "GET /item/%d HTTP/1.1")) ^ "\n\n" in
  Printf.printf "%d\n" (Lwt_main.run (serve (Lwt_io.of_string text) 0 0))
