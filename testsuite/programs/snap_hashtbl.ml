(* A leak held by a module global: a Hashtbl that only grows (argv.(1)
   entries, default 20000).  Prints the
   truth (bytes reachable from the table, headers included) before taking
   a snapshot; the test checks that `ocaml-memprof retainers` names this
   module, the path to make_entry's blocks and the retained size. *)
let table : (int, string) Hashtbl.t = Hashtbl.create 16

let make_entry i = String.make 200 (Char.chr (65 + i mod 26))

let churn () =
  let garbage = ref [] in
  for i = 1 to 200_000 do garbage := [ Array.make 10 i ] done;
  Sys.opaque_identity !garbage |> ignore

let () =
  let n = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1) else 20_000 in
  for i = 1 to n do
    Hashtbl.replace table i (make_entry i);
    if i mod 1000 = 0 then churn ()
  done;
  Printf.printf "truth %d\n%!"
    (Obj.reachable_words (Obj.repr table) * (Sys.word_size / 8));
  Gc.Memprof_trace.snapshot ()
