(* marshal.ml: unmarshals small values and keeps them, so that samples of
   unmarshalled blocks (source "marshal") are promoted, for the CTF export
   test (tools/tests/run_tests.py). *)
let () =
  let steps = int_of_string Sys.argv.(1) in
  let s = Marshal.to_string (1, "abc", [ 2; 3 ]) [] in
  let keep = ref [] in
  for i = 1 to steps do
    let v : int * string * int list = Marshal.from_string s 0 in
    if i mod 2 = 0 then keep := v :: !keep
  done;
  Printf.printf "%d\n" (List.length !keep)
