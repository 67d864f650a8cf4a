(* ocaml-memprof-types: the OCaml type of allocation sites, read from the
   .cmt files (-bin-annot) of the traced program's build.

   `ocaml-memprof ... --by type` starts it when a stack's type is not in
   its cache (once per command); it is OCaml because only the compiler's
   own library reads a .cmt (a marshalled Typedtree of the compiler that
   wrote it).  It answers each chain as soon as it is read (the command
   asks while it reads its trace), and the rest when its input ends.

   Input (stdin), tab-separated lines, the dir and version lines first:
     dir DEPTH PATH          a directory to search for .cmt files, DEPTH
                             levels of subdirectories deep
     version VERSION         the OCaml version of the traced program: when
                             it is not this reader's, no .cmt is read
     chain KEY (FILE LINE START END FUNCTION)+
                             an allocation's stack, innermost frame first
                             (inlined frames as separate frames); KEY is
                             echoed back
   Output (stdout), tab-separated lines:
     type KEY DEPTH TYPE     TYPE as OCaml prints it, or "unknown (REASON)";
                             one line per chain, written at once; DEPTH:
                             the answer holds for every chain whose first
                             DEPTH frames are these, or "all": for this
                             chain only (it ran out of callers)
   and when the input ends:
     missing FILE            a source file of the chains with no .cmt found
     stale CMT               a .cmt that does not match its source or this
                             compiler, whose types were not used
     foreign VERSION         this reader's OCaml version, when the traced
                             program's is another one
     read FILE               a .cmt or source file read (the answers hold
                             while these files do not change)

   LINE, START and END are a trace location's: START and END count
   characters from the beginning of LINE (END may lie beyond it), as the
   compiler's debug information does. *)

open Types

(* ---- finding .cmt files ---- *)

(* Every .cmt under the search directories, by module name in lower case
   ("foo" for foo.cmt, Foo.cmt and dune's lib__Foo.cmt). *)
let cmt_index : (string, string) Hashtbl.t = Hashtbl.create 1024

(* Index of the last "__" in [s]. *)
let last_double_underscore s =
  let rec from i =
    if i < 0 then None else if s.[i] = '_' && s.[i + 1] = '_' then Some i else from (i - 1)
  in
  from (String.length s - 2)

let module_key base =
  let base = Filename.remove_extension base in
  let base =
    match last_double_underscore base with
    | Some i -> String.sub base (i + 2) (String.length base - i - 2)
    | None -> base
  in
  String.lowercase_ascii base

let rec scan_dir depth dir =
  match Sys.readdir dir with
  | exception Sys_error _ -> ()
  | entries ->
    Array.sort compare entries;
    Array.iter
      (fun e ->
        let p = Filename.concat dir e in
        if Filename.check_suffix e ".cmt" then Hashtbl.add cmt_index (module_key e) p
        else if depth > 0 && e <> ".git" && e <> "node_modules"
                && (try Sys.is_directory p with Sys_error _ -> false)
        then scan_dir (depth - 1) p)
      entries

(* Dune and the standard library name a library's module Lib__M: show
   Lib.M, as users write it. *)
let public_ident id =
  let name = Ident.name id in
  if Ident.global id && last_double_underscore name <> None
  then
    let parts = String.split_on_char '_' name |> List.filter (( <> ) "") in
    Path.Pident (Ident.create_persistent (String.concat "." parts))
  else Path.Pident id

(* ---- one .cmt, loaded once ---- *)

(* [toplevel]: bound at the top of its unit (not in a module, functor or
   function). *)
type binding = { name : string; scheme : type_expr; toplevel : bool }

type unit_info = {
  cmt_path : string;
  (* Expressions by exact location (line, start, end) of [file], each
     with the innermost let-binding enclosing it (the function whose
     scheme its free variables belong to). *)
  exprs : (int * int * int, Typedtree.expression * binding option) Hashtbl.t;
  (* The applications of function g in the binding of f, by (f, g): the
     type g is applied at there, and f's binding. *)
  calls : (string * string, type_expr * binding) Hashtbl.t;
  (* Where the identifiers of types and modules defined in the unit are
     visible from outside: [t] of [module M] in foo.ml is Foo.M.t. *)
  qualify : Path.t Ident.Tbl.t;
}

type lookup = Unit of unit_info | Missing | Stale of string

let stale_cmts = Hashtbl.create 16
let missing_files = Hashtbl.create 16

let source_location_key (loc : Location.t) =
  let s = loc.loc_start and e = loc.loc_end in
  (s.pos_lnum, s.pos_cnum - s.pos_bol, e.pos_cnum - s.pos_bol)

let index_structure (str : Typedtree.structure) unit_path =
  let exprs = Hashtbl.create 4096 and qualify = Ident.Tbl.create 64 in
  let calls = Hashtbl.create 1024 in
  let bindings = ref [] and prefix = ref unit_path in
  let open Tast_iterator in
  let expr sub (e : Typedtree.expression) =
    if not e.exp_loc.loc_ghost then
      Hashtbl.add exprs (source_location_key e.exp_loc)
        (e, match !bindings with t :: _ -> Some t | [] -> None);
    (* A first-class module's block is its structure's: its allocation has
       the structure's location. *)
    (match e.exp_desc with
     | Texp_pack me when not me.mod_loc.loc_ghost ->
       Hashtbl.add exprs (source_location_key me.mod_loc)
         (e, match !bindings with t :: _ -> Some t | [] -> None)
     | _ -> ());
    (match e.exp_desc, !bindings with
     | Texp_apply ({ exp_desc = Texp_ident (p, _, _); exp_type; _ }, _), b :: _ ->
       Hashtbl.add calls (b.name, Path.last p) (exp_type, b)
     | _ -> ());
    default_iterator.expr sub e
  in
  (* Only functions: the variables of a let-bound value inside a function
     (let ndata = Array.make n Empty in ...) are the function's. *)
  let value_binding sub (vb : Typedtree.value_binding) =
    match vb.vb_expr.exp_desc, Typedtree.pat_bound_idents vb.vb_pat with
    | Texp_function _, [ id ] ->
      let toplevel = !bindings = [] && Path.same !prefix unit_path in
      bindings := { name = Ident.name id; scheme = vb.vb_pat.pat_type; toplevel } :: !bindings;
      default_iterator.value_binding sub vb;
      bindings := List.tl !bindings
    | _ -> default_iterator.value_binding sub vb
  in
  let type_declaration sub (td : Typedtree.type_declaration) =
    Ident.Tbl.add qualify td.typ_id (Path.Pdot (!prefix, Ident.name td.typ_id));
    default_iterator.type_declaration sub td
  in
  let in_module name f =
    let saved = !prefix in
    prefix := Path.Pdot (saved, name);
    f ();
    prefix := saved
  in
  let module_binding sub (mb : Typedtree.module_binding) =
    match mb.mb_id with
    | Some id ->
      Ident.Tbl.add qualify id (Path.Pdot (!prefix, Ident.name id));
      in_module (Ident.name id) (fun () -> default_iterator.module_binding sub mb)
    | None -> default_iterator.module_binding sub mb
  in
  let module_expr sub (me : Typedtree.module_expr) =
    match me.mod_desc with
    | Tmod_functor (Named (Some id, _, _), _) ->
      (* The functor's body types are F(X).t, X the parameter. *)
      let saved = !prefix in
      prefix := Path.Papply (saved, Path.Pident id);
      default_iterator.module_expr sub me;
      prefix := saved
    | _ -> default_iterator.module_expr sub me
  in
  let it = { default_iterator with expr; value_binding; type_declaration; module_binding;
                                   module_expr } in
  it.structure it str;
  (exprs, qualify, calls)

(* The .cmt files read and the sources checked: the caller's cache of the
   answers holds while none of them changes. *)
let files_read = Hashtbl.create 64

let digest_file path =
  match Digest.file path with
  | d -> Hashtbl.replace files_read path (); Some d
  | exception Sys_error _ -> None

(* The source a .cmt was compiled from, when it can be found: as the
   compiler saw it (build directory + source file), or beside the .cmt. *)
let source_digest_ok (cmt : Cmt_format.cmt_infos) cmt_path =
  match cmt.cmt_source_digest, cmt.cmt_sourcefile with
  | Some d, Some src ->
    let candidates =
      [ Filename.concat cmt.cmt_builddir src;
        Filename.concat (Filename.dirname cmt_path) (Filename.basename src) ]
    in
    (match List.find_map digest_file candidates with
     | Some d' -> d = d'
     | None -> true (* no source: nothing to check against *))
  | _ -> true

let units : (string, lookup) Hashtbl.t = Hashtbl.create 64

(* The .cmt of source [file] (as the trace names it): the first indexed
   .cmt of the same module whose source file is [file] (or ends with it,
   or has its base name). *)
let load_unit file =
  match Hashtbl.find_opt units file with
  | Some u -> u
  | None ->
    let base = Filename.basename file in
    let candidates = Hashtbl.find_all cmt_index (module_key base) |> List.rev in
    let matches (cmt : Cmt_format.cmt_infos) =
      match cmt.cmt_sourcefile with
      | Some src ->
        src = file || String.ends_with ~suffix:("/" ^ file) src
        || Filename.basename src = base
      | None -> false
    in
    let rec first = function
      | [] -> Missing
      | path :: rest ->
        Hashtbl.replace files_read path ();
        (match Cmt_format.read_cmt path with
         | exception _ ->
           (* Another compiler's .cmt (or not one): its types cannot be read. *)
           Hashtbl.replace stale_cmts path ();
           (match first rest with Missing -> Stale path | r -> r)
         | cmt when not (matches cmt) -> first rest
         | cmt when not (source_digest_ok cmt path) ->
           Hashtbl.replace stale_cmts path ();
           (match first rest with Missing -> Stale path | r -> r)
         | cmt ->
           match cmt.cmt_annots with
           | Implementation str ->
             let unit_path = public_ident (Ident.create_persistent cmt.cmt_modname) in
             let exprs, qualify, calls = index_structure str unit_path in
             Unit { cmt_path = path; exprs; qualify; calls }
           | _ -> first rest)
    in
    let u = first candidates in
    if u = Missing then Hashtbl.replace missing_files file ();
    Hashtbl.replace units file u;
    u

(* ---- types ---- *)

let rec qualify_path u (p : Path.t) : Path.t =
  match p with
  | Pident id ->
    (match Ident.Tbl.find_opt u.qualify id with
     | Some q -> q
     | None -> public_ident id)
  | Pdot (q, s) -> Pdot (qualify_path u q, s)
  | Papply (f, a) -> Papply (qualify_path u f, qualify_path u a)
  | Pextra_ty (q, e) -> Pextra_ty (qualify_path u q, e)

(* Fresh copies of [tys] (sharing kept among them, so a variable of a
   function's scheme stays one variable in the copies of its body's
   types), with the unit's paths qualified.  Later steps link the copies'
   variables; the .cmt's own types are never changed. *)
let copy_types u tys =
  let seen = Hashtbl.create 64 in
  let rec copy ty =
    match Hashtbl.find_opt seen (get_id ty) with
    | Some c -> c
    | None ->
      let stub = Btype.newgenstub ~scope:Ident.highest_scope in
      Hashtbl.add seen (get_id ty) stub;
      let desc =
        match get_desc ty with
        | Tconstr (Pextra_ty (p, Pcstr_ty _), args, _) ->
          (* The inline record of constructor C of type t is t's block. *)
          Tconstr (qualify_path u p, List.map copy args, ref Mnil)
        | Tconstr (p, args, _) -> Tconstr (qualify_path u p, List.map copy args, ref Mnil)
        | Tvariant row ->
          Tvariant (Btype.copy_row copy true row true (copy (row_more row)))
        | d -> Btype.copy_type_desc ~keep_names:true copy d
      in
      Transient_expr.set_stub_desc stub desc;
      stub
  in
  List.map copy tys

let has_variables ty =
  let seen = Hashtbl.create 16 in
  let rec go ty =
    if Hashtbl.mem seen (get_id ty) then false
    else begin
      Hashtbl.add seen (get_id ty) ();
      match get_desc ty with
      | Tvar _ -> true
      | _ -> Btype.fold_type_expr (fun acc t -> acc || go t) false ty
    end
  in
  go ty

let children ty = List.rev (Btype.fold_type_expr (fun acc t -> t :: acc) [] ty)

(* Instantiate the variables of [scheme] (a callee's type, copied) with
   what [instance] (its type at a call, copied) has in their place. *)
let bind_variables scheme instance =
  let seen = Hashtbl.create 16 in
  let rec go s i =
    if not (Hashtbl.mem seen (get_id s)) then begin
      Hashtbl.add seen (get_id s) ();
      match get_desc s, get_desc i with
      | Tvar _, _ -> if get_id s <> get_id i then link_type s i
      | Tconstr (p, a, _), Tconstr (q, b, _)
        when Path.last p = Path.last q && List.length a = List.length b ->
        List.iter2 go a b
      | Tarrow _, Tarrow _ | Ttuple _, Ttuple _ ->
        let a = children s and b = children i in
        if List.length a = List.length b then List.iter2 go a b
      | _ -> ()
    end
  in
  go scheme instance

let print_type ty =
  let b = Buffer.create 64 in
  let ppf = Format.formatter_of_buffer b in
  Format.pp_set_margin ppf max_int;
  Format.fprintf ppf "%a@?" Printtyp.type_expr ty;
  Buffer.contents b

(* [index]: the frame's position in the chain, frames without a location
   counted.  The function's name is not kept: an answer depends on the
   frames' locations only (the caller's key). *)
type frame = { index : int; file : string; line : int; start : int; stop : int }

(* What an answer depends on: the first [!frames_used] frames of its
   chain, and when [!ran_out] (a type with variables and no caller left
   to tell, or a failure) the chain ending there too.  The caller then
   reuses the answer for every chain that starts with those frames, which
   makes its cache about 8 times smaller.  Set as frames are examined,
   reset for each chain. *)
let frames_used = ref 0
let ran_out = ref false
let examine f = frames_used := max !frames_used (f.index + 1)

let describe f = Printf.sprintf "%s:%d:%d-%d" f.file f.line f.start f.stop

(* Allocating expressions: those that build a block; when several
   expressions share the location, the outermost such one. *)
let allocates (e : Typedtree.expression) =
  match e.exp_desc with
  | Texp_construct _ | Texp_record _ | Texp_tuple _ | Texp_array _ | Texp_function _
  | Texp_apply _ | Texp_variant _ | Texp_object _ | Texp_new _ | Texp_lazy _
  | Texp_constant _ | Texp_pack _ | Texp_letop _ | Texp_ident _ | Texp_send _
  | Texp_instvar _ | Texp_override _ | Texp_setfield _ | Texp_field _
  | Texp_extension_constructor _ -> true
  | _ -> false

let exprs_at u f =
  List.rev (Hashtbl.find_all u.exprs (f.line, f.start, f.stop))

type allocation = Found of unit_info * type_expr * binding option | Failed of string

let allocation_at f =
  examine f;
  match load_unit f.file with
  | Missing -> Failed ("no .cmt for " ^ f.file)
  | Stale p -> Failed ("stale .cmt: " ^ p)
  | Unit u ->
    match List.find_opt (fun (e, _) -> allocates e) (exprs_at u f) with
    | Some (e, binding) -> Found (u, e.exp_type, binding)
    | None ->
      (* Not the frame's function: an answer depends on the frames' keys
         (file and location) only. *)
      Failed (Printf.sprintf "no expression at %s in %s" (describe f) u.cmt_path)

(* At caller frame [f], the application of a named function: its name,
   the type it is applied at, and the binding around the application. *)
let application_at f =
  examine f;
  match load_unit f.file with
  | Missing | Stale _ -> None
  | Unit u ->
    List.find_map
      (fun ((e : Typedtree.expression), outer) ->
        match e.exp_desc with
        | Texp_apply ({ exp_desc = Texp_ident (p, _, _); exp_type; _ }, _) ->
          Some (p, u, exp_type, outer)
        | _ -> None)
      (exprs_at u f)

(* [ty] and the scheme of [binding] copied together: their variables are
   the same. *)
let copy_with_binding u ty binding =
  match binding with
  | Some b ->
    (match copy_types u [ty; b.scheme] with
     | [t; s] -> t, Some { b with scheme = s }
     | _ -> assert false)
  | None -> List.hd (copy_types u [ty]), None

(* The allocation's type, its variables instantiated by the callers, frame
   by frame, until none is left or a caller does not tell.  A caller tells
   when it applies the function whose binding holds the allocation; or,
   when that function was left out of the stack by a tail call (Hashtbl's
   replace ends with resize (...), so the stack of resize's allocation goes
   from the caller of replace to resize), when the applied function is in
   the same unit and applies the allocating one at exactly one place: its
   instance there, then the caller's instance of the applied function.
   Any other caller (a function passed as an argument) tells nothing. *)
let rec resolve frames =
  match frames with
  | [] -> "unknown (empty stack)"
  | { file = ""; _ } :: _ -> "unknown (no source location: build with -g)"
  | alloc :: callers ->
    (* Frames without a location (code without debug information) tell
       nothing; a caller past them still has to apply the same function. *)
    let callers = List.filter (fun f -> f.file <> "") callers in
    if Filename.basename alloc.file = "camlinternalOO.ml" then object_type callers else
    match allocation_at alloc with
    | Failed reason -> "unknown (" ^ reason ^ ")"
    | Found (u, ty, binding) ->
      let rec up u ty binding callers =
        match binding, callers with
        | Some b, f :: rest when has_variables ty ->
          (match application_at f with
           | Some (p, u', applied, outer) when Path.last p = b.name ->
             let applied, outer = copy_with_binding u' applied outer in
             bind_variables b.scheme applied;
             up u' ty outer rest
           | Some (p, u', applied, outer) ->
             (* A function of another unit, named through units only
                (Stdlib.Hashtbl.replace), is one of its toplevel ones
                (hashtbl.ml has a replace in its functor too). *)
             let rec through_units : Path.t -> bool = function
               | Pident m -> Ident.global m
               | Pdot (q, _) -> through_units q
               | _ -> false
             in
             let in_unit, candidates =
               match p with
               | Pident _ -> u', Hashtbl.find_all u'.calls (Path.last p, b.name)
               | Pdot (q, _) when through_units q ->
                 u, List.filter (fun (_, (c : binding)) -> c.toplevel)
                      (Hashtbl.find_all u.calls (Path.last p, b.name))
               | _ -> u, []
             in
             (match candidates with
              | [ (call, tail_caller) ] ->
                let call, tail_caller = copy_with_binding in_unit call (Some tail_caller) in
                bind_variables b.scheme call;
                let tc = Option.get tail_caller in
                let applied, outer = copy_with_binding u' applied outer in
                bind_variables tc.scheme applied;
                up u' ty outer rest
              | _ -> ty)
           | None -> ty)
        | Some _, [] when has_variables ty -> ran_out := true; ty
        | _ -> ty
      in
      let ty, binding = copy_with_binding u ty binding in
      print_type (up u ty binding callers)

(* CamlinternalOO builds objects as Obj.t: an object's type is that of the
   program's expression around the allocation (object ... end, new c, or
   the application of a function that returns one): the first caller
   outside CamlinternalOO, when its type is an object's. *)
and object_type callers =
  match List.find_opt (fun f -> examine f; Filename.basename f.file <> "camlinternalOO.ml") callers with
  | None -> ran_out := true; "unknown (an object, built by CamlinternalOO)"
  | Some f ->
    match load_unit f.file with
    | Missing -> "unknown (no .cmt for " ^ f.file ^ ")"
    | Stale p -> "unknown (stale .cmt: " ^ p ^ ")"
    | Unit u ->
      match exprs_at u f with
      | (e, _) :: _ ->
        (match get_desc (Ctype.expand_head Env.empty e.exp_type) with
         | Tobject _ when not (has_variables e.exp_type) ->
           print_type (List.hd (copy_types u [e.exp_type]))
         | Tconstr _ when (match e.exp_desc with Texp_new _ -> true | _ -> false) ->
           print_type (List.hd (copy_types u [e.exp_type]))
         | _ -> "unknown (an object, built by CamlinternalOO)")
      | [] -> "unknown (an object, built by CamlinternalOO)"

(* ---- the protocol ---- *)

let rec frames_of index = function
  | file :: line :: start :: stop :: _function :: rest ->
    { index; file; line = int_of_string line; start = int_of_string start;
      stop = int_of_string stop } :: frames_of (index + 1) rest
  | [] -> []
  | _ -> failwith "a frame has 5 fields"

(* Another compiler's .cmt files cannot be read, and the standard
   library's .cmt files found here (this compiler's) would not be the
   program's: a trace of another version gets no type at all. *)
let foreign_version trace_version =
  Printf.sprintf "unknown (a program of OCaml %s: this reader reads OCaml %s's .cmt files)"
    trace_version Sys.ocaml_version

let () =
  Clflags.real_paths := true;
  let stdlib_scanned = ref false and foreign = ref None in
  (try
     while true do
       match String.split_on_char '\t' (input_line stdin) with
       | [ "dir"; depth; path ] -> scan_dir (int_of_string depth) path
       | [ "version"; v ] -> if v <> Sys.ocaml_version then foreign := Some v
       | "chain" :: key :: frames ->
         (* Searched last: the program's own directories come first. *)
         if not !stdlib_scanned then begin
           scan_dir 1 Config.standard_library;
           stdlib_scanned := true
         end;
         frames_used := 1;
         ran_out := false;
         let ty =
           match !foreign with
           | Some v -> foreign_version v
           | None ->
             (try resolve (frames_of 0 frames)
              with e -> ran_out := true; "unknown (" ^ Printexc.to_string e ^ ")")
         in
         (* One line per answer: a type printed over several lines is joined. *)
         let ty = String.concat " " (List.filter (( <> ) "") (String.split_on_char '\n' ty)) in
         let depth = if !ran_out then "all" else string_of_int !frames_used in
         Printf.printf "type\t%s\t%s\t%s\n%!" key depth ty
       | [ "" ] -> ()
       | l -> failwith ("bad input line: " ^ String.concat "\t" l)
     done
   with End_of_file -> ());
  Hashtbl.iter (fun f () -> Printf.printf "missing\t%s\n" f) missing_files;
  Hashtbl.iter (fun p () -> Printf.printf "stale\t%s\n" p) stale_cmts;
  if !foreign <> None then Printf.printf "foreign\t%s\n" Sys.ocaml_version;
  Hashtbl.iter (fun p () -> Printf.printf "read\t%s\n" p) files_read
