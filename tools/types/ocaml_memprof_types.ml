(* ocaml-memprof-types: the OCaml type of allocation sites, and of the
   module globals of heap snapshots with the layout of their types, read
   from the .cmt files (-bin-annot) of the traced program's build.

   `ocaml-memprof ... --by type` starts it when a stack's type is not in
   its cache (once per command), `retainers` once per snapshot; it is
   OCaml because only the compiler's own library reads a .cmt (a
   marshalled Typedtree of the compiler that wrote it).  It answers each
   chain as soon as it is read (the command asks while it reads its
   trace), and the rest (globals and sites too) when its input ends.

   Input (stdin), tab-separated lines, the dir and version lines first:
     dir DEPTH PATH          a directory to search for .cmt files, DEPTH
                             levels of subdirectories deep
     version VERSION         the OCaml version of the traced program: when
                             it is not this reader's, no .cmt is read for
                             the chains (retainers sends no version)
     chain KEY (FILE LINE START END FUNCTION)+
                             an allocation's stack, innermost frame first
                             (inlined frames as separate frames); KEY is
                             echoed back
   For heap snapshots (retainers, tools/analyses/snaptypes.c):
     global MODULE           the global block of MODULE (Foo.Bar for
                             unit Foo__Bar) to type
     site KEY (FILE LINE START END FUNCTION)+
                             as chain, for a sampled block of a snapshot
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
     listing DEPTH HASH DIR  a directory searched DEPTH levels deep and the
                             hash of its .cmt files' and subdirectories'
                             names (see [listings]): the answers hold while
                             it stays the same

   and for heap snapshots, when the input ends too:
     field MODULE INDEX NAME TID   field INDEX of MODULE's global block
                             holds value NAME, of type number TID
     site KEY TID            the type number of a site (0: unknown)
     nomodule MODULE REASON  MODULE's globals cannot be typed
     tname TID TEXT          type number TID is TEXT as OCaml prints it
     shape TID KIND [ELEM]   what its values are in memory: unknown, imm
                             (never a block), string, float, closure,
                             custom, object, lazy, floatarray, array (of
                             type ELEM), blocks (then its alt lines)
     alt TID TAG SIZE (NAME FTID)*
                             one block layout of type TID: its tag, size
                             and each field's edge name and type number

   LINE, START and END are a trace location's: START counts characters
   from the beginning of LINE, END from the beginning of the line the
   expression ends on (not given), as the runtime's loc_end_chr does. *)

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

(* The .cmt files read and the sources checked: the caller's cache of the
   answers holds while none of them changes. *)
let files_read = Hashtbl.create 64

(* What each directory searched held that the search depends on, by
   (directory, depth): its .cmt files' names and, when DEPTH > 0, the
   subdirectories it went down into (NAME/), sorted, each ended by a
   newline, hashed with 64-bit FNV-1a.  The caller's cache holds while
   these listings stay the same (tools/analyses/types.c computes the
   same hash): a .cmt that appears or disappears, such as the one
   dune build @check writes for an executable, drops it, as an answer
   "no .cmt" or a generic type for lack of a caller's .cmt may then be
   wrong; any other file may come and go. *)
let listings : (string * int, string) Hashtbl.t = Hashtbl.create 64

let fnv1a64 names =
  let h = ref 0xcbf29ce484222325L in
  let byte c = h := Int64.mul (Int64.logxor !h (Int64.of_int (Char.code c))) 0x100000001b3L in
  List.iter (fun n -> String.iter byte n; byte '\n') names;
  Printf.sprintf "%016Lx" !h

(* Each entry of [dir] that a search DEPTH levels deep uses: its .cmt
   files and, when DEPTH > 0, its subdirectories, sorted. *)
let searched_entries depth dir =
  match Sys.readdir dir with
  | exception Sys_error _ -> None
  | entries ->
    Array.sort compare entries;
    Some
      (List.filter_map
         (fun e ->
           if Filename.check_suffix e ".cmt" then Some (`Cmt e)
           else if depth > 0 && e <> ".git" && e <> "node_modules"
                   && (try Sys.is_directory (Filename.concat dir e) with Sys_error _ -> false)
           then Some (`Dir e)
           else None)
         (Array.to_list entries))

let note_listing depth dir entries =
  Hashtbl.replace listings (dir, depth)
    (fnv1a64 (List.sort compare (List.map (function `Cmt e -> e | `Dir e -> e ^ "/") entries)))

let rec scan_dir depth dir =
  match searched_entries depth dir with
  | None -> ()
  | Some entries ->
    note_listing depth dir entries;
    List.iter
      (function
        | `Cmt e -> Hashtbl.add cmt_index (module_key e) (Filename.concat dir e)
        | `Dir e -> scan_dir (depth - 1) (Filename.concat dir e))
      entries

(* The parts of [s] between its "__" (Stdlib__In_channel: Stdlib,
   In_channel), empty ones left out. *)
let split_double_underscore s =
  let rec go acc start i =
    if i + 1 >= String.length s then List.rev (String.sub s start (String.length s - start) :: acc)
    else if s.[i] = '_' && s.[i + 1] = '_' then go (String.sub s start (i - start) :: acc) (i + 2) (i + 2)
    else go acc start (i + 1)
  in
  List.filter (( <> ) "") (go [] 0 0)

