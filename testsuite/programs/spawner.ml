(* spawner.ml [child N | exec]: a traced OCaml program that runs OCaml
   children (itself, with "child N") through Unix.create_process and
   Sys.command while it goes on allocating; with "exec", it replaces itself
   by such a child (Unix.execv: same pid).  The children inherit OCAMLRUNPARAM, hence
   the same memprof=PATH: the parent's trace must stay whole, and every
   child's events must land in a readable trace of their own. *)

let allocate n = let l = ref [] in for i = 1 to n do l := [ i ] :: !l; if i land 1023 = 0 then l := [] done

let () =
  match Array.to_list Sys.argv with
  | [ _; "child"; n ] -> allocate (int_of_string n * 100_000)
  | [ _; "exec" ] ->
    allocate 300_000;
    Unix.execv Sys.executable_name [| Sys.executable_name; "child"; "2" |]
  | _ ->
    let self = Sys.executable_name in
    let pids = List.init 2 (fun i ->
      Unix.create_process self [| self; "child"; string_of_int (i + 1) |]
        Unix.stdin Unix.stdout Unix.stderr) in
    allocate 300_000;
    let rc = Sys.command (Filename.quote_command self [ "child"; "3" ]) in
    allocate 300_000;
    List.iter (fun p -> ignore (Unix.waitpid [] p)) pids;
    Printf.printf "children done %d\n" rc
