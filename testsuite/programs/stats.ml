(* Known allocation volumes at distinct sites, for the sampling-rate tests.
   Each site allocates exactly the number of words the test expects (headers
   included); Sys.opaque_identity keeps the compiler from removing them. *)

let[@inline never] alloc_refs n =
  for i = 1 to n do ignore (Sys.opaque_identity (ref i)) done      (* 2 words *)

let[@inline never] comb i = Sys.opaque_identity (i, i, [i])        (* 4 + 3, one comballoc *)
let[@inline never] alloc_comb n = for i = 1 to n do ignore (comb i) done

let[@inline never] alloc_major n =
  for _ = 1 to n do ignore (Sys.opaque_identity (Array.make 1000 0)) done  (* 1001 *)

let[@inline never] alloc_c_small n =
  for _ = 1 to n do ignore (Sys.opaque_identity (Bytes.create 24)) done    (* 4 + 1 *)

let[@inline never] alloc_custom n =
  for _ = 1 to n do
    ignore (Sys.opaque_identity
              (Bigarray.Array1.create Bigarray.char Bigarray.c_layout 80_000))
  done                                  (* 10000 words of external memory *)

let[@inline never] alloc_marshal n =
  let s = Marshal.to_string (List.init 1000 Fun.id) [] in
  for _ = 1 to n do ignore (Sys.opaque_identity (Marshal.from_string s 0 : int list)) done
                                        (* 1000 blocks of 3 words *)

let () =
  let scale = try int_of_string Sys.argv.(1) with _ -> 1 in
  alloc_refs (2_000_000 * scale);
  alloc_comb (500_000 * scale);
  alloc_major (4_000 * scale);
  alloc_c_small (600_000 * scale);
  alloc_custom (400 * scale);
  alloc_marshal (1_000 * scale)