(* Dune compiles an executable's module M as the unit Dune__exe__M; the
   executable's symbols are read as M (tools/formats/elf_symbols.c), so a
   snapshot's global, and its types, are named M, as the source is. *)
let dune_exe_prefix = "Dune__exe__"

let strip_dune_exe name =
  let n = String.length dune_exe_prefix in
  if String.length name > n && String.starts_with ~prefix:dune_exe_prefix name
  then String.sub name n (String.length name - n)
  else name

(* Dune and the standard library name a library's module Lib__M: show
   Lib.M, as users write it (M for an executable's Dune__exe__M). *)
let public_ident id =
  let name = Ident.name id in
  if Ident.global id && last_double_underscore name <> None
  then
    let parts = split_double_underscore (strip_dune_exe name) in
    Path.Pident (Ident.create_persistent (String.concat "." parts))
  else Path.Pident id

(* ---- one .cmt, loaded once ---- *)

(* [id]: the function's identifier, which a call in its unit names (a
   name alone may be another function's); [toplevel]: bound at the top of
   its unit (not in a module, functor or function). *)
type binding = {
  id : Ident.t;
  name : string;
  scheme : type_expr;
  toplevel : bool;
  (* Bound at the top of the unit's structure or of a submodule's (not in
     a functor, not inside another let): the submodule's path (Promise
     for Store.Promise.make; [] at the top). *)
  modpath : string list option;
  (* Bound at the top of a functor's body: the functor's path (Make for
     Map.Make's add). *)
  functor_body : string list option;
}

type unit_info = {
  cmt_path : string;
  modname : string;   (* the unit's name: Stdlib__Hashtbl *)
  (* The last function of each name at the top of each module (false,
     its path, name) and functor body (true, ...). *)
  last_top : (bool * string list * string, Ident.t) Hashtbl.t;
  (* Expressions by location as a trace gives it (line, start, end: see
     [source_location_key]), each with the innermost let-binding enclosing
     it (the function whose scheme its free variables belong to) and the
     line it ends on. *)
  exprs : (int * int * int, Typedtree.expression * binding option * int) Hashtbl.t;
  (* The applications of function g in the binding of f, by (f, g): the
     type g is applied at there, f's binding and g's path there. *)
  calls : (string * string, type_expr * binding * Path.t) Hashtbl.t;
  (* Where the identifiers of types and modules defined in the unit are
     visible from outside: [t] of [module M] in foo.ml is Foo.M.t. *)
  qualify : Path.t Ident.Tbl.t;
}

type lookup = Unit of unit_info | Missing | Stale of string

let stale_cmts = Hashtbl.create 16
let missing_files = Hashtbl.create 16

(* A trace's location: the start line, the start column and the end
   column *on the end line*, which the trace does not give (the tracer
   records the runtime's loc_end_chr, as upstream's backtraces print it,
   not loc_end_offset, Printexc's end_char).  So an expression spanning
   lines (a closure, fun x -> ... over three lines) is found by the
   column its last line ends at; two expressions of one start and end
   column but different end lines are told apart by nothing ([exprs_at]
   gives up on them). *)
let source_location_key (loc : Location.t) =
  let s = loc.loc_start and e = loc.loc_end in
  (s.pos_lnum, s.pos_cnum - s.pos_bol, e.pos_cnum - e.pos_bol)

let index_structure (str : Typedtree.structure) unit_path =
  let exprs = Hashtbl.create 4096 and qualify = Ident.Tbl.create 64 in
  let calls = Hashtbl.create 1024 in
  let bindings = ref [] and prefix = ref unit_path and depth = ref 0 in
  let last_top = Hashtbl.create 256 in
  let open Tast_iterator in
  let expr sub (e : Typedtree.expression) =
    if not e.exp_loc.loc_ghost then
      Hashtbl.add exprs (source_location_key e.exp_loc)
        (e, (match !bindings with t :: _ -> Some t | [] -> None), e.exp_loc.loc_end.pos_lnum);
    (* A first-class module's block is its structure's: its allocation has
       the structure's location. *)
    (match e.exp_desc with
     | Texp_pack me when not me.mod_loc.loc_ghost ->
       Hashtbl.add exprs (source_location_key me.mod_loc)
         (e, (match !bindings with t :: _ -> Some t | [] -> None), me.mod_loc.loc_end.pos_lnum)
     | _ -> ());
    (match e.exp_desc, !bindings with
     | Texp_apply ({ exp_desc = Texp_ident (p, _, _); exp_type; _ }, _), b :: _ ->
       Hashtbl.add calls (b.name, Path.last p) (exp_type, b, p)
     | _ -> ());
    default_iterator.expr sub e
  in
  (* Only functions: the variables of a let-bound value inside a function
     (let ndata = Array.make n Empty in ...) are the function's. *)
  let value_binding sub (vb : Typedtree.value_binding) =
    match vb.vb_expr.exp_desc, Typedtree.pat_bound_idents vb.vb_pat with
    | Texp_function _, [ id ] ->
      (* The closure of let f x = ... is allocated by the function around
         it, whose variables its type has: indexed with that binding, and
         first (the iterator adds it again, inside f's).  Its location is
         ghost (from the first parameter to the body's end) but the
         compiler's debug information has it. *)
      let e = vb.vb_expr in
      Hashtbl.add exprs (source_location_key e.exp_loc)
        (e, (match !bindings with t :: _ -> Some t | [] -> None), e.exp_loc.loc_end.pos_lnum);
      (* Bound at the top of a structure (not inside any let): the path
         of its module inside the unit, unless it is a functor's. *)
      let rec rel (p : Path.t) =
        if Path.same p unit_path then Some []
        else match p with Pdot (q, m) -> Option.map (fun l -> l @ [ m ]) (rel q) | _ -> None
      in
      let modpath, functor_body =
        if !depth > 0 then None, None
        else match !prefix with
          | Papply (f, Pident _) -> None, rel f
          | p -> rel p, None
      in
      (* The last of its name there is the one the module exports. *)
      (match modpath, functor_body with
       | Some m, _ -> Hashtbl.replace last_top (false, m, Ident.name id) id
       | _, Some m -> Hashtbl.replace last_top (true, m, Ident.name id) id
       | None, None -> ());
      bindings := { id; name = Ident.name id; scheme = vb.vb_pat.pat_type;
                    toplevel = modpath = Some []; modpath; functor_body } :: !bindings;
      incr depth;
      default_iterator.value_binding sub vb;
      decr depth;
      bindings := List.tl !bindings
    | _ ->
      incr depth;
      default_iterator.value_binding sub vb;
      decr depth
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
  (* A class defines types too (c, its object type): named from outside
     as types are, and so never taken for a locally abstract type. *)
  let class_infos : 'a. 'a Typedtree.class_infos -> unit = fun ci ->
    List.iter
      (fun id -> Ident.Tbl.add qualify id (Path.Pdot (!prefix, Ident.name id)))
      [ ci.ci_id_class; ci.ci_id_class_type; ci.ci_id_object ]
  in
  let class_declaration sub cd = class_infos cd; default_iterator.class_declaration sub cd in
  let class_description sub cd = class_infos cd; default_iterator.class_description sub cd in
  let class_type_declaration sub cd =
    class_infos cd; default_iterator.class_type_declaration sub cd
  in
  let it = { default_iterator with expr; value_binding; type_declaration; module_binding;
                                   module_expr; class_declaration; class_description;
                                   class_type_declaration } in
  it.structure it str;
  (exprs, qualify, calls, last_top)

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
             let exprs, qualify, calls, last_top = index_structure str unit_path in
             Unit { cmt_path = path; modname = cmt.cmt_modname; last_top; exprs; qualify; calls }
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
  let seen = Hashtbl.create 64 and locals = Ident.Tbl.create 8 in
  let rec copy ty =
    match Hashtbl.find_opt seen (get_id ty) with
    | Some c -> c
    | None ->
      match get_desc ty with
      | Tconstr (Pident id, [], _) when not (Ident.global id) && not (Ident.Tbl.mem u.qualify id) ->
        (* A locally abstract type (fun (type x) ..., let rec f : type x. ...),
           maybe equal to another in a GADT match's branch: the function's
           type variable, which no caller instantiates (the function's
           scheme has its own); printed 'x, never as the meaningless x. *)
        (match Ident.Tbl.find_opt locals id with
         | Some v -> v
         | None ->
           let v = Btype.newgenty (Tvar (Some (Ident.name id))) in
           Ident.Tbl.add locals id v;
           Hashtbl.add seen (get_id ty) v;
           v)
      | _ ->
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

(* The expressions at frame [f]'s location, outermost first; none when
   they end on different lines (which of them the frame is, the trace
   does not say: see [source_location_key]). *)
let ambiguous = ref false

let exprs_at u f =
  match List.rev (Hashtbl.find_all u.exprs (f.line, f.start, f.stop)) with
  | (_, _, l) :: rest as all when List.exists (fun (_, _, l') -> l' <> l) rest ->
    ignore all; ambiguous := true; []
  | all -> List.map (fun (e, b, _) -> (e, b)) all

type allocation = Found of unit_info * type_expr * binding option | Failed of string

(* A locally abstract type: x of fun (type x) ... or let rec f : type x. ... *)
let local_abstract u ty =
  match get_desc ty with
  | Tconstr (Pident id, [], _) -> not (Ident.global id) && not (Ident.Tbl.mem u.qualify id)
  | _ -> false

(* The type of [e]; for a function whose type is a locally abstract type
   x (its branch of a GADT match knows x = z -> a: CamlinternalFormat's
   fun x -> ... closures), the function type of its parameters and body,
   z -> a, equal to it there.  (Its locally abstract types then print as
   variables: see [copy_types].) *)
let closure_type u (e : Typedtree.expression) =
  match e.exp_desc with
  | Texp_function (params, body) when local_abstract u e.exp_type ->
    let param (p : Typedtree.function_param) =
      match p.fp_arg_label, p.fp_kind with
      | (Nolabel | Labelled _), Tparam_pat pat -> Some (p.fp_arg_label, pat.pat_type)
      | Optional _, Tparam_pat pat -> Some (p.fp_arg_label, pat.pat_type)
      | Optional _, Tparam_optional_default (pat, _) ->
        Some (p.fp_arg_label, Predef.type_option pat.pat_type)
      | _ -> None
    in
    let last =
      match body with
      | Tfunction_body b -> Some (None, b.exp_type)
      | Tfunction_cases { cases = c :: _; _ } -> Some (Some c.c_lhs.pat_type, c.c_rhs.exp_type)
      | Tfunction_cases _ -> None
    in
    let params = List.map param params in
    (match last with
     | Some (extra, result) when List.for_all Option.is_some params ->
       let arrow (l, a) r = Btype.newgenty (Tarrow (l, a, r, commu_ok)) in
       let result = match extra with Some a -> arrow (Nolabel, a) result | None -> result in
       List.fold_right (fun p r -> arrow (Option.get p) r) params result
     | _ -> e.exp_type)
  | _ -> e.exp_type

let allocation_at f =
  examine f;
  match load_unit f.file with
  | Missing -> Failed ("no .cmt for " ^ f.file)
  | Stale p -> Failed ("stale .cmt: " ^ p)
  | Unit u ->
    ambiguous := false;
    match List.find_opt (fun (e, _) -> allocates e) (exprs_at u f) with
    | Some (e, binding) -> Found (u, closure_type u e, binding)
    | None ->
      (* Not the frame's function: an answer depends on the frames' keys
         (file and location) only. *)
      if !ambiguous then
        Failed (Printf.sprintf "expressions ending on different lines at %s in %s"
                  (describe f) u.cmt_path)
      else Failed (Printf.sprintf "no expression at %s in %s" (describe f) u.cmt_path)

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

(* The units and modules of path [q] (Stdlib.Hashtbl, Pagecache.Request,
   or dune's Pagecache__.Request), to compare with a unit's name split
   the same way (Stdlib__Hashtbl, Pagecache__Request; Dune__exe__M is M). *)
let rec path_comps : Path.t -> string list option = function
  | Pident m when Ident.global m -> Some (split_double_underscore (strip_dune_exe (Ident.name m)))
  | Pdot (q, s) -> Option.map (fun l -> l @ [ s ]) (path_comps q)
  | _ -> None

let unit_comps u = split_double_underscore (strip_dune_exe u.modname)

(* The functor that module [q] (a path in unit [u']) is an application
   of, as written where it is defined (module SM = Map.Make (String):
   Map.Make); set once the units' modules are indexed (load_snap_unit). *)
let applied_functor : (unit_info -> Path.t -> Path.t option) ref = ref (fun _ _ -> None)

(* Whether module path [q] (in unit [u']) names the module of binding [b]
   of unit [u], which is the last of its name there: Store.Promise for
   make of module Promise of store.ml; a module SM = Map.Make (String) for
   the functions of Map.Make's body. *)
let names_module u' (q : Path.t) u (b : binding) =
  let last functor_body m =
    match Hashtbl.find_opt u.last_top (functor_body, m, b.name) with
    | Some id -> Ident.same id b.id
    | None -> false
  in
  match b.modpath, b.functor_body with
  | Some m, _ -> path_comps q = Some (unit_comps u @ m) && last false m
  | None, Some m ->
    (match !applied_functor u' q with
     | Some f -> path_comps f = Some (unit_comps u @ m) && last true m
     | None -> false)
  | None, None -> false

(* Whether [p], a function applied in unit [u'], is the function of
   binding [b] of unit [u]: its identifier in the same unit, or a
   toplevel function of [u] named through units.  Never by its name
   alone: another unit's add (a wrapper that tail-calls Hashtbl.add)
   would lend its type to Hashtbl.add's variables. *)
let refers_to u (b : binding) u' (p : Path.t) =
  match p with
  | Pident id -> u'.cmt_path = u.cmt_path && Ident.same id b.id
  | Pdot (q, name) -> name = b.name && names_module u' q u b
  | _ -> false

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
let rec resolve_type frames =
  match frames with
  | [] -> Error "empty stack"
  | { file = ""; _ } :: _ -> Error "no source location: build with -g"
  | alloc :: callers ->
    (* Frames without a location (code without debug information) tell
       nothing; a caller past them still has to apply the same function. *)
    let callers = List.filter (fun f -> f.file <> "") callers in
    if Filename.basename alloc.file = "camlinternalOO.ml" then object_type callers else
    match allocation_at alloc with
    | Failed reason -> Error reason
    | Found (u, ty, binding) ->
      let rec up u ty binding callers =
        match binding, callers with
        | Some b, f :: rest when has_variables ty ->
          (match application_at f with
           | Some (p, u', applied, outer) when refers_to u b u' p ->
             let applied, outer = copy_with_binding u' applied outer in
             bind_variables b.scheme applied;
             up u' ty outer rest
           | Some (p, u', applied, outer) ->
             (* The applied function F (u''s g, or a toplevel function of
                the allocation's unit named through units, Stdlib.Hashtbl.
                replace) applies the allocating one at exactly one place. *)
             let in_unit, candidates =
               match p with
               | Pident id ->
                 u', List.filter (fun (_, (c : binding), _) -> Ident.same c.id id)
                       (Hashtbl.find_all u'.calls (Path.last p, b.name))
               | Pdot (q, _) ->
                 u, List.filter (fun (_, (c : binding), _) -> names_module u' q u c)
                      (Hashtbl.find_all u.calls (Path.last p, b.name))
               | _ -> u, []
             in
             let candidates =
               List.filter (fun (_, _, callee) -> refers_to u b in_unit callee) candidates
             in
             (match List.map (fun (call, c, _) -> (call, c)) candidates with
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
      let ty = up u ty binding callers in
      if Filename.basename alloc.file = "camlinternalFormat.ml" then printf_acc ty callers;
      Ok ty

(* Printf's and Format's accumulator, (b, c) CamlinternalFormat.acc, is
   built while a format of type (a, b, c, d, e, f) format6 is printed:
   make_printf's type gives the accumulator the format's b and c.  Which
   format, when the stack does not go up to a function that names them?
   When the first caller with a location applies one of the printing
   functions below, that application's format: any other printing in
   between would have a frame there (a %a or %t printer is called from
   CamlinternalFormat, Printf or Format code that goes on after it).
   Never for the functions that take a continuation (ksprintf, kfprintf,
   kasprintf...): their continuation, called last, may end with a tail
   call to another printing, whose frames then vanish, leaving the
   ksprintf's caller as the first frame for an accumulator of another
   format (Printf.ksprintf (fun s -> Printf.eprintf "%s\n" s)). *)
and printf_acc ty callers =
  let is_var t = match get_desc t with Tvar _ -> true | _ -> false in
  let printers =
    [ ["Printf"], ["printf"; "eprintf"; "fprintf"; "sprintf"; "bprintf"];
      ["Format"], ["printf"; "eprintf"; "fprintf"; "sprintf"; "asprintf"; "dprintf"] ]
  in
  let printer (p : Path.t) =
    match p with
    | Pdot (Pdot (Pident std, m), f) when Ident.global std && Ident.name std = "Stdlib" ->
      List.exists (fun (ms, fs) -> List.mem m ms && List.mem f fs) printers
    | Pdot (Pident m, f) when Ident.global m ->
      List.exists (fun (ms, fs) ->
          List.exists (fun m' -> Ident.name m = "Stdlib__" ^ m') ms && List.mem f fs) printers
    | _ -> false
  in
  match get_desc ty, callers with
  | Tconstr (p, [ b; c ], _), f :: _
    when Path.name p = "CamlinternalFormat.acc" && is_var b && is_var c ->
    (match application_at f with
     | Some (fp, u', applied, _) when printer fp ->
       let rec formats t =
         match get_desc t with
         | Tarrow (_, a, r, _) ->
           (match get_desc a with
            | Tconstr (q, _ :: fb :: fc :: _, _)
              when List.mem (Path.last q) [ "format"; "format4"; "format6" ] ->
              (fb, fc) :: formats r
            | _ -> formats r)
         | _ -> []
       in
       (match formats applied with
        | [ (fb, fc) ] ->
          (match copy_types u' [ fb; fc ] with
           | [ fb; fc ] -> link_type b fb; link_type c fc
           | _ -> ())
        | _ -> ())
     | _ -> ())
  | _ -> ()

(* CamlinternalOO builds objects as Obj.t: an object's type is that of the
   program's expression around the allocation (object ... end, new c, or
   the application of a function that returns one): the first caller
   outside CamlinternalOO, when its type is an object's. *)
and object_type callers =
  match List.find_opt (fun f -> examine f; Filename.basename f.file <> "camlinternalOO.ml") callers with
  | None -> ran_out := true; Error "an object, built by CamlinternalOO"
  | Some f ->
    match load_unit f.file with
    | Missing -> Error ("no .cmt for " ^ f.file)
    | Stale p -> Error ("stale .cmt: " ^ p)
    | Unit u ->
      match exprs_at u f with
      | (e, _) :: _ ->
        (match get_desc (Ctype.expand_head Env.empty e.exp_type) with
         | Tobject _ when not (has_variables e.exp_type) ->
           Ok (List.hd (copy_types u [e.exp_type]))
         | Tconstr _ when (match e.exp_desc with Texp_new _ -> true | _ -> false) ->
           Ok (List.hd (copy_types u [e.exp_type]))
         | _ -> Error "an object, built by CamlinternalOO")
      | [] -> Error "an object, built by CamlinternalOO"

let resolve frames =
  match resolve_type frames with Ok ty -> print_type ty | Error reason -> "unknown (" ^ reason ^ ")"

(* ---- heap snapshots: module globals and the layout of types ---- *)

(* A unit loaded by module name (Stdlib__Hashtbl), for the globals of a
   snapshot and the type declarations of the types met from them. *)
type snap_unit = {
  info : unit_info;
  str : Typedtree.structure;
  (* Type declarations by their path inside the unit ("t", "M.t", and a
     functor's body's "Make.t"). *)
  decls : (string, Types.type_declaration) Hashtbl.t;
  (* Modules that are a functor's application (module SM = Map.Make
     (String)): their path inside the unit ("SM") -> the functor's path. *)
  applied : (string, Path.t) Hashtbl.t;
  (* The unit's signature (its .cmi), which orders its global block. *)
  sign : Types.signature option;
}

let snap_units : (string, (snap_unit, string) result) Hashtbl.t = Hashtbl.create 64

let rec index_decls decls applied prefix (items : Typedtree.structure_item list) =
  List.iter
    (fun (item : Typedtree.structure_item) ->
      match item.str_desc with
      | Tstr_type (_, tds) ->
        List.iter
          (fun (td : Typedtree.type_declaration) ->
            Hashtbl.replace decls (prefix ^ Ident.name td.typ_id) td.typ_type)
          tds
      | Tstr_module { mb_id = Some id; mb_expr; _ } ->
        let name = prefix ^ Ident.name id in
        (* A functor's body is indexed as its structure: its types are
           the same in every application but for the parameter's. *)
        let rec body (me : Typedtree.module_expr) =
          match me.mod_desc with
          | Tmod_structure s -> index_decls decls applied (name ^ ".") s.str_items
          | Tmod_constraint (me, _, _, _) | Tmod_functor (_, me) -> body me
          | Tmod_apply (f, _, _) -> functor_path f
          | _ -> ()
        (* The functor applied, under the coercions typing adds. *)
        and functor_path (f : Typedtree.module_expr) =
          match f.mod_desc with
          | Tmod_ident (p, _) -> Hashtbl.replace applied name p
          | Tmod_constraint (f, _, _, _) -> functor_path f
          | _ -> ()
        in
        body mb_expr
      | _ -> ())
    items

(* The .cmt of the unit named [modname], its source unchanged since; a
   dune executable's module M is the unit Dune__exe__M (the first found,
   the executable's directory being searched first). *)
let load_snap_unit modname =
  match Hashtbl.find_opt snap_units modname with
  | Some u -> u
  | None ->
    let rec first = function
      | [] -> Error "no .cmt"
      | path :: rest ->
        Hashtbl.replace files_read path ();
        (match Cmt_format.read_cmt path with
         | exception _ -> Hashtbl.replace stale_cmts path (); first rest
         | cmt when cmt.cmt_modname <> modname
                    && cmt.cmt_modname <> dune_exe_prefix ^ modname -> first rest
         | cmt when not (source_digest_ok cmt path) ->
           Hashtbl.replace stale_cmts path ();
           (match first rest with Error _ -> Error ("stale .cmt: " ^ path) | ok -> ok)
         | cmt ->
           match cmt.cmt_annots with
           | Implementation str ->
             let unit_path = public_ident (Ident.create_persistent cmt.cmt_modname) in
             let exprs, qualify, calls, last_top = index_structure str unit_path in
             let decls = Hashtbl.create 64 and applied = Hashtbl.create 8 in
             index_decls decls applied "" str.str_items;
             let cmi = Filename.remove_extension path ^ ".cmi" in
             let sign =
               match Cmt_format.read_cmi cmi with
               | exception _ -> None
               | c -> Hashtbl.replace files_read cmi (); Some c.cmi_sign
             in
             Ok { info = { cmt_path = path; modname = cmt.cmt_modname; last_top; exprs; qualify;
                           calls };
                  str; decls; applied; sign }
           | _ -> first rest)
    in
    let u = first (List.rev (Hashtbl.find_all cmt_index (module_key modname))) in
    Hashtbl.replace snap_units modname u;
    u

(* The ways to read dotted path [comps] as a compilation unit (its first
   i components joined by "__", as the compiler names units: Stdlib__Map,
   Dune__exe__Leak) and a path inside it (the rest, joined by "."), the
   longest unit first, as (unit, inner, i). *)
let unit_splits comps =
  let n = List.length comps in
  List.init (max 0 (n - 1)) (fun j ->
      let i = n - 1 - j in
      (String.concat "__" (List.filteri (fun k _ -> k < i) comps),
       String.concat "." (List.filteri (fun k _ -> k >= i) comps), i))

let () =
  applied_functor :=
    fun u' q ->
      match q with
      | Pident m when not (Ident.global m) ->
        (match load_snap_unit u'.modname with
         | Ok su -> Hashtbl.find_opt su.applied (Ident.name m)
         | Error _ -> None)
      | _ ->
        match path_comps q with
        | None -> None
        | Some comps ->
          (* The functor's path as written in that unit: through units, or
             one of its own (not followed). *)
          List.find_map (fun (unit_name, inner, _) ->
              match load_snap_unit unit_name with
              | Ok su -> Hashtbl.find_opt su.applied inner
              | Error _ -> None)
            (unit_splits comps)

(* The declaration of type [p] (qualified, as copy_types leaves it) and
   the unit that has it: Stdlib.Hashtbl.t is t of unit Stdlib__Hashtbl,
   Leak.M.t is M.t of unit Leak; in a functor's body or application,
   Stdlib.Map.Make(Ord).t and Leak.SM.t (SM = Map.Make (String)) are
   Make.t of Stdlib__Map.  Only units' paths lead anywhere: a functor's
   parameter (H.t in Hashtbl.Make's body) is not the unit named H. *)
let rec find_decl ?(depth = 0) (p : Path.t) =
  let rec names : Path.t -> string list option = function
    | Pident id when Ident.global id -> Some (String.split_on_char '.' (Ident.name id))
    | Pdot (q, s) -> Option.map (fun l -> l @ [ s ]) (names q)
    | Papply (f, _) -> names f
    | _ -> None
  in
  match names p with
  | None -> None
  | Some comps ->
    let n = List.length comps in
    let rec try_splits = function
      | [] -> None
      | (unit_name, inner, i) :: rest ->
        match load_snap_unit unit_name with
        | Ok u when Hashtbl.mem u.decls inner -> Some (u, Hashtbl.find u.decls inner)
        | Ok u when depth < 4 && n - i >= 2 ->
          let modpath = String.concat "." (List.filteri (fun k _ -> k >= i && k < n - 1) comps) in
          (match Hashtbl.find_opt u.applied modpath with
           | Some f ->
             find_decl ~depth:(depth + 1) (Pdot (qualify_path u.info f, List.nth comps (n - 1)))
           | None -> try_splits rest)
        | _ -> try_splits rest
    in
    try_splits (unit_splits comps)

(* A copy of [ty] (a type of unit [u]'s .cmt) with its paths qualified and
   the variables [params] replaced by [args] (copies already). *)
let instantiate u params args ty =
  let seen = Hashtbl.create 16 in
  List.iter2 (fun p a -> Hashtbl.replace seen (get_id p) a) params args;
  let rec copy ty =
    match Hashtbl.find_opt seen (get_id ty) with
    | Some c -> c
    | None ->
      let stub = Btype.newgenstub ~scope:Ident.highest_scope in
      Hashtbl.add seen (get_id ty) stub;
      let desc =
        match get_desc ty with
        | Tconstr (p, a, _) -> Tconstr (qualify_path u p, List.map copy a, ref Mnil)
        | Tvariant row -> Tvariant (Btype.copy_row copy true row true (copy (row_more row)))
        | d -> Btype.copy_type_desc ~keep_names:true copy d
      in
      Transient_expr.set_stub_desc stub desc;
      stub
  in
  copy ty

(* What a value of a type is in memory, for the C side to check a block
   against and to type its fields.  Blocks: the block layouts it may have
   (tag, size, per field its edge name and type), a record's or tuple's
   one, a variant's one per non-constant constructor. *)
type shape =
  | Unknown
  | Immediate
  | String_block
  | Float_block
  | Closure
  | Custom
  | Object
  | Lazy
  | Float_array
  | Array of int
  | Blocks of (int * int * (string * int) list) list

let shape_name = function
  | Unknown -> "unknown" | Immediate -> "imm" | String_block -> "string"
  | Float_block -> "float" | Closure -> "closure" | Custom -> "custom"
  | Object -> "object" | Lazy -> "lazy" | Float_array -> "floatarray"
  | Array _ -> "array" | Blocks _ -> "blocks"

(* Types are numbered by their printed text; the recursion of a type's
   fields ends at types already numbered, and at max_types (a
   non-regular type has infinitely many instances). *)
let max_types = 20000
let type_ids : (string, int) Hashtbl.t = Hashtbl.create 1024
let shape_lines = Buffer.create 4096

let emit_shape id shape =
  let b = shape_lines in
  Printf.bprintf b "shape\t%d\t%s" id (shape_name shape);
  (match shape with Array e -> Printf.bprintf b "\t%d" e | _ -> ());
  Buffer.add_char b '\n';
  match shape with
  | Blocks alts ->
    List.iter
      (fun (tag, size, fields) ->
        Printf.bprintf b "alt\t%d\t%d\t%d" id tag size;
        List.iter (fun (name, t) -> Printf.bprintf b "\t%s\t%d" name t) fields;
        Buffer.add_char b '\n')
      alts
  | _ -> ()

let unknown_id = 0

let rec type_id ty =
  let text = String.concat " " (String.split_on_char '\n' (print_type ty)) in
  match Hashtbl.find_opt type_ids text with
  | Some id -> id
  | None ->
    let id = Hashtbl.length type_ids in
    Hashtbl.add type_ids text id;
    Printf.bprintf shape_lines "tname\t%d\t%s\n" id text;
    let shape =
      if id >= max_types then Unknown else try shape_of ty with Not_found -> Unknown
    in
    emit_shape id shape;
    id

and shape_of ty =
  match get_desc ty with
  | Tarrow _ -> Closure
  | Ttuple _ ->
    (* Its components by fold (5.4's are labelled). *)
    let tys = children ty in
    Blocks [ (0, List.length tys, List.mapi (fun i t -> (Printf.sprintf ".%d" (i + 1), type_id t)) tys) ]
  | Tconstr (p, args, _) -> constr_shape p args
  | Tobject _ -> Object
  | Tpoly (t, _) -> shape_of t
  | _ -> Unknown

and constr_shape p args =
  let is q = Path.same p q in
  match args with
  | _ when is Predef.path_int || is Predef.path_char || is Predef.path_bool || is Predef.path_unit ->
    Immediate
  | _ when is Predef.path_float -> Float_block
  | _ when is Predef.path_string || is Predef.path_bytes -> String_block
  | _ when is Predef.path_int32 || is Predef.path_int64 || is Predef.path_nativeint -> Custom
  | _ when is Predef.path_floatarray -> Float_array
  | _ when is Predef.path_lazy_t -> Lazy
  | [ a ] when is Predef.path_array ->
    (match get_desc a with
     | Tconstr (q, [], _) when Path.same q Predef.path_float -> Float_array
     | _ -> Array (type_id a))
  | [ a ] when is Predef.path_list ->
    let self = Btype.newgenty (Tconstr (p, [ a ], ref Mnil)) in
    Blocks [ (0, 2, [ ("::.0", type_id a); ("::", type_id self) ]) ]
  | [ a ] when is Predef.path_option -> Blocks [ (0, 1, [ ("Some", type_id a) ]) ]
  | _ ->
    match find_decl p with
    | None -> Unknown
    | Some (u, d) when List.length d.type_params <> List.length args -> ignore u; Unknown
    | Some (u, d) ->
      let inst ty = instantiate u.info d.type_params args ty in
      let field_id prefix (ld : Types.label_declaration) =
        (prefix ^ Ident.name ld.ld_id, type_id (inst ld.ld_type))
      in
      match d.type_kind with
      | Type_record (lds, Record_regular) ->
        Blocks [ (0, List.length lds, List.map (field_id ".") lds) ]
      | Type_record (lds, Record_float) -> Blocks [ (254, List.length lds, []) ]
      | Type_record ([ ld ], Record_unboxed _) -> shape_of (inst ld.ld_type)
      | Type_variant ([ { cd_args = Cstr_tuple [ t ]; cd_res = None; _ } ], Variant_unboxed) ->
        shape_of (inst t)
      | Type_variant (cds, Variant_regular) ->
        let tag = ref 0 in
        let alts =
          List.filter_map
            (fun (cd : Types.constructor_declaration) ->
              let name = Ident.name cd.cd_id in
              (* A GADT constructor's arguments may have existential
                 types: unknown. *)
              let arg t = if cd.cd_res = None then type_id (inst t) else unknown_id in
              let fields =
                match cd.cd_args with
                | Cstr_tuple [] -> None
                | Cstr_tuple [ t ] -> Some [ (name, arg t) ]
                | Cstr_tuple ts -> Some (List.mapi (fun i t -> (Printf.sprintf "%s.%d" name i, arg t)) ts)
                | Cstr_record lds ->
                  Some (List.map (fun (ld : Types.label_declaration) ->
                            (name ^ "." ^ Ident.name ld.ld_id, arg ld.ld_type)) lds)
              in
              Option.map
                (fun fields ->
                  let t = !tag in
                  incr tag;
                  (t, List.length fields, fields))
                fields)
            cds
        in
        if alts = [] then Immediate else Blocks alts
      | Type_abstract _ ->
        (match d.type_manifest with Some m -> shape_of (inst m) | None -> Unknown)
      | _ -> Unknown

(* The identifiers of a structure in the order of its unit's global block
   (Translmod.transl_store_gen in 5.3): first the runtime components of
   the signature (.cmi: the .mli's, or the inferred one), each the last
   identifier defined with its name; then the other identifiers defined
   at the top, in order; then those of its submodules' structures, all
   levels, in order.  Each with its name and, for values, its type. *)
let global_fields u =
  let defined = ref [] and more = ref [] in
  let rec items prefix acc (l : Typedtree.structure_item list) =
    List.iter
      (fun (item : Typedtree.structure_item) ->
        let add id ty = acc := (id, prefix ^ Ident.name id, ty) :: !acc in
        let sub (mb_expr : Typedtree.module_expr) name =
          match mb_expr.mod_desc with
          | Tmod_structure s | Tmod_constraint ({ mod_desc = Tmod_structure s; _ }, _, _, _) ->
            items (prefix ^ name ^ ".") more s.str_items
          | _ -> ()
        in
        match item.str_desc with
        | Tstr_value (_, vbs) ->
          List.iter (fun (id, _, ty, _) -> add id (Some ty)) (Typedtree.let_bound_idents_full vbs)
        | Tstr_typext te -> List.iter (fun (e : Typedtree.extension_constructor) -> add e.ext_id None) te.tyext_constructors
        | Tstr_exception e -> add e.tyexn_constructor.ext_id None
        | Tstr_module { mb_id = Some id; mb_presence = Mp_present; mb_expr; _ } ->
          add id None;
          sub mb_expr (Ident.name id)
        | Tstr_recmodule mbs ->
          List.iter (fun (mb : Typedtree.module_binding) -> Option.iter (fun id -> add id None) mb.mb_id) mbs
        | Tstr_class cls -> List.iter (fun ((c : Typedtree.class_declaration), _) -> add c.ci_id_class None) cls
        | Tstr_open od ->
          List.iter (fun id -> add id None) (Types.bound_value_identifiers od.open_bound_items);
          (match od.open_expr.mod_desc with
           | Tmod_structure s -> items prefix more s.str_items
           | _ -> ())
        | Tstr_include incl ->
          List.iter (fun id -> add id None) (Types.bound_value_identifiers incl.incl_type);
          (match incl.incl_mod.mod_desc with
           | Tmod_structure s | Tmod_constraint ({ mod_desc = Tmod_structure s; _ }, _, _, _) ->
             items prefix more s.str_items
           | _ -> ())
        | _ -> ())
      l
  in
  items "" defined u.str.str_items;
  let defined = List.rev !defined and more = List.rev !more in
  let exported =
    match u.sign with
    | None -> None
    | Some sg ->
      Some
        (List.filter_map
           (function
             | Sig_value (id, { val_kind = Val_reg; _ }, _) | Sig_typext (id, _, _, _)
             | Sig_module (id, Mp_present, _, _, _) | Sig_class (id, _, _, _) ->
               Some (Ident.name id)
             | _ -> None)
           sg)
  in
  match exported with
  | None -> None
  | Some names ->
    let last_named n =
      List.fold_left (fun acc ((_, name, _) as d) -> if name = n then Some d else acc) None defined
    in
    let front = List.map (fun n -> (n, last_named n)) names in
    let used = List.filter_map (fun (_, d) -> Option.map (fun (id, _, _) -> id) d) front in
    let rest = List.filter (fun (id, _, _) -> not (List.exists (Ident.same id) used)) defined in
    Some
      (List.map (fun (n, d) -> match d with Some (_, _, ty) -> (n, ty) | None -> (n, None)) front
       @ List.map (fun (_, n, ty) -> (n, ty)) (rest @ more))

(* [global MODULE]: the fields of MODULE's global block, typed. *)
let answer_global m =
  let modname = String.concat "__" (String.split_on_char '.' m) in
  match load_snap_unit modname with
  | Error reason -> Printf.printf "nomodule\t%s\t%s\n" m reason
  | Ok u ->
    match global_fields u with
    | None -> Printf.printf "nomodule\t%s\tno .cmi beside %s\n" m u.info.cmt_path
    | Some fields ->
      List.iteri
        (fun i (name, ty) ->
          let id =
            match ty with
            | Some ty -> (try type_id (instantiate u.info [] [] ty) with _ -> unknown_id)
            | None -> unknown_id
          in
          Printf.printf "field\t%s\t%d\t%s\t%d\n" m i name id)
        fields

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
  (* Large unmarshalled trees (the .cmt files) that all stay live until
     the end: collecting less often saves most of the marking. *)
  Gc.set { (Gc.get ()) with space_overhead = 400 };
  let stdlib_scanned = ref false and foreign = ref None in
  (* Searched last: the program's own directories come first. *)
  let scan_stdlib () =
    if not !stdlib_scanned then begin
      scan_dir 1 Config.standard_library;
      stdlib_scanned := true
    end
  in
  let globals = ref [] and sites = ref [] in
  (try
     while true do
       match String.split_on_char '\t' (input_line stdin) with
       | [ "dir"; depth; path ] ->
         (* A directory that does not exist (yet): the listing of its
            nearest existing ancestor changes when it is made. *)
         let rec existing d =
           let p = Filename.dirname d in
           if Sys.file_exists d || p = d then d else existing p
         in
         if not (Sys.file_exists path) then begin
           let a = existing path in
           Option.iter (note_listing 1 a) (searched_entries 1 a)
         end;
         scan_dir (int_of_string depth) path
       | [ "version"; v ] -> if v <> Sys.ocaml_version then foreign := Some v
       | "chain" :: key :: frames ->
         scan_stdlib ();
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
       | [ "global"; m ] -> globals := m :: !globals
       | "site" :: key :: frames -> sites := (key, frames_of 0 frames) :: !sites
       | [ "" ] -> ()
       | l -> failwith ("bad input line: " ^ String.concat "\t" l)
     done
   with End_of_file -> ());
  scan_stdlib ();
  Hashtbl.add type_ids "(unknown)" unknown_id;
  emit_shape unknown_id Unknown;
  (* a heap snapshot of another version's program: nothing typed *)
  if !foreign <> None then globals := [];
  List.iter answer_global (List.rev !globals);
  List.iter
    (fun (key, frames) ->
      let id = if !foreign <> None then unknown_id else
          match resolve_type frames with Ok ty -> (try type_id ty with _ -> unknown_id)
                                       | Error _ | exception _ -> unknown_id in
      Printf.printf "site\t%s\t%d\n" key id)
    (List.rev !sites);
  print_string (Buffer.contents shape_lines);
  Hashtbl.iter (fun f () -> Printf.printf "missing\t%s\n" f) missing_files;
  Hashtbl.iter (fun p () -> Printf.printf "stale\t%s\n" p) stale_cmts;
  if !foreign <> None then Printf.printf "foreign\t%s\n" Sys.ocaml_version;
  Hashtbl.iter (fun p () -> Printf.printf "read\t%s\n" p) files_read;
  Hashtbl.iter (fun (d, depth) h -> Printf.printf "listing\t%d\t%s\t%s\n" depth h d) listings
