(* Blocks that die and blocks that survive, with a compaction in the middle. *)
let kept = ref []

let[@inline never] keep_one i = kept := ref i :: !kept
let[@inline never] drop_one i = ignore (Sys.opaque_identity (ref i))

let phase () =
  for i = 1 to 100_000 do
    keep_one i;
    for j = 1 to 10 do drop_one j done
  done

let () =
  phase ();
  Gc.compact ();
  phase ();
  Gc.full_major ();
  Gc.full_major ();
  ignore (Sys.opaque_identity !kept)
