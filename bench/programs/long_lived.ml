(* Steady growth of long-lived data: a Hashtbl and a Map that keep every
   entry they are given.  Sampled blocks get promoted and mostly survive to
   the end; the major heap grows steadily. *)

module IM = Map.Make (Int)

let () =
  Bench_common.run "long_lived" (fun () ->
      let n = Bench_common.iters 700_000 in
      let h = Hashtbl.create 16 in
      let m = ref IM.empty in
      for i = 1 to n do
        Hashtbl.replace h i (string_of_int i, [i; i + 1]);
        if i land 3 = 0 then m := IM.add (i * 7919 mod 1_000_003) (float i) !m
      done;
      (* Touch the data so it is live until here. *)
      let s = Hashtbl.fold (fun k (str, _) acc -> acc + k + String.length str) h 0 in
      s + IM.cardinal !m)
