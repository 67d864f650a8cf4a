(* Large arrays and strings allocated directly in the major heap (above
   Max_young_wosize = 256 words), with a sliding window of them kept alive so
   that the major GC sweeps a steady stream of dead large blocks. *)

let () =
  Bench_common.run "major_alloc" (fun () ->
      let window = Array.make 64 [||] in
      let strs = Array.make 64 Bytes.empty in
      let sum = ref 0 in
      for i = 1 to Bench_common.iters 800_000 do
        let a = Array.make (300 + i mod 700) i in
        window.(i land 63) <- a;
        let b = Bytes.make (4096 + (i mod 13) * 512) 'x' in
        strs.(i land 63) <- b;
        sum := !sum + Array.length a + Bytes.length b
      done;
      !sum + Array.length window.(0) + Bytes.length strs.(0))
