(* A systhreads workload: threads of the main domain share a bounded queue
   under a mutex; two producers allocate messages, a consumer transforms
   them.  Threads switch on the master lock and block on the queue bounds,
   so samples come from every thread. *)

let () =
  Bench_common.run "systhreads" (fun () ->
      let n = Bench_common.iters 700_000 in
      let q = Queue.create () in
      let m = Mutex.create () in
      let c = Condition.create () in
      let not_full = Condition.create () in
      let bound = 1024 in
      let total = ref 0 in
      let producer id () =
        for i = 1 to n do
          let msg = (id, string_of_int i, List.init 4 (fun k -> k * i)) in
          Mutex.lock m;
          while Queue.length q >= bound do Condition.wait not_full m done;
          Queue.push (Some msg) q;
          Condition.signal c;
          Mutex.unlock m
        done;
        Mutex.lock m;
        Queue.push None q;
        Condition.signal c;
        Mutex.unlock m
      in
      let consumer () =
        let finished = ref 0 in
        let acc = ref 0 in
        while !finished < 2 do
          Mutex.lock m;
          while Queue.is_empty q do Condition.wait c m done;
          let item = Queue.pop q in
          Condition.broadcast not_full;
          Mutex.unlock m;
          match item with
          | None -> incr finished
          | Some (id, s, l) ->
            let s' = String.concat "," (List.map string_of_int l) ^ s in
            acc := !acc + id + String.length s'
        done;
        Mutex.lock m;
        total := !total + !acc;
        Mutex.unlock m
      in
      let ps = [Thread.create (producer 1) (); Thread.create (producer 2) ()] in
      let cs = Thread.create consumer () in
      List.iter Thread.join ps;
      Thread.join cs;
      !total)
