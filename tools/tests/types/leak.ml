(* A leak of a known type among other types (tools/tests/types_tests.py
   checks the evolution graph, `timeline --by type`, and `leaks --by
   type`): every step keeps one [session] in a module-level array (the
   leak: only its live bytes rise), builds short-lived [request]s, bytes
   and float arrays (churn: collected at the next minor GC, so flat), and
   a [config] table allocated once at the start stays live (flat).
   [nest] allocates 30 frames deep in its own recursion: a generic type
   that no caller within the 8 innermost frames fixes (its answer holds for
   that exact chain of frames only). *)

type session = { id : int; user : string; started : float; mutable hits : int; tag : int }
type request = { rid : int; path : string; body : bytes }
type config = { key : int; value : string }

let steps = 300_000
let dummy = { id = 0; user = ""; started = 0.; hits = 0; tag = 0 }
let sessions = Array.make (steps + 1) dummy
let configs = Array.init 20_000 (fun i -> { key = i; value = "v" })

let[@inline never] open_session i = { id = i; user = "u"; started = 0.; hits = 0; tag = i land 7 }
let[@inline never] make_request i = { rid = i; path = "/"; body = Bytes.create 16 }
let rec nest n x = if n = 0 then [ x ] else x :: nest (n - 1) x

let () =
  let served = ref 0 in
  for i = 1 to steps do
    sessions.(i) <- open_session i;
    if i mod 100 = 0 then served := !served + List.length (Sys.opaque_identity (nest 30 i));
    for j = 1 to 4 do
      let r = Sys.opaque_identity (make_request (i + j)) in
      served := !served + Bytes.length r.body;
      let a = Sys.opaque_identity (Array.make 6 0.) in
      served := !served + Array.length a
    done
  done;
  Printf.printf "%d sessions, %d configs, %d served\n" (Array.length sessions)
    (Array.length configs) !served
