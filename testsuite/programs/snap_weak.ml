(* Blocks reachable only through weak references: a Weak array of 20000
   strings of 200 bytes (27 words with its header: 216 bytes), half of
   them also in a list held by a module global.  The strings are marked
   by the major cycle under way before the list drops the other half, so
   that cycle's end (the snapshot's) does not clear them: at the snapshot
   10000 strings are live yet reachable only through the Weak array.
   Prints the strings held strongly and those the Weak array still has. *)
let cache = Weak.create 20000
let strong = ref []

let () =
  for i = 0 to 19999 do
    let s = Bytes.make 200 'x' in
    Weak.set cache i (Some s);
    strong := s :: !strong
  done;
  ignore (Gc.major_slice 0);
  ignore (Gc.major_slice 0);
  strong := List.filteri (fun i _ -> i mod 2 = 0) !strong;
  Gc.Memprof_trace.snapshot ();
  let alive = ref 0 in
  for i = 0 to 19999 do if Weak.check cache i then incr alive done;
  Printf.printf "strong %d weak %d\n" (List.length !strong) !alive
