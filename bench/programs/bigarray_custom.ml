(* Custom blocks: bigarrays (small header block plus out-of-heap data,
   allocated through caml_alloc_custom_mem so their data counts for
   sampling) and boxed Int64 values (small custom blocks in the minor
   heap). *)

let () =
  Bench_common.run "bigarray_custom" (fun () ->
      let open Bigarray in
      let keep = Array.make 16 (Array1.create float64 c_layout 1) in
      let sum = ref 0 in
      for i = 1 to Bench_common.iters 1_500_000 do
        let len = 64 + (i mod 32) * 64 in
        let a = Array1.create float64 c_layout len in
        Bench_common.add_custom_bytes (len * 8);
        Array1.fill a (float i);
        keep.(i land 15) <- a;
        (* Boxed int64 arithmetic that the compiler cannot unbox: a list of
           custom blocks. *)
        let l = List.init 20 (fun k -> Int64.of_int (i + k)) in
        let s = List.fold_left Int64.add 0L l in
        sum := !sum + Int64.to_int s + int_of_float a.{len - 1}
      done;
      !sum)
