// report.js: the views of `ocaml-memprof report`, computed in the page from
// the embedded aggregated data (see tools/commands/cmd_report.c and
// tools/report/README.md for the data).
//
// Data (D): cells = sums of samples per (call-tree node, allocation bin,
// death bin, domain, size class, lifetime class), columnar typed arrays
// decoded from the deflated blob; call-tree nodes (parent, location);
// locations expanded to frames (function, file, line; innermost first);
// runtime events for the timeline.
//
// Flow: every filter change runs update(): one pass over the cells keeps
// those the filters select and sums them per cell node and per time bin;
// the timeline and the sites table are redrawn, and the visible tab from
// the per-node sums.  Stack filters and hidden frames are resolved per
// location, then per call-tree node, once per change of their regexes
// (prepStacks), never per cell.  The flame graph, icicle, call graph and
// callers/callees use the frame tree (inlined frames expanded, hidden ones
// left out, same-name siblings merged), built on first use; its sums touch
// only its key nodes (root, branch points, nodes with samples), and the
// flame graph and icicle stop below one pixel, so their cost follows what
// is visible.  All sums are estimates as in the CLI: samples / rate x word.
//
// Speed: nothing in an update reads layout sizes (they are read once, then
// on resize and scroll), the sites table holds only its visible rows, the
// arrays of millions of entries are pooled (see pooled), and the data is
// inflated by the page's own inflate.  The retention view and the
// dominator tree beside the flame graph draw D.snapshots (retainers
// --json per snapshot), independent of the filters.  The Lwt view (D.lwt,
// Lwt programs only) counts promises from the cells at Lwt's constructors
// and from the pending promises' stacks (see its section).
'use strict';
var D = JSON.parse(document.getElementById('data').textContent);
var $ = function (id) { return document.getElementById(id); };
var errors = [];
window.addEventListener('error', function (e) { errors.push(String(e.message)); });

// ---------- formatting ----------
// Bytes in decimal units (kB = 1,000 B, MB = 10^6 B...) with three
// significant digits: the convention of the whole tool (human_bytes in
// tools/output/report.c prints the same string for the same count).
var BU = ['B', 'kB', 'MB', 'GB', 'TB', 'PB'];
function bytes(b) {
  var i = 0, a = Math.abs(b);
  while (a >= 1000 && i < 5) { a /= 1000; i++; }
  // 999.5 kB would round to "1000 kB": the next unit
  if (a >= 999.5 && i < 5) { a /= 1000; i++; }
  if (b < 0) a = -a;
  return (i ? String(+a.toPrecision(3)) : a.toFixed(0)) + ' ' + BU[i];
}
function secs(ns) {
  var a = Math.abs(ns);
  if (a >= 1e9 || a === 0) return +(ns / 1e9).toPrecision(4) + ' s';
  if (a >= 1e6) return +(ns / 1e6).toPrecision(4) + ' ms';
  if (a >= 1e3) return +(ns / 1e3).toPrecision(4) + ' µs';
  return ns + ' ns';
}
function num(v) { return String(Math.round(v)).replace(/\B(?=(\d{3})+(?!\d))/g, ','); }
function esc(s) { return String(s).replace(/[&<>"]/g, function (c) { return '&#' + c.charCodeAt(0) + ';'; }); }
// 1-2-5 step for about n ticks over [0, max].
function step125(max, n) {
  if (!(max > 0)) return 1;
  var raw = max / n, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}
// Byte axis: a decimal unit, then 1-2-5 ticks in that unit.
function byteTicks(max, n) {
  var u = 0;
  while (u < 4 && max / Math.pow(1000, u + 1) >= 1) u++;
  var k = Math.pow(1000, u), st = step125(max / k, n) * k, t = [];
  // up to the first tick at or above max, which becomes the axis' top
  for (var v = 0; ; v += st) { t.push([v, +(v / k).toPrecision(6) + ' ' + BU[u]]); if (v >= max * 0.9999) break; }
  return t;
}
function timeTicks(maxns, n) {
  var unit = maxns >= 2e9 ? 1e9 : maxns >= 2e6 ? 1e6 : maxns >= 2e3 ? 1e3 : 1;
  var name = { 1e9: 's', 1e6: 'ms', 1e3: 'µs', 1: 'ns' }[unit];
  var st = step125(maxns / unit, n) * unit, t = [];
  for (var v = 0; v <= maxns * 1.0001; v += st) t.push([v, +(v / unit).toPrecision(6) + ' ' + name]);
  return t;
}

// ---------- data ----------
var NC, NB = D.nbins, NN, NCN, STR = D.strings, BPS = D.word_bytes / D.sampling_rate;  // bytes per sample
var NLOC = D.loc_off.length - 1, NLIFE = D.life_lo.length;
var cNode, cAbin, cDbin, cDom, cSize, cLife, cSamp, cBlocks, cProm, cObj, cProc, cIdx, cnNode;
// The processes of the traces ([pid, executable]; a cell's cProc indexes
// them): with more than one, the page filters them as --pid and --exe do.
var PROCS = D.processes || [], EXES = [];
PROCS.forEach(function (p) { if (EXES.indexOf(p[1]) < 0) EXES.push(p[1]); });
var nParent, nLoc;
var locOff = Int32Array.from(D.loc_off), fFn = Int32Array.from(D.frame_fn);
var fFile = Int32Array.from(D.frame_file), fLine = Int32Array.from(D.frame_line);
var NOBT = STR.length, ALL = STR.length + 1;   // pseudo names
var NAMES = STR.concat(['<no backtrace>', 'all']), NS = NAMES.length;
// A stack cut at the runtime's frame cap ends (outermost) with a location
// named <truncated> (trace format 2, issue 13): drawn grey.
var TRUNCID = STR.indexOf('<truncated>');
var domains = [], allAllocCum;

// The blob: base64 of zlib-deflated LEB128 arrays (cmd_report.c), decoded
// into typed arrays: counts of samples may pass 2^31, the rest are ids.
var FLOAT_ARRAYS = { samples: 1, blocks: 1, promoted: 1, objects: 1 };
function loadBlob() {
  var raw = atob(D.blob), n0 = raw.length, bin = new Uint8Array(n0);
  for (var i = 0; i < n0; i++) bin[i] = raw.charCodeAt(i);
  var buf = inflate(bin, D.blob_bytes), pos = 0, A = {}, arrays = D.blob_arrays;
  for (var a = 0; a < arrays.length; a++) {
    var n = arrays[a][1], out = FLOAT_ARRAYS[arrays[a][0]] ? new Float64Array(n) : new Int32Array(n);
    pos = varints(buf, pos, out, n);
    A[arrays[a][0]] = out;
  }
  return A;
}
// [n] LEB128 values from buf[pos] into out; the position after them.
// (A small function of its own: V8 optimises its loop sooner.)
function varints(buf, pos, out, n) {
  for (var k = 0; k < n; k++) {
    var b = buf[pos++], v = b & 127;
    if (b & 128) {
      var mul = 128;
      do { b = buf[pos++]; v += (b & 127) * mul; mul *= 128; } while (b & 128);
    }
    out[k] = v;
  }
  return pos;
}

// Inflate (RFC 1950/1951) of a zlib stream into [size] bytes.  Written
// here rather than through DecompressionStream, whose chunked promises
// took 150-450 ms for 3 MB on a loaded machine (this loop: about 20).
// Huffman codes are read through one lookup table per code (indexed by
// the next maxbits bits, reversed as deflate packs them), entries
// symbol << 4 | length.
var LBASE = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
var LEXTRA = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
var DBASE = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577];
var DEXTRA = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];
var CLORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];
// The table covers codes of up to 10 bits (a 15-bit table per block cost
// more to fill than the block to decode); the rare longer codes, whose
// entries stay 0, are decoded bit by bit from the counts (slowSym).
function huffTable(lens, n) {
  var max = 0, count = new Int32Array(16), next = new Int32Array(16), offs = new Int32Array(17), sym = new Int32Array(n);
  for (var i = 0; i < n; i++) { count[lens[i]]++; if (lens[i] > max) max = lens[i]; }
  count[0] = 0;
  for (var b = 1, code = 0; b < 16; b++) { code = (code + count[b - 1]) << 1; next[b] = code; offs[b + 1] = offs[b] + count[b]; }
  for (var s0 = 0; s0 < n; s0++) if (lens[s0]) sym[offs[lens[s0]]++] = s0;
  var P = Math.min(max, 10), t = new Int32Array(1 << P);
  for (var s = 0; s < n; s++) {
    var L = lens[s]; if (!L) continue;
    var c = next[L]++, r = 0;
    if (L > P) continue;
    for (var j = 0; j < L; j++) { r = (r << 1) | (c & 1); c >>= 1; }
    for (var k = r; k < t.length; k += 1 << L) t[k] = s << 4 | L;
  }
  return { t: t, mask: (1 << P) - 1, count: count, sym: sym };
}
// Canonical decoding of the next code in bb (at least 15 bits), as a
// table entry.
function slowSym(h, bb) {
  var code = 0, first = 0, index = 0, cnt = h.count;
  for (var len = 1; len < 16; len++) {
    code |= bb & 1; bb >>>= 1;
    var c = cnt[len];
    if (code - c < first) return h.sym[index + (code - first)] << 4 | len;
    index += c; first += c; first <<= 1; code <<= 1;
  }
  throw new Error('bad deflate code');
}
// The bit buffer (bb, bc bits) lives in locals of one function: helper
// closures over it were several times slower.
function inflate(src, size) {
  var out = new Uint8Array(size || src.length * 4), o = 0, pos = 2, bb = 0, bc = 0, sl = src.length;
  var fixedL = null, fixedD = null, last = 0, hl, hd, t, e, x, n;
  function room(n) { var bigger = new Uint8Array(Math.max(2 * out.length, o + n)); bigger.set(out); out = bigger; }
  while (!last) {
    while (bc < 3) { bb |= (pos < sl ? src[pos] : 0) << bc; pos++; bc += 8; }
    last = bb & 1; var type = bb >>> 1 & 3; bb >>>= 3; bc -= 3;
    if (type === 0) {
      pos -= bc >> 3; bb = 0; bc = 0;      // whole bytes read ahead given back, then the byte boundary
      var len = src[pos] | src[pos + 1] << 8; pos += 4;
      if (o + len > out.length) room(len);
      out.set(src.subarray(pos, pos + len), o); o += len; pos += len;
      continue;
    }
    if (type === 1) {
      if (!fixedL) {
        var fl = new Uint8Array(288), fd = new Uint8Array(30).fill(5);
        for (var i = 0; i < 288; i++) fl[i] = i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8;
        fixedL = huffTable(fl, 288); fixedD = huffTable(fd, 30);
      }
      hl = fixedL; hd = fixedD;
    } else if (type === 2) {
      while (bc < 14) { bb |= (pos < sl ? src[pos] : 0) << bc; pos++; bc += 8; }
      var nl = (bb & 31) + 257, nd = (bb >>> 5 & 31) + 1, nc = (bb >>> 10 & 15) + 4; bb >>>= 14; bc -= 14;
      var cl = new Uint8Array(19), lens = new Uint8Array(nl + nd);
      for (var i2 = 0; i2 < nc; i2++) {
        while (bc < 3) { bb |= (pos < sl ? src[pos] : 0) << bc; pos++; bc += 8; }
        cl[CLORDER[i2]] = bb & 7; bb >>>= 3; bc -= 3;
      }
      var hc = huffTable(cl, 19);
      for (var k = 0; k < nl + nd;) {
        while (bc < 16) { bb |= (pos < sl ? src[pos] : 0) << bc; pos++; bc += 8; }
        e = hc.t[bb & hc.mask] || slowSym(hc, bb); bb >>>= e & 15; bc -= e & 15; x = e >> 4;
        if (x < 16) { lens[k++] = x; continue; }
        var rep, v = 0;
        if (x === 16) { rep = 3 + (bb & 3); bb >>>= 2; bc -= 2; v = lens[k - 1]; }
        else if (x === 17) { rep = 3 + (bb & 7); bb >>>= 3; bc -= 3; }
        else { rep = 11 + (bb & 127); bb >>>= 7; bc -= 7; }
        while (rep--) lens[k++] = v;
      }
      hl = huffTable(lens.subarray(0, nl), nl); hd = huffTable(lens.subarray(nl), nd);
    } else throw new Error('bad deflate block');
    var lt = hl.t, lm = hl.mask, dt = hd.t, dm = hd.mask;
    for (;;) {
      // 24 bits cover a length code (15) and its extra bits (5)
      while (bc < 24) { bb |= (pos < sl ? src[pos] : 0) << bc; pos++; bc += 8; }
      e = lt[bb & lm] || slowSym(hl, bb); bb >>>= e & 15; bc -= e & 15; x = e >> 4;
      if (x < 256) { if (o >= out.length) room(1); out[o++] = x; continue; }
      if (x === 256) break;
      x -= 257;
      n = LBASE[x];
      if (LEXTRA[x]) { n += bb & ((1 << LEXTRA[x]) - 1); bb >>>= LEXTRA[x]; bc -= LEXTRA[x]; }
      while (bc < 16) { bb |= (pos < sl ? src[pos] : 0) << bc; pos++; bc += 8; }
      e = dt[bb & dm] || slowSym(hd, bb); bb >>>= e & 15; bc -= e & 15; x = e >> 4;
      while (bc < 16) { bb |= (pos < sl ? src[pos] : 0) << bc; pos++; bc += 8; }
      var dist = DBASE[x] + (bb & ((1 << DEXTRA[x]) - 1)); bb >>>= DEXTRA[x]; bc -= DEXTRA[x];
      if (o + n > out.length) room(n);
      for (t = o + n; o < t; o++) out[o] = out[o - dist];
    }
  }
  return out.subarray(0, o);
}
function setup(A) {
  NC = A.node.length; NN = A.node_up.length;
  cNode = A.node; cAbin = A.abin; cDbin = A.dbin; cDom = A.dom; cSize = A.size; cLife = A.life;
  cSamp = A.samples; cBlocks = A.blocks; cProm = A.promoted; cObj = A.objects; cProc = A.proc || new Int32Array(NC);
  for (var o = 0; o < NC; o++) cObj[o] /= 1024;
  nParent = A.node_up; nLoc = A.node_loc;
  for (var i = 1; i < NN; i++) nParent[i] = i - nParent[i];
  // the distinct nodes of the cells: per-update sums are kept per such node
  var idx = new Int32Array(NN).fill(-1), list = [];
  cIdx = new Int32Array(NC);
  for (var c = 0; c < NC; c++) { var n = cNode[c]; if (idx[n] < 0) { idx[n] = list.length; list.push(n); } cIdx[c] = idx[n]; }
  cnNode = Int32Array.from(list); NCN = list.length;
  var s = {}; for (var c2 = 0; c2 < NC; c2++) s[cDom[c2]] = 1;
  domains = Object.keys(s).map(Number).sort(function (a, b) { return a - b; });
  // the program's allocation per bin (unfiltered), for lifetimes in allocated bytes
  var a = new Float64Array(NB); allAllocCum = new Float64Array(NB + 1);
  for (var c3 = 0; c3 < NC; c3++) a[cAbin[c3]] += cSamp[c3];
  for (var k = 0; k < NB; k++) allAllocCum[k + 1] = allAllocCum[k] + a[k] * BPS;
  setupTypes(A);
}

// ---------- filter state ----------
// D.open: the tab and measure the page opens on (`ocaml-memprof
// flamegraph` writes this page opened on the flame graph).
var OPEN = D.open || {};
function freshState() {
  return { alloc: null, live: null, coll: null, never: false, life: null, size: null, doms: null,
           focus: '', ignore: '', hide: '', presets: [], metric: OPEN.metric || 'alloc', tab: OPEN.tab || 'sites',
           sort: 'alloc', search: '', site: null, rtrace: 0, rsnap: -1, rsite: 0, pid: null, exe: null,
           type: '' };
}
var S = freshState();

function re(s) { if (!s) return null; try { return new RegExp(s); } catch (e) { return undefined; } }
// Each string (function or file name) is tested once per regex: hit[id]
// is 0 untested, 1 no match, 2 match (names recur in many locations).
function matcher(r) { return { r: r, hit: new Uint8Array(STR.length) }; }
// A callback frame ("callback F", docs/trace-format.md) matches as its
// function F, as in the CLI's filters.
function strMatches(m, id) {
  var h = m.hit[id];
  if (!h) {
    var t = STR[id];
    h = m.hit[id] = m.r.test(t) || (t.lastIndexOf('callback ', 0) === 0 && m.r.test(t.slice(9))) ? 2 : 1;
  }
  return h === 2;
}
function locMatches(l, m) {
  for (var f = locOff[l]; f < locOff[l + 1]; f++)
    if (strMatches(m, fFn[f]) || (fFile[f] && strMatches(m, fFile[f]))) return true;
  return false;
}
var LAYER_MATCHERS = null;
function layerMatchers() {
  if (!LAYER_MATCHERS) LAYER_MATCHERS = layerRes().map(matcher);
  return LAYER_MATCHERS;
}
function locFnMatches(l, m) {
  for (var f = locOff[l]; f < locOff[l + 1]; f++) if (strMatches(m, fFn[f])) return true;
  return false;
}

// Per node: does the stack contain a focus / ignore match, the innermost
// node with a visible (not hidden) location, and the site (that
// location's innermost frame).  And the frame tree: call-tree nodes
// expanded into their inlined frames, hidden locations left out and
// same-name siblings merged (flame-graph convention); ft ids are given
// parents first, children in sibling lists.
var nVis, nSite, ftOf;
function visOf(n) { return nVis ? nVis[n] : n; }
function siteOf(n) { return nSite ? nSite[n] : n ? fFn[locOff[nLoc[n]]] : NOBT; }
var FT = null;   // { n, parent, name, first, next, keyBelow, keyUp, keys }
// The presets (D.presets: the CLI's built-in ones and the user's, as
// `--preset NAME` resolves them): S.presets holds their names.
var PRESETS = {}, KEEP = {};
(D.presets || []).forEach(function (p) { PRESETS[p.name] = p.regex; if (p.keep) KEEP[p.regex] = p.keep; });
// A location is hidden when a pattern matches the function or the file of
// one of its frames, unless the pattern's preset keeps a function of the
// location (the lwt preset keeps Lwt_main.run: its frame stands for what
// Lwt's loop allocates on its own, presets.h); a callback frame
// ("callback F") is tested as its function F.  hiders: the patterns
// compiled, each with its preset's keep; entriesHidden: for a location's
// frames [[function, file, ...], ...].
function hiders(patterns) {
  return patterns.map(function (p) { var r = re(p); return r ? { r: r, k: KEEP[p] ? re(KEEP[p]) : null } : null; }).filter(Boolean);
}
function cbName(fn) { return fn.lastIndexOf('callback ', 0) === 0 ? fn.slice(9) : fn; }
function entriesMatch(r, entries) {
  if (!entries.length) return r.test('<unknown>');
  return entries.some(function (e) { return r.test(cbName(e[0])) || (e[1] !== '' && r.test(e[1])); });
}
function entriesHidden(hs, entries) {
  return hs.some(function (h) {
    return entriesMatch(h.r, entries) && !(h.k && entries.some(function (e) { return h.k.test(cbName(e[0])); }));
  });
}
// Hiding is decided per stack, as in the CLI (analysis.h): library code
// (a frame of any preset) called by a hidden frame, or by one a preset
// keeps, is hidden with it (Lwt's engine calling List.iter, Lwt_io
// calling Bigarray.Array1.create).  A location's class: 1 hidden, 4 kept,
// 2 library code, 0 the program's; a frame's state from its class and
// its caller's: 1 hidden, 2 shown and absorbing what it calls, 0 shown.
var LAYER_RES = null;
function layerRes() {
  if (!LAYER_RES) LAYER_RES = Object.keys(PRESETS).map(function (n) { return re(PRESETS[n]); }).filter(Boolean);
  return LAYER_RES;
}
function entriesClass(hs, entries) {
  if (entriesHidden(hs, entries)) return 1;
  if (hs.some(function (h) { return h.k && entries.some(function (e) { return h.k.test(cbName(e[0])); }); })) return 4;
  return layerRes().some(function (r) { return entriesMatch(r, entries); }) ? 2 : 0;
}
function nextState(c, caller) { return c === 1 ? 1 : c === 4 ? 2 : c === 2 && caller !== 0 ? 1 : 0; }
// Per frame of a stack (location ids, innermost first; cls gives a
// location's class): whether it is hidden.
function stackHidden(st, cls) {
  var out = new Array(st.length), s = 0;
  for (var k = st.length - 1; k >= 0; k--) { s = nextState(cls(st[k]), s); out[k] = s === 1; }
  return out;
}
function hidePatterns() {
  return (S.hide ? [S.hide] : []).concat(S.presets.filter(function (n) { return n in PRESETS; }).map(function (n) { return PRESETS[n]; }));
}
// Two keys: the stack filters (focus, ignore) only set per-cell flags;
// hiding frames changes sites and the frame tree.
var hideKey = null, stackFlagKey = null, cStack = null, flagBuf = null;
// Typed arrays of millions of entries are reused, not reallocated, from one
// hidden-frames change to the next: allocating them made V8 collect its
// whole heap each time (their memory counts towards its GC trigger).
// Pool 0 holds the state without hidden frames (kept: see prepStacks),
// pool 1 that of the current hidden frames.
var pools = [{}, {}];
function pooled(key, Ctor, n) {
  var P = pools[hideKey === '[]' ? 0 : 1], a = P[key];
  if (!a || a.length < n) a = P[key] = new Ctor(Math.ceil(n * 1.25) + 16);
  return a;
}
// Pool 1 is given pool 0's sizes while the page is idle, once the first
// frame tree is built, and written once (so that its memory pages exist):
// the first hidden-frames change then neither allocates nor faults pages
// in (allocating took 130 ms more on the ocamlopt trace).  A state cached
// in stacksOf keeps the arrays it had.
function reserveHidden() {
  Object.keys(pools[0]).forEach(function (k) {
    var a = pools[0][k], b = pools[1][k];
    if (!b || b.length < a.length) pools[1][k] = new a.constructor(a.length).fill(0);
  });
}
// The stacks state (sites per cell and node, frame tree) per hidden-frames
// key: kept for '[]' (going back to no hidden frames is common, and its
// frame tree is the costly part) and for the one hidden key whose arrays
// are those of pool 1.  While the page is idle after the first paint, the
// frame tree is built, then the Stdlib preset's state is computed
// (warmUp): the first flame graph and ticking the preset are then
// immediate, and any other pattern runs code already compiled.
var stacksOf = {};
function prepStacks() {
  var hk = JSON.stringify(hidePatterns());
  if (hk !== hideKey) {
    zoom.flame = 0; zoom.icicle = [];
    switchStacks(hk, hidePatterns());
  }
  prepStackFlags();
}
function switchStacks(hk, patterns) {
  if (hideKey !== null) stacksOf[hideKey] = { cSite: cSite, FT: FT, ftOf: ftOf, ftHidden: ftHidden, nVis: nVis, nSite: nSite };
  hideKey = hk;
  var st = stacksOf[hk];
  if (st) {
    cSite = st.cSite; FT = st.FT; ftOf = st.ftOf; ftHidden = st.ftHidden; nVis = st.nVis; nSite = st.nSite;
    return;
  }
  // pool 1 is about to be written: the hidden state cached in it goes
  if (hk !== '[]') Object.keys(stacksOf).forEach(function (k) { if (k !== '[]') delete stacksOf[k]; });
  var rh = hiders(patterns).map(function (h) { return { m: matcher(h.r), k: h.k ? matcher(h.k) : null }; });
  var hidden = new Uint8Array(NLOC), sit = null, nodeState = null;
  for (var l = 1; l < NLOC; l++) {
    for (var k = 0; k < rh.length; k++)
      if (locMatches(l, rh[k].m) && !(rh[k].k && locFnMatches(l, rh[k].k))) { hidden[l] = 1; break; }
    if (locOff[l + 1] === locOff[l]) hidden[l] = 1;
  }
  if (!rh.length) {
    // nothing hidden: each node is its own visible node (no pass over
    // the whole call tree, which deep stacks make large, at first paint)
    nVis = nSite = null;
  } else {
    // the locations' classes (entriesClass), then each node's state from
    // its parent's (node ids are given parents first)
    var lm = layerMatchers(), cls = hidden;
    for (var l1 = 1; l1 < NLOC; l1++) {
      if (cls[l1]) continue;
      var kept = false;
      for (var k1 = 0; k1 < rh.length && !kept; k1++) kept = rh[k1].k && locFnMatches(l1, rh[k1].k);
      if (kept) { cls[l1] = 4; continue; }
      for (var k2 = 0; k2 < lm.length; k2++) if (locMatches(l1, lm[k2])) { cls[l1] = 2; break; }
    }
    nodeState = pooled('nState', Uint8Array, NN);
    nodeState[0] = 0;
    for (var n1 = 1, npar = nParent, nloc = nLoc; n1 < NN; n1++) {
      var c1 = cls[nloc[n1]], p1 = nodeState[npar[n1]];
      nodeState[n1] = c1 === 1 ? 1 : c1 === 4 ? 2 : c1 === 2 && p1 !== 0 ? 1 : 0;
    }
    // Only the cells' nodes need their visible node and site (nVis,
    // nSite are read for them alone): each walks up its run of hidden
    // locations, and the walks share what they settle (done), so the cost
    // follows the cells and their hidden ancestors, not the whole call
    // tree (533,000 nodes on the deep ocamlopt trace, 72,000 cells).
    // The loops read locals only: the globals set here change from one
    // hidden key to the next (null, then arrays).
    var vis = nVis = pooled('nVis', Int32Array, NN), sit = nSite = pooled('nSite', Int32Array, NN);
    var done = pooled('nDone', Uint8Array, NN).fill(0, 0, NN), par = nParent, loc = nLoc, lo = locOff, fn = fFn;
    var path = [], cnn = cnNode, ncn = NCN, ns = nodeState;
    done[0] = 1; vis[0] = 0; sit[0] = NOBT;
    for (var k0 = 0; k0 < ncn; k0++) {
      var x = cnn[k0];
      while (!done[x] && ns[x] === 1) { path.push(x); x = par[x]; }
      if (!done[x]) { vis[x] = x; sit[x] = fn[lo[loc[x]]]; done[x] = 1; }
      var v = vis[x], si = sit[x];
      while (path.length) { var y = path.pop(); vis[y] = v; sit[y] = si; done[y] = 1; }
    }
  }
  var cs = cSite = pooled('cSite', Int32Array, NC), cn = cNode, nc = NC;
  if (sit) for (var i = 0; i < nc; i++) cs[i] = sit[cn[i]];
  else for (var i1 = 0; i1 < nc; i1++) cs[i1] = siteOf(cn[i1]);
  FT = null; ftHidden = { loc: hidden, node: nodeState };
}
function idle(f) { (window.requestIdleCallback || setTimeout).call(window, f); }
function warmUp() {
  if (hideKey === '[]' && !FT) { frameTree(); idle(warmUp); return; }
  var pv = PRESETS.stdlib ? [PRESETS.stdlib] : [], pk = JSON.stringify(pv), cur = hideKey;
  if (cur !== '[]' || stacksOf[pk] || !pv.length) return;
  switchStacks(pk, pv); frameTree();
  switchStacks(cur, null);
}
// Focus and ignore look at the frames hiding leaves, as in the CLI (its
// call tree has no hidden frame).
function prepStackFlags() {
  var sk = JSON.stringify([S.focus, S.ignore, hideKey]);
  if (sk !== stackFlagKey) {
    stackFlagKey = sk;
    var rf = re(S.focus), ri = re(S.ignore), mf = rf && matcher(rf), mi = ri && matcher(ri);
    cStack = null;                       // per cell: 1 focus matched, 2 ignore matched
    if (!rf && !ri) return;
    if (!flagBuf) flagBuf = { fl: new Uint8Array(NN), cs: new Uint8Array(NC) };
    var lf = new Uint8Array(NLOC), fl = flagBuf.fl;
    for (var l3 = 1; l3 < NLOC; l3++) {
      if (mf && locMatches(l3, mf)) lf[l3] |= 1;
      if (mi && locMatches(l3, mi)) lf[l3] |= 2;
    }
    var ns = ftHidden.node;
    for (var n2 = 1; n2 < NN; n2++) fl[n2] = fl[nParent[n2]] | (ns && ns[n2] === 1 ? 0 : lf[nLoc[n2]]);
    cStack = flagBuf.cs;
    for (var i2 = 0; i2 < NC; i2++) cStack[i2] = fl[cNode[i2]];
  }
}
// The frame tree, built when a view needs it (not for the first paint).
// Its arrays are sized by the frames of all the nodes (counted once):
// hidden frames only make it smaller.
var cSite, ftHidden, allFrames = -1;
function frameTree() {
  if (FT) return FT;
  var hidden = ftHidden.loc, hnode = ftHidden.node;
  if (allFrames < 0) {
    allFrames = 0;
    for (var n0 = 1; n0 < NN; n0++) allFrames += locOff[nLoc[n0] + 1] - locOff[nLoc[n0]];
  }
  var cap = allFrames + 2, par = pooled('par', Int32Array, cap), name = pooled('name', Int32Array, cap);
  var first = pooled('first', Int32Array, cap), next = pooled('next', Int32Array, cap), m = 1;
  var nch = pooled('nch', Int32Array, cap).fill(0, 0, cap);
  name[0] = ALL; par[0] = -1; first[0] = -1; next[0] = -1;
  var fo = ftOf = pooled('ftOf', Int32Array, NN), np = nParent, loc = nLoc, lo = locOff, fn = fFn, nn = NN;
  fo[0] = 0;
  // one pass, parents first, over locals only (see switchStacks); the
  // sibling search inlined, children counted on the way
  for (var n2 = 1; n2 < nn; n2++) {
    var l3 = loc[n2], q = fo[np[n2]];
    if (hnode ? hnode[n2] !== 1 : !hidden[l3]) for (var f = lo[l3 + 1] - 1, f0 = lo[l3]; f >= f0; f--) {
      var nm = fn[f], c = first[q];
      while (c >= 0 && name[c] !== nm) c = next[c];
      if (c < 0) { c = m++; par[c] = q; name[c] = nm; next[c] = first[q]; first[q] = c; first[c] = -1; nch[q]++; }
      q = c;
    }
    fo[n2] = q;
  }
  // Key nodes: the root, branch points and nodes with samples of their
  // own.  Any other node is on a chain and has the total of the key node
  // below it (keyBelow), so the per-update sums touch key nodes only.
  var isKey = pooled('isKey', Uint8Array, m), kb = pooled('kb', Int32Array, m), up = pooled('up', Int32Array, m);
  for (var i = 0; i < m; i++) isKey[i] = nch[i] !== 1 ? 1 : 0;
  isKey[0] = 1;
  for (var k = 0; k < NCN; k++) isKey[fo[cnNode[k]]] = 1;
  for (var i3 = m - 1; i3 >= 0; i3--) kb[i3] = isKey[i3] ? i3 : kb[first[i3]];
  var nkeys = 1;
  for (var i4 = 1; i4 < m; i4++) { var p4 = par[i4]; up[i4] = isKey[p4] ? p4 : up[p4]; nkeys += isKey[i4]; }
  var keys = new Int32Array(nkeys);
  for (var i5 = 0, j5 = 0; i5 < m; i5++) if (isKey[i5]) keys[j5++] = i5;
  FT = { n: m, parent: par, name: name, first: first, next: next,
         keyBelow: kb, keyUp: up, keys: keys };
  if (hideKey === '[]') idle(reserveHidden);
  return FT;
}

// ---------- the cell pass ----------
var R = null, BUF = null;   // results of the last update, their buffers
function computeCells() {
  prepStacks();
  var rf = re(S.focus), sizes = S.size, lifes = S.life, doms = S.doms;
  var domOk = null, never = S.never;
  if (doms) { domOk = new Uint8Array(256); doms.forEach(function (d) { domOk[d] = 1; }); }
  // processes: those of the pid and the executable chosen (both, as
  // --pid and --exe together select)
  var procOk = null;
  if (S.pid !== null || S.exe !== null)
    procOk = Uint8Array.from(PROCS, function (p) { return (S.pid === null || p[0] === S.pid) && (S.exe === null || p[1] === S.exe) ? 1 : 0; });
  var a = S.alloc, lv = S.live, co = S.coll, cs = cStack;
  // per-node sums in buffers reused from one update to the next
  if (!BUF) BUF = { kAlloc: new Float64Array(NCN), kLive: new Float64Array(NCN), kColl: new Float64Array(NCN),
                    kBlocks: new Float64Array(NCN), kObj: new Float64Array(NCN), kProm: new Float64Array(NCN), keep: new Uint8Array(NC) };
  var kAlloc = BUF.kAlloc.fill(0), kLive = BUF.kLive.fill(0), kColl = BUF.kColl.fill(0);
  var kBlocks = BUF.kBlocks.fill(0), kObj = BUF.kObj.fill(0), kProm = BUF.kProm.fill(0);
  var allocBin = new Float64Array(NB), liveDiff = new Float64Array(NB + 1), siteDiff = new Float64Array(NB + 1);
  var keep = BUF.keep.fill(0), site = S.site, nk = 0, cst = cSite, tm = typeMask();
  for (var i = 0; i < NC; i++) {
    var ab = cAbin[i], db = cDbin[i], n = cNode[i];
    if (tm && !tm[cIdx[i]]) continue;
    if (a && (ab < a[0] || ab > a[1])) continue;
    if (lv && (ab > lv[1] || db < lv[0])) continue;
    if (co && (db === NB || db < co[0] || db > co[1])) continue;
    if (never && db !== NB) continue;
    if (sizes && (cSize[i] < sizes[0] || cSize[i] > sizes[1])) continue;
    if (lifes && (cLife[i] < lifes[0] || cLife[i] > lifes[1])) continue;
    if (domOk && !domOk[cDom[i]]) continue;
    if (procOk && !procOk[cProc[i]]) continue;
    if (cs && (cs[i] & 2 || (rf && !(cs[i] & 1)))) continue;
    keep[i] = 1; nk++;
    var s = cSamp[i], k = cIdx[i];
    kAlloc[k] += s; kBlocks[k] += cBlocks[i]; kObj[k] += cObj[i]; kProm[k] += cProm[i];
    if (db === NB) kLive[k] += s; else kColl[k] += s;
    allocBin[ab] += s; liveDiff[ab] += s; if (db < NB) liveDiff[db] -= s;
    if (site !== null && cst[i] === site) { siteDiff[ab] += s; if (db < NB) siteDiff[db] -= s; }
  }
  var live = new Float64Array(NB), siteLive = new Float64Array(NB), acc = 0, acc2 = 0;
  for (var b = 0; b < NB; b++) { acc += liveDiff[b]; acc2 += siteDiff[b]; live[b] = acc * BPS; siteLive[b] = acc2 * BPS; }
  R = { keep: keep, kept: nk, kAlloc: kAlloc, kLive: kLive, kColl: kColl, kBlocks: kBlocks, kObj: kObj,
        kProm: kProm, allocBin: allocBin, live: live, siteLive: site !== null ? siteLive : null, ft: null };
}

// Sites: cell nodes grouped by their site after hiding (site = name id).
function computeSites() {
  var sm = new Float64Array(NS), bl = new Float64Array(NS), ob = new Float64Array(NS), lv = new Float64Array(NS);
  var co = new Float64Array(NS), pr = new Float64Array(NS), at = new Int32Array(NS).fill(-1), ids = [];
  for (var k = 0; k < NCN; k++) {
    if (!R.kBlocks[k]) continue;
    var n = cnNode[k], id = siteOf(n);
    if (at[id] < 0) { at[id] = n; ids.push(id); }
    sm[id] += R.kAlloc[k]; bl[id] += R.kBlocks[k]; ob[id] += R.kObj[k];
    lv[id] += R.kLive[k]; co[id] += R.kColl[k]; pr[id] += R.kProm[k];
  }
  var tot = { alloc: 0, samples: 0, blocks: 0, objects: 0, live: 0, coll: 0, prom: 0 };
  var list = ids.map(function (id) {
    var v = visOf(at[id]), f = locOff[nLoc[v]];
    var r = { id: id, name: NAMES[id], file: v ? STR[fFile[f]] + ':' + fLine[f] : '', samples: sm[id], blocks: bl[id],
              objects: ob[id] / D.sampling_rate, alloc: sm[id] * BPS, liveB: lv[id] * BPS, collB: co[id] * BPS, promB: pr[id] * BPS };
    tot.alloc += r.alloc; tot.samples += r.samples; tot.blocks += r.blocks; tot.objects += r.objects;
    tot.live += r.liveB; tot.coll += r.collB; tot.prom += r.promB;
    return r;
  });
  R.rows = list; R.total = tot; R.siteSamples = sm;
  R.flags = classify();
}

// Leak / allocation race, per site, over the filtered cells, from its
// promoted blocks (those that reached the major heap: a block that dies
// young is reclaimed with the minor heap, whose filling would look like
// growth).  docs/ocaml-memprof.md ("Leak and allocation-race flags")
// explains the rules and their thresholds.
// - leak: the volume in flight grows (its mean over the last quarter of
//   the site's activity at least twice that over the first quarter, and
//   at least 16 samples and 1% of the selection's peak) and less than 15%
//   of the promoted bytes die while the site still allocates.
// - allocation race (a backlog): the blocks wait longer and longer before
//   they die.  A block's *proven* lifetime is how long it certainly lived.
//   The garbage that the marking of major cycle k finds is swept, and its
//   deaths seen, during cycle k + 1; so a block whose death is seen during
//   cycle k + 1 was reachable during the marking of cycle k - 1 (else it
//   would have been swept during cycle k) and lived at least from its
//   allocation to the end of cycle k - 2, and a block live at the end (not
//   swept by the last complete cycle J) to the end of cycle J - 2.  GC
//   latency, up to two cycles and longer as the heap grows, never makes a
//   proven lifetime grow.  The site's activity is cut into RACE_SEGMENTS
//   equal spans: a race when the mean proven lifetime of the blocks
//   allocated in some span after the first quarter is at least twice
//   that of the first quarter's blocks and at least one mean major cycle,
//   while the volume in flight over that span is at least twice that over
//   the first quarter (allocation outpaced collection) and at least 16
//   samples and 1% of the peak, at least 15% of the bytes died, and that
//   span has at least RACE_MIN_BLOCKS blocks.  (A quarter, not one span,
//   is the baseline: with few major cycles, proven lifetimes are coarse.)
//   "drained": the lifetimes fell back (the queue emptied) before the end.
var RACE_SEGMENTS = 8, RACE_MIN_BLOCKS = 8;
function classify() {
  var peak = 0; for (var b0 = 0; b0 < NB; b0++) peak = Math.max(peak, R.live[b0] / BPS);
  var minLive = Math.max(16, 0.01 * peak), out = new Map();
  // proven[b]: for a block whose death is seen in bin b, the bin of the
  // end of cycle k - 2 when the last cycle to end in a bin before b is k
  // (a cycle ending in bin b itself may end after the death), -1 when
  // there is none; proven[NB], for the blocks live at the end, that of
  // cycle J - 2, J the last
  var ends = D.gc.major.map(function (m) { return Math.min(NB - 1, Math.floor(m[0] / D.bin_ns)); }).sort(function (a, b) { return a - b; });
  var proven = new Int32Array(NB + 1).fill(-1);
  for (var b1 = 0, j = -1; b1 < NB; b1++) {
    while (j + 1 < ends.length && ends[j + 1] < b1) j++;
    proven[b1] = j >= 2 ? ends[j - 2] : -1;
  }
  proven[NB] = ends.length >= 3 ? ends[ends.length - 3] : -1;
  var cycleBins = NB / (ends.length + 1);
  var per = new Map(), sm = R.siteSamples, cst = cSite;
  for (var i = 0; i < NC; i++) {
    if (!R.keep[i] || !cProm[i]) continue;
    var k = cst[i];
    if (sm[k] < minLive) continue;
    var e = per.get(k);
    if (!e) { e = { diff: new Float64Array(NB + 1), first: NB, last: -1, all: 0, cells: [] }; per.set(k, e); }
    var s = cProm[i], ab = cAbin[i], db = cDbin[i];
    e.diff[ab] += s; if (db < NB) e.diff[db] -= s;
    if (ab < e.first) e.first = ab; if (ab > e.last) e.last = ab;
    e.all += s; e.cells.push(i);
  }
  per.forEach(function (e, k) {
    if (e.last - e.first < RACE_SEGMENTS) return;
    var lv = 0, levels = new Float64Array(NB);
    for (var b = 0; b < NB; b++) { lv += e.diff[b]; levels[b] = lv; }
    var died = 0;
    e.cells.forEach(function (i) { if (cDbin[i] < e.last) died += cProm[i]; });
    died /= e.all;
    // mean in-flight volume over bins [a, z)
    function level(a, z) { var v = 0; for (var b = a; b < z; b++) v += levels[b]; return v / Math.max(1, z - a); }
    if (died < 0.15) {
      var q = Math.max(1, Math.floor((e.last - e.first + 1) / 4)), m = level(e.first, e.first + q), endv = level(e.last - q + 1, e.last + 1);
      if (endv >= minLive && endv >= 2 * m + 1)
        out.set(k, { kind: 'leak', died: died, growth: endv / Math.max(m, 1), inflight: endv * BPS });
      return;
    }
    var span = (e.last - e.first + 1) / RACE_SEGMENTS, life = new Float64Array(RACE_SEGMENTS), n = new Float64Array(RACE_SEGMENTS);
    e.cells.forEach(function (i) {
      var ab = cAbin[i], g = Math.min(RACE_SEGMENTS - 1, Math.floor((ab - e.first) / span));
      life[g] += Math.max(0, proven[cDbin[i]] - ab) * cBlocks[i]; n[g] += cBlocks[i];
    });
    var Q = RACE_SEGMENTS / 4, base = 0, nbase = 0, top = Q;
    for (var g0 = 0; g0 < Q; g0++) { base += life[g0]; nbase += n[g0]; }
    base = nbase ? base / nbase : 0;
    for (var g = 0; g < RACE_SEGMENTS; g++) { life[g] = n[g] ? life[g] / n[g] : 0; if (g >= Q && life[g] > life[top]) top = g; }
    if (n[top] < RACE_MIN_BLOCKS || life[top] < 2 * base || life[top] < cycleBins) return;
    var l0 = level(e.first, Math.round(e.first + Q * span)), lt = level(Math.round(e.first + top * span), Math.round(e.first + (top + 1) * span));
    if (lt < minLive || lt < 2 * l0 + 1) return;
    var fell = false;
    for (var g2 = top + 1; g2 < RACE_SEGMENTS; g2++) if (n[g2] && life[g2] <= life[top] / 2) fell = true;
    out.set(k, { kind: 'race', died: died, growth: lt / Math.max(l0, 1), inflight: lt * BPS,
                 lifeGrowth: base ? life[top] / base : Number.POSITIVE_INFINITY, drained: fell });
  });
  return out;
}

// Per frame-tree node: self and total of the flame/graph measure.
function metricOf(k) {
  switch (S.metric) {
    case 'live': return R.kLive[k] * BPS;
    case 'coll': return R.kColl[k] * BPS;
    case 'samples': return R.kAlloc[k];
    default: return R.kAlloc[k] * BPS;
  }
}
// V.self: per frame-tree node (key nodes only); V.tot: per key node, read
// as V.tot[FT.keyBelow[n]] for any node n.
function ftValues() {
  if (R.ft) return R.ft;
  frameTree();
  // two buffers per frame tree, reused (a million nodes on deep stacks)
  if (!FT.self) { FT.self = pooled('self', Float64Array, FT.n); FT.tot = pooled('tot', Float64Array, FT.n); }
  var self = FT.self, tot = FT.tot, keys = FT.keys, up = FT.keyUp, nk = keys.length;
  for (var j = 0; j < nk; j++) self[keys[j]] = 0;
  var fo = ftOf, cn = cnNode;
  for (var k = 0; k < NCN; k++) { var v = metricOf(k); if (v > 0) self[fo[cn[k]]] += v; }
  for (var j2 = 0; j2 < nk; j2++) tot[keys[j2]] = self[keys[j2]];
  for (var j3 = nk - 1; j3 > 0; j3--) tot[up[keys[j3]]] += tot[keys[j3]];
  R.ft = { self: self, tot: tot };
  return R.ft;
}

// ---------- timeline ----------
var tl = { canvas: $('tlc'), drag: null, x0: 60, x1: 0, W: 0 };   // W: read once, then on resize
function drawTimeline() {
  var cv = tl.canvas, W = tl.W || (tl.W = cv.clientWidth) || 900, H = 260, dpr = window.devicePixelRatio || 1;
  if (cv.width !== Math.round(W * dpr) || cv.height !== Math.round(H * dpr)) {
    cv.width = Math.round(W * dpr); cv.height = Math.round(H * dpr); cv.style.height = H + 'px';
  }
  var g = cv.getContext('2d'); g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.fillStyle = '#fff'; g.fillRect(0, 0, W, H);
  var x0 = tl.x0, x1 = W - 64, top = 14, mid = 180, rateTop = 196, bot = 240;
  tl.x1 = x1;
  var T = D.end_ns || 1, X = function (t) { return x0 + (x1 - x0) * t / T; };
  var bw = D.bin_ns;
  var heapMax = 0; D.gc.major.forEach(function (m) { if (m[1] > heapMax) heapMax = m[1]; });
  var lmax = 0; for (var k = 0; k < NB; k++) if (R.live[k] > lmax) lmax = R.live[k];
  var ymax = Math.max(lmax, heapMax, 1000);
  var yt = byteTicks(ymax, 5); ymax = Math.max(ymax, yt[yt.length - 1][0]);
  var Y = function (v) { return mid - (mid - top) * v / ymax; };
  g.font = '11px sans-serif'; g.textAlign = 'right'; g.textBaseline = 'middle';
  yt.forEach(function (t) { g.strokeStyle = '#eee'; g.beginPath(); g.moveTo(x0, Y(t[0])); g.lineTo(x1, Y(t[0])); g.stroke(); g.fillStyle = '#555'; g.fillText(t[1], x0 - 4, Y(t[0])); });
  // compactions, major cycles, domains
  g.fillStyle = 'rgba(150,80,200,.18)';
  D.gc.compactions.forEach(function (c) { g.fillRect(X(c[0]), top, Math.max(2, X(c[1]) - X(c[0])), mid - top); });
  // major cycles as ticks, at most one per 3 pixels (long runs have thousands)
  g.strokeStyle = 'rgba(0,0,0,.35)'; g.beginPath();
  var lastx = -10;
  D.gc.major.forEach(function (m) { var x = X(m[0]); if (x - lastx < 3) return; lastx = x; g.moveTo(x, top - 6); g.lineTo(x, top); });
  g.stroke();
  g.textAlign = 'left'; g.textBaseline = 'top';
  D.gc.domains.forEach(function (d) {
    var x = X(d[0]); g.fillStyle = d[3] ? '#080' : '#a00';
    g.beginPath(); g.moveTo(x, mid); g.lineTo(x - 4, mid + 7); g.lineTo(x + 4, mid + 7); g.fill();
    g.fillText((d[3] ? '+' : '−') + d[1], x + 3, mid + 2);
  });
  // heap snapshots: a diamond each, filled for the one the retention view shows
  var nsnap = 0, shown = SNAPS.length ? snapOf().snapshot.seq : -1, cur = SNAPS[snapTrace()];
  SNAPS.forEach(function (x) {
    x.evolution.rows.forEach(function (q) {
      var xs = X(q[1]), last = x === cur && q[0] === shown; nsnap++;
      g.beginPath(); g.moveTo(xs, top - 8); g.lineTo(xs + 4, top - 4); g.lineTo(xs, top); g.lineTo(xs - 4, top - 4); g.closePath();
      g.strokeStyle = '#077'; g.stroke(); if (last) { g.fillStyle = '#077'; g.fill(); }
    });
  });
  // live heap (filled), site's live, GC heap (steps)
  function curve(arr, color, fill) {
    g.beginPath(); g.moveTo(X(0), Y(0));
    for (var k = 0; k < NB; k++) { g.lineTo(X(k * bw), Y(arr[k])); g.lineTo(X(Math.min(T, (k + 1) * bw)), Y(arr[k])); }
    if (fill) { g.lineTo(X(Math.min(T, NB * bw)), Y(0)); g.closePath(); g.fillStyle = fill; g.fill(); }
    g.strokeStyle = color; g.lineWidth = 1.5; g.stroke(); g.lineWidth = 1;
  }
  drawTypeBands(g, X, Y, bw, T);
  curve(R.live, '#36c', cnType ? null : 'rgba(50,100,200,.18)');
  if (R.siteLive) curve(R.siteLive, '#e70', 'rgba(240,120,0,.25)');
  if (D.gc.major.length) {
    // steps at the cycles' ends, at most one per pixel column (the largest
    // heap size in it): long runs have tens of thousands of cycles
    g.beginPath(); g.strokeStyle = '#2a2'; g.lineWidth = 1.5;
    var px = -1, py = 0, started = false;
    D.gc.major.forEach(function (m) {
      var x = Math.round(X(m[0])), y = Y(m[1]);
      if (x === px) { if (y < py) { g.lineTo(x, y); py = y; } return; }
      if (!started) { g.moveTo(x, y); started = true; } else { g.lineTo(x, py); g.lineTo(x, y); }
      px = x; py = y;
    });
    g.lineTo(X(T), py); g.stroke(); g.lineWidth = 1;
  }
  // allocation rate panel
  var rmax = 0; for (var k2 = 0; k2 < NB; k2++) rmax = Math.max(rmax, R.allocBin[k2] * BPS / (bw / 1e9));
  var rt = byteTicks(rmax || 1, 2); rmax = Math.max(rmax, rt[rt.length - 1][0], 1);
  g.fillStyle = '#c84';
  for (var k3 = 0; k3 < NB; k3++) { var v = R.allocBin[k3] * BPS / (bw / 1e9), h = (bot - rateTop) * v / rmax; g.fillRect(X(k3 * bw), bot - h, Math.max(1, X(bw) - X(0) - 0.5), h); }
  g.fillStyle = '#555'; g.textAlign = 'left'; g.textBaseline = 'middle';
  g.fillText(rt[rt.length - 1][1] + '/s', x1 + 4, rateTop + 4); g.fillText('alloc rate', x1 + 4, bot - 6);
  // time axis
  g.textAlign = 'center'; g.textBaseline = 'top'; g.strokeStyle = '#999';
  g.beginPath(); g.moveTo(x0, bot); g.lineTo(x1, bot); g.stroke();
  timeTicks(T, Math.max(2, Math.floor((x1 - x0) / 90))).forEach(function (t) { var x = X(t[0]); g.beginPath(); g.moveTo(x, bot); g.lineTo(x, bot + 4); g.stroke(); g.fillText(t[1], x, bot + 5); });
  // brush / windows
  [['alloc', 'rgba(0,120,255,.15)'], ['live', 'rgba(0,180,0,.15)'], ['coll', 'rgba(255,0,0,.12)']].forEach(function (w) {
    var s = S[w[0]]; if (!s) return; g.fillStyle = w[1]; g.fillRect(X(s[0] * bw), top, X((s[1] + 1) * bw) - X(s[0] * bw), bot - top);
  });
  if (tl.drag) { g.fillStyle = 'rgba(0,0,0,.12)'; var a = Math.min(tl.drag[0], tl.drag[1]), b = Math.max(tl.drag[0], tl.drag[1]); g.fillRect(X(a * bw), top, X((b + 1) * bw) - X(a * bw), bot - top); }
  tl.X = X;
  var leg = '<span><i style="background:#36c"></i>estimated live heap (filtered)</span>' +
    (R.siteLive ? '<span><i style="background:#e70"></i>live: ' + esc(NAMES[S.site]) + '</span>' : '') +
    '<span><i style="background:#2a2"></i>GC major heap</span><span><i style="background:#c84"></i>allocation rate</span>' +
    '<span>| major cycles ' + D.gc.major.length + '</span><span><i style="background:rgba(150,80,200,.5)"></i>compactions ' + D.gc.compactions.length + '</span>' +
    '<span>▲ domain start/stop ' + D.gc.domains.length + '</span><span style="color:#077">◆ heap snapshots ' + nsnap + '</span><span>bin ' + secs(bw) + '</span>' +
    typeLegend();
  $('tllegend').innerHTML = leg;
}
function binAt(ev) {
  var r = tl.canvas.getBoundingClientRect(), x = ev.clientX - r.left;
  var t = (x - tl.x0) / (tl.x1 - tl.x0) * D.end_ns;
  return Math.max(0, Math.min(NB - 1, Math.floor(t / D.bin_ns)));
}
tl.canvas.addEventListener('mousedown', function (e) { var b = binAt(e); tl.drag = [b, b]; drawTimeline(); });
tl.canvas.addEventListener('mousemove', function (e) {
  if (tl.drag) { tl.drag[1] = binAt(e); drawTimeline(); return; }
  var b = binAt(e); showTip(e, 'bin ' + b + ': ' + secs(b * D.bin_ns) + ' – ' + secs((b + 1) * D.bin_ns) +
    '\nlive (filtered) ' + bytes(R.live[b]) + (R.siteLive ? '\nlive (site) ' + bytes(R.siteLive[b]) : '') +
    '\nallocated ' + bytes(R.allocBin[b] * BPS) + '\nminor GCs ' + (D.gc.minor[b] || 0));
});
tl.canvas.addEventListener('mouseleave', hideTip);
window.addEventListener('mouseup', function () {
  if (!tl.drag) return;
  var a = Math.min(tl.drag[0], tl.drag[1]), b = Math.max(tl.drag[0], tl.drag[1]);
  tl.drag = null; S[$('brushmode').value] = [a, b]; syncControls(); update();
});
tl.canvas.addEventListener('dblclick', function () { S.alloc = S.live = S.coll = null; syncControls(); update(); });

// ---------- types (report --by type) ----------
// The OCaml type of each cell's node (cnType: its string's id, -1 none),
// when the report was written with --by type: the Types view (the types
// over the filtered cells, as the sites table has sites; a click keeps
// that type only), the type filter (S.type, a regex on the type: the
// cells of other types leave every view), and the timeline's live heap
// stacked by type (the TYPE_BANDS largest types by peak over the
// filtered cells, the others as one grey band).
var cnType = null, TYPE_BANDS = 8;
var TYPE_COLOURS = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7'];
function setupTypes(A) {
  if (!A.node_type) return;
  cnType = new Int32Array(NCN);
  for (var k = 0; k < NCN; k++) cnType[k] = A.node_type[cnNode[k]] - 1;
  $('typefilter').style.display = ''; $('typestab').style.display = '';
}
// Per cell node (cIdx): 1 when its type matches S.type; null without a
// type filter (or with a bad regex, which the status line reports).
var typeMaskOf = null, typeMaskBuf = null;
function typeMask() {
  var r = cnType && S.type ? re(S.type) : null;
  if (!r) return null;
  if (typeMaskOf !== S.type) {
    var hit = new Uint8Array(STR.length);   // per string: 0 untested, 1 no, 2 yes
    typeMaskBuf = typeMaskBuf || new Uint8Array(NCN);
    for (var k = 0; k < NCN; k++) {
      var t = cnType[k];
      if (t < 0) { typeMaskBuf[k] = 0; continue; }
      if (!hit[t]) hit[t] = r.test(STR[t]) ? 2 : 1;
      typeMaskBuf[k] = hit[t] === 2 ? 1 : 0;
    }
    typeMaskOf = S.type;
  }
  return typeMaskBuf;
}
// The live bytes per bin of the largest types over the kept cells:
// { ids, levels (one Float64Array per type), other }, cached in R.
function typeBands() {
  if (!cnType) return null;
  if (R.bands) return R.bands;
  var diff = new Map(), keep = R.keep;
  for (var i = 0; i < NC; i++) {
    if (!keep[i]) continue;
    var t = cnType[cIdx[i]], d = diff.get(t), s = cSamp[i];
    if (!d) diff.set(t, d = new Float64Array(NB + 1));
    d[cAbin[i]] += s; if (cDbin[i] < NB) d[cDbin[i]] -= s;
  }
  var all = [];
  diff.forEach(function (d, t) {
    var lv = new Float64Array(NB), acc = 0, peak = 0;
    for (var b = 0; b < NB; b++) { acc += d[b]; lv[b] = acc * BPS; if (lv[b] > peak) peak = lv[b]; }
    all.push({ id: t, levels: lv, peak: peak });
  });
  all.sort(function (a, b) { return b.peak - a.peak || a.id - b.id; });
  var other = new Float64Array(NB);
  all.slice(TYPE_BANDS).forEach(function (x) { for (var b = 0; b < NB; b++) other[b] += x.levels[b]; });
  R.bands = { shown: all.slice(0, TYPE_BANDS), other: other, more: Math.max(0, all.length - TYPE_BANDS) };
  return R.bands;
}
function typeName(id) { return id < 0 ? 'unknown' : STR[id]; }
function drawTypeBands(g, X, Y, bw, T) {
  var tb = typeBands();
  if (!tb) return;
  var low = new Float64Array(NB), bands = tb.shown.map(function (x) { return x.levels; });
  if (tb.more) bands.push(tb.other);
  bands.forEach(function (lv, j) {
    g.beginPath(); g.moveTo(X(0), Y(low[0]));
    for (var k = 0; k < NB; k++) { g.lineTo(X(k * bw), Y(low[k] + lv[k])); g.lineTo(X(Math.min(T, (k + 1) * bw)), Y(low[k] + lv[k])); }
    for (var k2 = NB - 1; k2 >= 0; k2--) { g.lineTo(X(Math.min(T, (k2 + 1) * bw)), Y(low[k2])); g.lineTo(X(k2 * bw), Y(low[k2])); }
    g.closePath(); g.fillStyle = j < tb.shown.length ? TYPE_COLOURS[j] : '#ccc'; g.globalAlpha = 0.75; g.fill(); g.globalAlpha = 1;
    for (var k3 = 0; k3 < NB; k3++) low[k3] += lv[k3];
  });
}
function typeLegend() {
  var tb = typeBands();
  if (!tb) return '';
  return '<br>by type: ' + tb.shown.map(function (x, j) {
    var name = typeName(x.id), short = name.length > 60 ? name.slice(0, 59) + '…' : name;
    return '<span title="' + esc(name) + ': peak ' + bytes(x.peak) + '"><i style="background:' + TYPE_COLOURS[j] + '"></i>' + esc(short) + '</span>';
  }).join('') + (tb.more ? '<span><i style="background:#ccc"></i>' + tb.more + ' other types</span>' : '');
}
// The Types view: the filtered cells summed per type.
function drawTypes() {
  var el = $('typesview');
  if (!cnType) { el.innerHTML = '<div class="note">No types: write the report with --by type.</div>'; return; }
  var per = new Map(), tot = 0;
  for (var k = 0; k < NCN; k++) {
    if (!R.kBlocks[k]) continue;
    var t = cnType[k], r = per.get(t);
    if (!r) per.set(t, r = { id: t, alloc: 0, samples: 0, blocks: 0, liveB: 0, collB: 0, promB: 0 });
    r.samples += R.kAlloc[k]; r.alloc += R.kAlloc[k] * BPS; r.blocks += R.kBlocks[k];
    r.liveB += R.kLive[k] * BPS; r.collB += R.kColl[k] * BPS; r.promB += R.kProm[k] * BPS;
    tot += R.kAlloc[k] * BPS;
  }
  var key = S.sort in { alloc: 1, samples: 1, blocks: 1, liveB: 1, collB: 1, promB: 1 } ? S.sort : 'alloc';
  var rows = Array.from(per.values()).sort(function (a, b) { return b[key] - a[key] || a.id - b.id; });
  var rx = searchRe(), h = ['<table class="sites" id="typestable"><tr><th>type</th><th>allocated</th><th>%</th><th>samples</th><th>blocks</th><th>live at end</th><th>collected</th><th>promoted</th></tr>'];
  rows.forEach(function (r) {
    if (rx && !rx.test(typeName(r.id))) return;
    h.push('<tr data-type="' + esc(typeName(r.id)) + '"><td class="name" title="' + esc(typeName(r.id)) + '">' + esc(typeName(r.id)) + '</td><td data-v="' + r.alloc + '">' + bytes(r.alloc) +
      '</td><td>' + (tot ? (100 * r.alloc / tot).toFixed(1) : '0') + '</td><td data-v="' + r.samples + '">' + num(r.samples) + '</td><td>' + num(r.blocks) +
      '</td><td data-v="' + r.liveB + '">' + bytes(r.liveB) + '</td><td>' + bytes(r.collB) + '</td><td>' + bytes(r.promB) + '</td></tr>');
  });
  h.push('</table><div class="note">' + rows.length + ' types. Click a type to keep only its allocations in every view (the type filter); click again to drop the filter.</div>');
  el.innerHTML = h.join('');
}
function escapeRe(s) { return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'); }
$('typesview').addEventListener('click', function (e) {
  var tr = e.target.closest('tr[data-type]');
  if (!tr) return;
  var want = '^' + escapeRe(tr.dataset.type) + '$';
  S.type = S.type === want ? '' : want; syncControls(); update();
});

// ---------- tooltip ----------
var tip = $('tip');
function showTip(e, text) { tip.style.display = 'block'; tip.textContent = text; tip.style.left = Math.min(e.clientX + 14, window.innerWidth - 300) + 'px'; tip.style.top = (e.clientY + 14) + 'px'; }
function hideTip() { tip.style.display = 'none'; }

// ---------- sites table ----------
var COLS = [['name', 'site', 0], ['file', 'file:line', 0], ['alloc', 'allocated', 1], ['pct', '%', 0], ['samples', 'samples', 1],
  ['blocks', 'blocks', 1], ['objects', 'objects', 1], ['liveB', 'live at end', 1], ['collB', 'collected', 1], ['promB', 'promoted', 1], ['flag', 'flag', 0]];
// Only the rows in view are in the DOM (fixed row height, spacer rows
// above and below): a table of thousands of sites lays out as fast as one
// of forty, whatever the filters keep.
var TROW = 20, table = { rows: [], top: 0, pending: false };
function drawTable() {
  var rx = null, rows = R.rows;
  if (S.search) { rx = re(S.search); if (rx === undefined) rx = null; }
  if (rx) rows = rows.filter(function (r) { return rx.test(r.name) || rx.test(r.file); });
  var k = S.sort;
  sizeSiteColumns(R.rows);
  rows = rows.slice().sort(function (a, b) { return k === 'name' ? (a.name < b.name ? -1 : 1) : (b[k] - a[k]) || (a.name < b.name ? -1 : 1); });
  var tot = R.total, h = ['<table class="sites" style="min-width:' + siteColumns.min + '"><colgroup><col style="width:60%"><col style="width:40%">' + siteColumns.cols + '</colgroup><thead><tr>'];
  COLS.forEach(function (c) { h.push('<th data-k="' + c[0] + '" class="' + (c[0] === 'name' || c[0] === 'file' ? 'name ' : '') + (c[0] === k ? 'sorted' : '') + '">' + c[1] + '</th>'); });
  h.push('</tr><tr id="totrow"><td class="name"><b>total</b> (' + R.rows.length + ' sites)</td><td></td><td data-v="' + tot.alloc + '">' + bytes(tot.alloc) + '</td><td>100</td><td data-v="' + tot.samples + '">' + num(tot.samples) +
    '</td><td data-v="' + tot.blocks + '">' + num(tot.blocks) + '</td><td>' + num(tot.objects) + '</td><td data-v="' + tot.live + '">' + bytes(tot.live) + '</td><td>' + bytes(tot.coll) + '</td><td>' + bytes(tot.prom) + '</td><td></td></tr></thead><tbody id="tbody"></tbody></table>');
  if (table.top) { $('tablewrap').scrollTop = 0; table.top = 0; }
  $('tablewrap').innerHTML = h.join('');
  table.rows = rows;
  paintRows();
  $('tabinfo').textContent = rows.length + ' of ' + R.rows.length + ' sites';
  drawRelations();
}
// The table's layout is fixed (its rows are painted as they scroll into
// view), so its columns are sized here: each figure column as wide as its
// widest figure over all the sites and the total, or its header's longest
// word, measured in the table's font; name and file:line share the rest,
// and are the only cells ever cut (with an ellipsis, the whole text in
// their title).  Narrower than that, the table scrolls sideways.
var siteColumns = { cols: '', min: '0' }, measurer = null;
function textWidth(s, bold, size) {
  if (!measurer) {
    measurer = document.createElement('canvas').getContext('2d');
    measurer.family = getComputedStyle(document.body).fontFamily;
  }
  measurer.font = (bold ? 'bold ' : '') + (size || 13) + 'px ' + measurer.family;
  return measurer.measureText(s).width;
}
function sizeSiteColumns(rows) {
  var tot = R.total, longest = {};
  // per column the strings of the two greatest lengths (digits are of
  // one width; units differ): only those are measured
  function fit(k, s) {
    var l = longest[k] || (longest[k] = { n: 0, s: [] });
    if (s.length > l.n) { l.s = l.s.filter(function (x) { return x.length >= s.length - 1; }); l.n = s.length; }
    if (s.length >= l.n - 1 && l.s.length < 64 && l.s.indexOf(s) < 0) l.s.push(s);
  }
  rows.concat([{ alloc: tot.alloc, samples: tot.samples, blocks: tot.blocks, objects: tot.objects, liveB: tot.live, collB: tot.coll, promB: tot.prom }]).forEach(function (r) {
    fit('alloc', bytes(r.alloc)); fit('samples', num(r.samples)); fit('blocks', num(r.blocks)); fit('objects', num(r.objects));
    fit('liveB', bytes(r.liveB)); fit('collB', bytes(r.collB)); fit('promB', bytes(r.promB));
  });
  fit('pct', '100.0');
  var badge = 0;
  R.flags.forEach(function (f) { badge = Math.max(badge, textWidth(f.kind === 'race' ? 'allocation race' : 'leak', false, 11) + 8); });
  var cols = [], sum = 0;
  COLS.slice(2).forEach(function (c) {
    var w = c[0] === 'flag' ? badge : 0;
    (longest[c[0]] ? longest[c[0]].s : []).forEach(function (x) { w = Math.max(w, textWidth(x)); });
    c[1].split(' ').forEach(function (word) { w = Math.max(w, textWidth(word, true)); });
    w = Math.ceil(w + 2 * 6 + 2);                     // the cell's padding, and rounding
    sum += w;
    cols.push('<col style="width:' + w + 'px">');
  });
  siteColumns = { cols: cols.join(''), min: (sum + 240) + 'px' };
}
function paintRows() {
  var rows = table.rows, tot = R.total, n = rows.length, vis = Math.ceil(window.innerHeight * 0.55 / TROW) + 10;
  var a = Math.max(0, Math.min(n - vis, Math.floor(table.top / TROW) - 5)), b = Math.min(n, a + vis), h = [];
  if (a > 0) h.push('<tr style="height:' + a * TROW + 'px"></tr>');
  for (var i = a; i < b; i++) {
    var r = rows[i], fl = R.flags.get(r.id);
    h.push('<tr data-id="' + r.id + '"' + (r.id === S.site ? ' class="sel"' : '') + '><td class="name" title="' + esc(r.name) + '">' + esc(r.name) + '</td><td class="file" title="' + esc(r.file) + '">' + esc(r.file) +
      '</td><td data-v="' + r.alloc + '">' + bytes(r.alloc) + '</td><td>' + (tot.alloc ? (100 * r.alloc / tot.alloc).toFixed(1) : '0') + '</td><td data-v="' + r.samples + '">' + num(r.samples) +
      '</td><td data-v="' + r.blocks + '">' + num(r.blocks) + '</td><td>' + num(r.objects) + '</td><td data-v="' + r.liveB + '">' + bytes(r.liveB) + '</td><td>' + bytes(r.collB) + '</td><td>' + bytes(r.promB) +
      '</td><td>' + (fl ? '<span class="flag ' + fl.kind + '" title="in flight ×' + fl.growth.toFixed(1) + ', ' + Math.round(100 * fl.died) + '% died while the site allocates">' + (fl.kind === 'race' ? 'allocation race' : 'leak') + '</span>' : '') + '</td></tr>');
  }
  if (b < n) h.push('<tr style="height:' + (n - b) * TROW + 'px"></tr>');
  $('tbody').innerHTML = h.join('');
}
$('tablewrap').addEventListener('scroll', function () {
  table.top = this.scrollTop;
  if (table.pending) return;
  table.pending = true; requestAnimationFrame(function () { table.pending = false; paintRows(); });
});
$('tablewrap').addEventListener('click', function (e) {
  var th = e.target.closest('th');
  if (th) { S.sort = th.dataset.k === 'pct' ? 'alloc' : th.dataset.k; drawTable(); return; }
  var tr = e.target.closest('tr[data-id]');
  if (tr) { var id = +tr.dataset.id; S.site = S.site === id ? null : id; update(); }
});
// Callers and callees of the selected site's function: the frame just
// outside / inside its innermost occurrence in each kept stack.
function drawRelations() {
  var el = $('rel');
  if (S.site === null) { el.innerHTML = '<div class="note">Click a row for its callers and callees, its live heap on the timeline and its lifetimes.</div>'; return; }
  // one pass over the frame tree (parents first): inn[q] is the innermost
  // node named f on the path to q, below[q] the node just inside it (-1
  // when q is that node), so each kept stack costs O(1) however deep
  var ft = frameTree(), f = S.site, P = ft.parent, Nm = ft.name, n = ft.n;
  if (!ft.inn) { ft.inn = pooled('inn', Int32Array, n); ft.below = pooled('below', Int32Array, n); }
  var inn = ft.inn, below = ft.below;
  inn[0] = -1; below[0] = -1;
  for (var q = 1; q < n; q++) {
    var p = P[q];
    if (Nm[q] === f) { inn[q] = q; below[q] = -1; }
    else { inn[q] = inn[p]; below[q] = inn[p] >= 0 && below[p] < 0 ? q : below[p]; }
  }
  var callers = new Map(), callees = new Map(), total = 0;
  for (var k = 0; k < NCN; k++) {
    var v = R.kAlloc[k]; if (!v) continue;
    var q0 = ftOf[cnNode[k]], m = q0 > 0 ? inn[q0] : -1;
    if (m < 0) { if (f !== NOBT || q0 !== 0) continue; }
    total += v;
    var a = m > 0 && P[m] > 0 ? Nm[P[m]] : -1, inner = m >= 0 && below[q0] >= 0 ? Nm[below[q0]] : -2;
    callers.set(a, (callers.get(a) || 0) + v); callees.set(inner, (callees.get(inner) || 0) + v);
  }
  function list(m, title) {
    var arr = Array.from(m.entries()).sort(function (x, y) { return y[1] - x[1]; }).slice(0, 40);
    return '<div><h3>' + title + '</h3><table>' + arr.map(function (e) {
      var name = e[0] === -1 ? '<root>' : e[0] === -2 ? '<self>' : NAMES[e[0]];
      return '<tr><td class="name">' + esc(name) + '</td><td>' + bytes(e[1] * BPS) + '</td><td>' + (100 * e[1] / total).toFixed(1) + '%</td></tr>';
    }).join('') + '</table></div>';
  }
  el.innerHTML = list(callers, 'callers of ' + esc(NAMES[f])) + list(callees, 'callees of ' + esc(NAMES[f]) + ' (&lt;self&gt; = allocates itself)');
}

// ---------- flame graph and icicle (canvas) ----------
// Flame: the frame tree drawn from the root (at the bottom), children
// sorted by name, nothing under half a pixel.  Icicle: allocation sites on
// top; built level by level by grouping the frame-tree nodes that carry
// self values by the name at that distance from the site, so only the
// visible part is ever grouped.
function fmtMetric(v) { return S.metric === 'samples' ? num(v) + ' samples' : bytes(v); }
var zoom = { flame: 0, icicle: [] }, drawn = { flame: {}, icicle: {} };
// 48 warm colours; a frame's colour depends on its name only.
var PALETTE = []; for (var pi = 0; pi < 48; pi++) PALETTE.push('hsl(' + (8 + (pi * 7) % 45) + ',' + (65 + (pi * 13) % 30) + '%,' + (58 + (pi * 5) % 14) + '%)');
function hue(id) { return ((id * 2654435761) >>> 0) % 48; }
// names in alphabetical order: RANK[name id] (frames are sorted by name)
var RANK = (function () {
  var ids = NAMES.map(function (n, i) { return i; }).sort(function (a, b) { return NAMES[a] < NAMES[b] ? -1 : NAMES[a] > NAMES[b] ? 1 : 0; });
  var r = new Int32Array(NAMES.length); ids.forEach(function (id, k) { r[id] = k; }); return r;
})();
function byName(a, b) { return RANK[a] - RANK[b]; }
function flameRects(W) {
  var V = ftValues(), T = V.tot, KB = FT.keyBelow, first = FT.first, next = FT.next, Nm = FT.name;
  var rects = [], z = zoom.flame, total = T[KB[z]], minw = total / W;
  if (!(total > 0)) return { rects: [], total: 0 };
  // the zoomed node's ancestors as full-width bars
  var anc = []; for (var q = z; q >= 0; q = FT.parent[q]) anc.unshift(q);
  anc.forEach(function (q2, d) { rects.push([0, d, W, Nm[q2], T[KB[q2]], q2]); });
  function rec(q, d, x, w) {
    var tq = T[KB[q]], c = first[q];
    while (c >= 0 && next[c] < 0) {            // chains (deep stacks): no sorting
      var tc = T[KB[c]];
      if (tc < minw) return;
      w = w * tc / tq; tq = tc;
      rects.push([x, d, w, Nm[c], tc, c]);
      q = c; c = first[q]; d++;
    }
    var kids = [];
    for (; c >= 0; c = next[c]) if (T[KB[c]] >= minw) kids.push(c);
    kids.sort(function (a, b) { return RANK[Nm[a]] - RANK[Nm[b]]; });
    for (var i = 0; i < kids.length; i++) {
      var c2 = kids[i], t2 = T[KB[c2]], cw = w * t2 / tq;
      rects.push([x, d, cw, Nm[c2], t2, c2]);
      rec(c2, d + 1, x, cw); x += cw;
    }
  }
  rec(z, anc.length, 0, W);
  return { rects: rects, total: total, all: T[KB[0]], zoomDepth: anc.length - 1 };
}
function icicleRects(W) {
  var V = ftValues(), z = zoom.icicle, P = FT.parent, Nm = FT.name, cur = [], val = [], total = 0;
  // a cursor is the frame-tree node whose name is the frame at the level
  // being grouped; 0 at level 0: a sample without backtrace
  function nameAt(q, d) { return q > 0 ? Nm[q] : q === 0 && d === 0 ? NOBT : -1; }
  for (var j0 = 0; j0 < FT.keys.length; j0++) {
    var i = FT.keys[j0];
    if (!(V.self[i] > 0)) continue;
    var q = i, ok = true;
    for (var j = 0; j < z.length && ok; j++) { if (nameAt(q, j) !== z[j]) ok = false; q = q > 0 ? P[q] : -1; }
    if (ok) { cur.push(q); val.push(V.self[i]); total += V.self[i]; }
  }
  var rects = [], minw = total / W;
  z.forEach(function (nm, d) { rects.push([0, d, W, nm, total, -1]); });
  // group by the name at level d; items of a group whose next cursors are
  // equal merge, so a level costs at most its distinct frame-tree nodes.
  // Merging goes through stamps (one token per group) rather than maps.
  if (!FT.stamp) { FT.stamp = pooled('stamp', Int32Array, FT.n + 1).fill(0, 0, FT.n + 1); FT.slot = pooled('slot', Int32Array, FT.n + 1); FT.token = 0; }
  var stamp = FT.stamp, slot = FT.slot;
  function rec(cur, val, d, x, w, sum) {
    var groups = new Map();
    for (var i = 0; i < cur.length; i++) {
      var q = cur[i], nm = nameAt(q, d);
      if (nm < 0) continue;
      var g = groups.get(nm);
      if (!g) { g = { cur: [], val: [], token: ++FT.token, sum: 0 }; groups.set(nm, g); }
      var up = q > 0 ? P[q] : -1, u1 = up + 1;
      if (stamp[u1] === g.token) g.val[slot[u1]] += val[i];
      else { stamp[u1] = g.token; slot[u1] = g.cur.length; g.cur.push(up); g.val.push(val[i]); }
      g.sum += val[i];
    }
    var keys = Array.from(groups.keys()).sort(byName), cx = x;
    for (var k2 = 0; k2 < keys.length; k2++) {
      var g2 = groups.get(keys[k2]), gw = w * g2.sum / sum;
      if (g2.sum >= minw) { rects.push([cx, d, gw, keys[k2], g2.sum, -1]); rec(g2.cur, g2.val, d + 1, cx, gw, g2.sum); }
      cx += gw;
    }
  }
  if (total > 0) rec(cur, val, z.length, 0, W, total);
  return { rects: rects, total: total };
}
// The graph can be thousands of pixels tall (deep stacks): the canvas only
// covers the visible part of its scrolling box (sticky at its top, over a
// spacer as tall as the graph) and is repainted on scroll.
// Sizes and scroll offsets are read once (then on resize and scroll
// events), never in an update: reading them after the table changed would
// lay the page out once more in the middle of the script.
var fg = { flame: { top: 0, raf: 0 }, icicle: { top: 0, raf: 0 } };
function fgSize(kind) {
  var f = fg[kind];
  var cv = $(kind + 'c');
  if (!f.W && cv.clientWidth) {
    // The scrolling box ends at the window's bottom (at least 200 px
    // tall), so that the flame graph's root, at the box's bottom, is in
    // view as the tab opens (an 80vh box below the timeline put it under
    // the fold).
    var wrap = cv.parentNode.parentNode, top = wrap.getBoundingClientRect().top + window.scrollY;
    f.W = cv.clientWidth; f.VH = Math.max(200, Math.floor(window.innerHeight - top - 12));
    wrap.style.height = f.VH + 'px';
  }
  return f;
}
function fgScroll(kind, top) {
  var f = fg[kind];
  if (f.top === top) return;
  f.top = top;
  if (!f.raf) f.raf = requestAnimationFrame(function () { f.raf = 0; $(kind + 'c').parentNode.parentNode.scrollTop = f.top; });
}
function drawFlame(kind) {
  var cv = $(kind + 'c'), sz = fgSize(kind), W = sz.W || 1000, RH = 17, inv = kind === 'icicle';
  var res = inv ? icicleRects(W) : flameRects(W), rects = res.rects, maxd = 0;
  for (var i = 0; i < rects.length; i++) if (rects[i][1] > maxd) maxd = rects[i][1];
  var H = (maxd + 1) * RH + 4;
  cv.parentNode.style.height = H + 'px';
  drawn[kind] = { rects: rects, y: function (d) { return inv ? d * RH : H - (d + 1) * RH; }, RH: RH, total: res.total, W: W, H: H,
                  all: inv ? res.total : res.all, zoomDepth: inv ? -1 : res.zoomDepth, icicleZoomed: inv && zoom.icicle.length > 0 };
  // the flame graph's root is at the bottom: show it first
  var VH = Math.min(H, sz.VH || 800);
  if (!inv) fgScroll(kind, Math.max(0, H - VH));
  else if (sz.top > H - VH) fgScroll(kind, Math.max(0, H - VH));
  paintFlame(kind);
}
function paintFlame(kind) {
  var cv = $(kind + 'c'), d = drawn[kind], W = d.W, RH = d.RH;
  var top = fg[kind].top, VH = Math.max(1, Math.min(d.H, fg[kind].VH || 800)), dpr = window.devicePixelRatio || 1;
  if (cv.width !== Math.round(W * dpr) || cv.height !== Math.round(VH * dpr)) {
    cv.width = Math.round(W * dpr); cv.height = Math.round(VH * dpr); cv.style.height = VH + 'px';
  }
  var g = cv.getContext('2d'); g.setTransform(dpr, 0, 0, dpr, 0, -top * dpr);
  g.fillStyle = '#fff'; g.fillRect(0, top, W, VH); g.font = '11px monospace'; g.textBaseline = 'middle';
  var rx = S.search ? re(S.search) : null, zd = kind === 'icicle' ? zoom.icicle.length : -1, rects = d.rects;
  // the rows in view; one fill style per colour, then the labels
  var vis = [], batches = {};
  for (var r = 0; r < rects.length; r++) { var y = d.y(rects[r][1]); if (y + RH >= top && y <= top + VH) vis.push(rects[r]); }
  for (var k = 0; k < vis.length; k++) {
    var q = vis[k], c = q[3] === TRUNCID ? '#aaa' : q[3] === ALL ? '#eee' : rx && rx.test(NAMES[q[3]]) ? '#c6f' : q[3] === S.site ? '#6ae' : q[1] < zd ? '#ddd' : PALETTE[hue(q[3])];
    (batches[c] = batches[c] || []).push(q);
  }
  Object.keys(batches).forEach(function (c) {
    g.fillStyle = c; var b = batches[c];
    for (var i = 0; i < b.length; i++) g.fillRect(b[i][0], d.y(b[i][1]), Math.max(b[i][2] - 0.5, 0.5), RH - 1);
  });
  g.fillStyle = '#000';
  for (var k2 = 0; k2 < vis.length; k2++) {
    var q2 = vis[k2];
    if (q2[2] > 28) { var nm = NAMES[q2[3]], m = Math.floor((q2[2] - 6) / 6.6); g.fillText(nm.length > m ? nm.slice(0, Math.max(0, m - 1)) + '…' : nm, q2[0] + 3, d.y(q2[1]) + RH / 2); }
  }
  if (!rects.length) { g.fillStyle = '#666'; g.fillText('nothing selected by the filters', 10, top + 12); }
}
function flameHit(kind, e) {
  var cv = $(kind + 'c'), r = cv.getBoundingClientRect(), dd = drawn[kind];
  var x = e.clientX - r.left, y = e.clientY - r.top + fg[kind].top;
  if (!dd.rects) return null;
  for (var i = 0; i < dd.rects.length; i++) { var q = dd.rects[i], yy = dd.y(q[1]); if (x >= q[0] && x < q[0] + q[2] && y >= yy && y < yy + dd.RH) return q; }
  return null;
}
// A frame's value as a share of everything drawn, and of the zoomed frame
// for the frames above it (the zoomed frame's ancestors, drawn at full
// width, hold more than it: a share of the zoom would pass 100 %).
function flameShare(d, q) {
  var t = fmtMetric(q[4]) + '  ' + (100 * q[4] / (d.all || 1)).toFixed(2) + (d.icicleZoomed ? '% of the frames zoomed on' : '% of all');
  if (d.zoomDepth > 0 && q[1] > d.zoomDepth) t += ', ' + (100 * q[4] / (d.total || 1)).toFixed(2) + '% of the zoomed frame';
  return t;
}
['flame', 'icicle'].forEach(function (kind) {
  var cv = $(kind + 'c'), pending = false;
  cv.parentNode.parentNode.addEventListener('scroll', function () {
    if (fg[kind].raf) return;              // ours, not yet applied
    fg[kind].top = this.scrollTop;
    if (pending || !drawn[kind].rects) return;
    pending = true; requestAnimationFrame(function () { pending = false; paintFlame(kind); });
  });
  cv.addEventListener('mousemove', function (e) { var q = flameHit(kind, e); if (!q) return hideTip();
    showTip(e, NAMES[q[3]] + '\n' + flameShare(drawn[kind], q)); });
  cv.addEventListener('mouseleave', hideTip);
  cv.addEventListener('click', function (e) {
    var q = flameHit(kind, e); if (!q) return;
    if (kind === 'flame') zoom.flame = q[5];
    else {
      // names from the site down to the clicked frame: the rects above it
      var d = drawn.icicle, chain = [q];
      for (var dd = q[1] - 1; dd >= 0; dd--)
        for (var i = 0; i < d.rects.length; i++) { var p = d.rects[i]; if (p[1] === dd && p[0] <= chain[0][0] + 0.01 && p[0] + p[2] >= chain[0][0] + chain[0][2] - 0.01) { chain.unshift(p); break; } }
      zoom.icicle = chain.map(function (p) { return p[3]; });
    }
    drawFlame(kind);
  });
});
document.querySelectorAll('.unzoom').forEach(function (b) { b.onclick = function () { zoom.flame = 0; zoom.icicle = []; drawView(); }; });

// ---------- call graph ----------
// Functions as nodes, calls as edges, from one walk of the frame tree:
// a function's cumulative value counts each stack once (its outermost
// occurrence), and so does an edge into it, so the edges into a function
// add up to its cumulative value; calls into a function already on the
// stack are recursion edges.  Subtrees under 0.1% are not walked.
function drawGraph() {
  var V = ftValues(), KB = FT.keyBelow, total = V.tot[KB[0]], cum = new Float64Array(NS), flat = new Float64Array(NS);
  var edges = new Map(), rec = new Map(), on = new Int32Array(NS), cut = 0.001 * total;
  var stack = [0], it = [FT.first[0]];
  flat[NOBT] += V.self[0]; cum[NOBT] += V.self[0];
  while (stack.length) {
    var top = stack.length - 1, c = it[top];
    if (c < 0) { var q = stack.pop(); it.pop(); if (q) on[FT.name[q]]--; continue; }
    it[top] = FT.next[c];
    if (V.tot[KB[c]] < cut || !(V.tot[KB[c]] > 0)) continue;
    var f = FT.name[c], p = stack[top], pf = p ? FT.name[p] : -1;
    if (!on[f]) { cum[f] += V.tot[KB[c]]; if (pf >= 0) { var ek = pf * NS + f; edges.set(ek, (edges.get(ek) || 0) + V.tot[KB[c]]); } }
    else if (pf >= 0 && pf !== f) { var rk = pf * NS + f; rec.set(rk, (rec.get(rk) || 0) + V.tot[KB[c]]); }
    flat[f] += V.self[c];
    on[f]++; stack.push(c); it.push(FT.first[c]);
  }
  var cand = [];
  for (var f2 = 0; f2 < NS; f2++) if (cum[f2] >= 0.005 * total && f2 !== ALL) cand.push(f2);
  var nodes = cand.sort(function (a, b) { return cum[b] - cum[a]; }).slice(0, 60);
  var keep = new Map(); nodes.forEach(function (f3, i) { keep.set(f3, i); });
  var E = [], nedges = edges.size + rec.size;
  [[edges, 0], [rec, 1]].forEach(function (m) { m[0].forEach(function (v, k) { var a = Math.floor(k / NS), b = k - a * NS; if (keep.has(a) && keep.has(b) && v >= cut) E.push([keep.get(a), keep.get(b), v, m[1]]); }); });
  var N = nodes.length, out = nodes.map(function () { return []; }), inn = nodes.map(function () { return []; });
  E.forEach(function (e, i) { out[e[0]].push(i); inn[e[1]].push(i); });
  // layers: longest path from the roots, recursion edges left out
  var layer = new Int32Array(N), order = [], state = new Uint8Array(N);
  function dfs(u) { state[u] = 1; out[u].forEach(function (ei) { var w = E[ei][1]; if (E[ei][3]) return; if (state[w] === 1) E[ei][3] = 1; else if (!state[w]) dfs(w); }); state[u] = 2; order.push(u); }
  for (var u = 0; u < N; u++) if (!inn[u].some(function (ei) { return !E[ei][3]; }) && !state[u]) dfs(u);
  for (var u2 = 0; u2 < N; u2++) if (!state[u2]) dfs(u2);
  for (var k = order.length - 1; k >= 0; k--) { var a0 = order[k]; out[a0].forEach(function (ei) { if (!E[ei][3]) layer[E[ei][1]] = Math.max(layer[E[ei][1]], layer[a0] + 1); }); }
  var L = []; for (var i2 = 0; i2 < N; i2++) (L[layer[i2]] = L[layer[i2]] || []).push(i2);
  for (var li = 0; li < L.length; li++) if (!L[li]) L[li] = [];
  // order within layers: weighted barycentres, sweeping down then up
  var pos = new Float64Array(N);
  L.forEach(function (l) { l.forEach(function (x, j) { pos[x] = j; }); });
  function sweep(down) {
    for (var li2 = down ? 1 : L.length - 2; down ? li2 < L.length : li2 >= 0; li2 += down ? 1 : -1) {
      var l = L[li2], bc = new Map();
      l.forEach(function (x) { var s = 0, c2 = 0; (down ? inn[x] : out[x]).forEach(function (ei) { if (E[ei][3]) return; var o = down ? E[ei][0] : E[ei][1]; s += pos[o] * E[ei][2]; c2 += E[ei][2]; }); bc.set(x, c2 ? s / c2 : pos[x]); });
      l.sort(function (x, y) { return bc.get(x) - bc.get(y); }); l.forEach(function (x, j) { pos[x] = j; });
    }
  }
  for (var r = 0; r < 4; r++) { sweep(true); sweep(false); }
  // geometry: boxes in rows, rows centred, edges as vertical curves
  var BH = 34, VG = 46, width = [], xs = new Float64Array(N), ys = new Float64Array(N), Wmax = 0;
  function label(f4) { var s = NAMES[f4]; return s.length > 44 ? '…' + s.slice(-43) : s; }
  function second(f4) { var c3 = cum[f4], fl = flat[f4]; return fmtMetric(c3) + ' (' + (100 * c3 / total).toFixed(1) + '%)' + (fl ? ' self ' + (100 * fl / total).toFixed(1) + '%' : ''); }
  nodes.forEach(function (f4, i) { width[i] = Math.max(80, Math.min(320, Math.max(label(f4).length, second(f4).length) * 6.3 + 12)); });
  L.forEach(function (l, li3) { var x = 10; l.forEach(function (i) { xs[i] = x; ys[i] = 10 + li3 * (BH + VG); x += width[i] + 16; }); Wmax = Math.max(Wmax, x); });
  L.forEach(function (l) { if (!l.length) return; var last = l[l.length - 1], sh = (Wmax - (xs[last] + width[last] + 16)) / 2; l.forEach(function (i) { xs[i] += sh; }); });
  var Hh = 10 + L.length * (BH + VG), sv = ['<svg xmlns="http://www.w3.org/2000/svg" width="' + (Wmax + 80) + '" height="' + Hh + '">'];
  sv.push('<defs><marker id="ar" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="9" markerHeight="9" orient="auto"><path d="M0,0L10,5L0,10z" fill="#666"/></marker></defs>');
  var emax = 0; E.forEach(function (e) { if (!e[3]) emax = Math.max(emax, e[2]); });
  E.forEach(function (e) {
    var a = e[0], b = e[1], sw = 1 + 7 * Math.min(1, e[2] / (emax || 1)), d;
    if (e[3] || ys[b] <= ys[a]) { var xa = xs[a] + width[a], xb = xs[b] + width[b]; d = 'M' + xa + ',' + (ys[a] + BH / 2) + ' C' + (xa + 50) + ',' + (ys[a] + BH / 2) + ' ' + (xb + 50) + ',' + (ys[b] + BH / 2) + ' ' + xb + ',' + (ys[b] + BH / 2); }
    else { var x1 = xs[a] + width[a] / 2, y1 = ys[a] + BH, x2 = xs[b] + width[b] / 2, y2 = ys[b]; d = 'M' + x1 + ',' + y1 + ' C' + x1 + ',' + (y1 + VG / 2) + ' ' + x2 + ',' + (y2 - VG / 2) + ' ' + x2 + ',' + y2; }
    sv.push('<path d="' + d + '" fill="none" stroke="' + (e[3] ? '#a6a' : '#888') + '" stroke-opacity=".7" stroke-width="' + sw.toFixed(1) + '"' + (e[3] ? ' stroke-dasharray="4 3"' : '') + ' marker-end="url(#ar)"><title>' + esc(NAMES[nodes[a]] + ' → ' + NAMES[nodes[b]] + ': ' + fmtMetric(e[2]) + (e[3] ? ' (recursion)' : '')) + '</title></path>');
  });
  var rx = searchRe();
  nodes.forEach(function (f4, i) {
    var c3 = cum[f4], fl = flat[f4], heat = Math.min(1, fl / (0.2 * total || 1)), callers = inn[i].filter(function (ei) { return !E[ei][3]; }).length;
    var hit = rx && rx.test(NAMES[f4]), fill = hit ? '#e2bfff' : 'rgb(255,' + Math.round(245 - 140 * heat) + ',' + Math.round(235 - 190 * heat) + ')';
    sv.push('<g class="cgnode' + (hit ? ' cghit' : '') + '"><rect x="' + xs[i] + '" y="' + ys[i] + '" width="' + width[i] + '" height="' + BH + '" rx="4" fill="' + fill + '" stroke="' + (callers > 1 ? '#c00' : '#555') + '" stroke-width="' + (callers > 1 ? 2 : 1) + '"/>' +
      '<text x="' + (xs[i] + 5) + '" y="' + (ys[i] + 13) + '">' + esc(label(f4)) + '</text><text x="' + (xs[i] + 5) + '" y="' + (ys[i] + 27) + '" fill="#444">' + esc(second(f4)) + '</text>' +
      '<title>' + esc(NAMES[f4] + '\ncumulative ' + fmtMetric(c3) + '\nself ' + fmtMetric(fl) + '\ncallers shown ' + callers + (callers > 1 ? ' (join point)' : '')) + '</title></g>');
  });
  sv.push('</svg>');
  $('cg').innerHTML = N ? sv.join('') : '<div class="note">nothing selected by the filters</div>';
  $('cginfo').textContent = 'Functions holding at least 0.5% of ' + fmtMetric(total) + ' (' + N + ' shown), call edges above 0.1% (' + E.length + ' of ' + nedges +
    '). Box: cumulative share (each stack counted once) and self share, redder = more self; edge width: bytes through the call; red outline: join point (several callers); dashed purple: recursion.';
}

// ---------- lifetimes ----------
function lifeLabel(c) { return c + 1 < NLIFE ? secs(D.life_lo[c]) + ' – ' + secs(D.life_lo[c + 1]) : '≥ ' + secs(D.life_lo[c]); }
function histogram(title, labels, vals, fmt) {
  var max = 0; vals.forEach(function (v) { max = Math.max(max, v); });
  var W = 300, h = ['<div class="hist"><h3>' + title + '</h3><svg width="' + (W + 200) + '" height="' + (labels.length * 14 + 4) + '">'];
  labels.forEach(function (l, i) {
    var w = max ? W * vals[i] / max : 0;
    h.push('<text x="118" y="' + (i * 14 + 11) + '" text-anchor="end" font-size="10">' + esc(l) + '</text><rect x="122" y="' + (i * 14 + 2) + '" width="' + w.toFixed(1) + '" height="11" fill="#69c"/>' +
      (vals[i] ? '<text x="' + (126 + w) + '" y="' + (i * 14 + 11) + '" font-size="10">' + esc(fmt(vals[i])) + '</text>' : ''));
  });
  h.push('</svg></div>');
  return h.join('');
}
// Upper bound of class k of lifetimes in bytes allocated meanwhile:
// 1-2-5 steps from 1 kB (decimal units, as every byte figure).
function lifeBytesBound(k) { return 1000 * [1, 2, 5][k % 3] * Math.pow(10, Math.floor(k / 3)); }
function drawLife() {
  var site = S.site, byLife = new Float64Array(NLIFE), nb = 40, byAlloc = new Float64Array(nb), never = 0;
  for (var i = 0; i < NC; i++) {
    if (!R.keep[i] || (site !== null && cSite[i] !== site)) continue;
    var b = cSamp[i] * BPS; byLife[cLife[i]] += b;
    if (cDbin[i] === NB) { never += b; continue; }
    // lifetime in bytes allocated meanwhile (by the whole program): from
    // the bins' centres, or within one bin the lifetime class's middle
    // times that bin's allocation rate
    var ab = cAbin[i], db = cDbin[i], between;
    if (ab === db) {
      var lc = cLife[i], mid = lc ? Math.sqrt(D.life_lo[lc] * (lc + 1 < NLIFE ? D.life_lo[lc + 1] : 2 * D.life_lo[lc])) : 500;
      between = mid * (allAllocCum[ab + 1] - allAllocCum[ab]) / D.bin_ns;
    } else between = (allAllocCum[db] + allAllocCum[db + 1] - allAllocCum[ab] - allAllocCum[ab + 1]) / 2;
    var k = 0;
    while (k < nb - 1 && between >= lifeBytesBound(k)) k++;
    byAlloc[k] += b;
  }
  var lo = 0, hi = NLIFE - 1; while (lo < hi && !byLife[lo]) lo++; while (hi > lo && !byLife[hi]) hi--;
  var l1 = [], v1 = []; for (var c = lo; c <= hi; c++) { l1.push(lifeLabel(c)); v1.push(byLife[c]); }
  var a0 = 0, a1 = nb - 1; while (a0 < a1 && !byAlloc[a0]) a0++; while (a1 > a0 && !byAlloc[a1]) a1--;
  var l2 = [], v2 = []; for (var c2 = a0; c2 <= a1; c2++) { l2.push(c2 < nb - 1 ? '< ' + bytes(lifeBytesBound(c2)) : '≥ ' + bytes(lifeBytesBound(c2 - 1))); v2.push(byAlloc[c2]); }
  var html = '<h3>Lifetimes of ' + (site === null ? 'all selected blocks' : esc(NAMES[site])) + ' <span class="note">(select a site in the Sites table; bytes per class)</span></h3>' +
    histogram('in time (live at the end: to the end of the trace)', l1, v1, bytes) +
    histogram('in bytes allocated meanwhile (collected blocks; ' + bytes(never) + ' never collected)', l2, v2, bytes);
  var fl = Array.from(R.flags.entries()).sort(function (a, b) { return b[1].inflight - a[1].inflight; });
  html += '<h3>Flags</h3><div class="note">From the promoted blocks of each site (minor-heap churn left out). <b>Leak</b>: the volume in flight grows (mean over the last quarter of the site\'s activity ≥ 2× the first quarter\'s, and ≥ 1% of the selection\'s peak) and less than 15% of those bytes die while the site still allocates. <b>Allocation race</b> (a backlog): the blocks wait longer and longer before they die: the mean proven lifetime (GC latency left out) of the blocks allocated in some eighth of the site\'s activity is ≥ 2× the first quarter\'s and ≥ one major cycle, while the volume in flight has at least doubled; "drained": the lifetimes fell back before the end.</div><table id="lifeflags"><tr><th class="name">site</th><th>flag</th><th>in flight</th><th>growth</th><th>died while allocating</th><th>lifetimes</th></tr>' +
    fl.map(function (e) {
      var f = e[1], race = f.kind === 'race';
      return '<tr><td class="name">' + esc(NAMES[e[0]]) + '</td><td><span class="flag ' + f.kind + '">' + (race ? 'allocation race' : 'leak') + '</span></td><td>' + bytes(f.inflight) + '</td><td>×' + f.growth.toFixed(1) + '</td><td>' + Math.round(100 * f.died) + '%</td><td>' +
        (race ? (isFinite(f.lifeGrowth) ? '×' + f.lifeGrowth.toFixed(1) : 'from 0') + (f.drained ? ', drained' : ', still growing') : '') + '</td></tr>';
    }).join('') + '</table>' +
    (fl.length ? '' : '<div class="note">no site flagged</div>');
  $('lifeview').innerHTML = html;
}

// ---------- retention ----------
// From the heap snapshots: D.snapshots has one entry per trace, null or
// { trace, count, evolution: { kinds, rows: [seq, time, live, retained
// per kind...] }, list }, the list holding the trace's last snapshots
// each analysed by the same code as `ocaml-memprof retainers --json`
// (dominator tree: retained bytes by root kind and by root; live bytes by
// allocation site estimated from the sampled blocks, with their standard
// error; each site's shortest retainer paths; the dominator tree
// aggregated by tag, size class and site and pruned to its heavy part).
// The figures are shown as they are: they do not depend on the filters,
// which select samples, not heap blocks.  The dominator tree is drawn in
// the retention tab and beside the flame graph; a site clicked in it is
// selected as in the sites table.
var SNAPS = (D.snapshots || []).filter(Boolean);
function pct(v, t) { return t ? (100 * v / t).toFixed(1) + '%' : ''; }
function bar(v, max, color) { return '<span class="bar" style="width:' + (max ? Math.max(1, Math.round(120 * v / max)) : 0) + 'px;background:' + color + '"></span>'; }
function snapTrace() { return Math.min(S.rtrace || 0, Math.max(0, SNAPS.length - 1)); }
// the snapshot shown: S.rsnap indexes the trace's list, -1 for the last
function snapOf() {
  var L = SNAPS[snapTrace()].list;
  return L[S.rsnap >= 0 && S.rsnap < L.length ? S.rsnap : L.length - 1];
}
var KIND_COLOURS = { global: '#36c', stack: '#c63', local: '#693', 'c-global': '#999', finaliser: '#c3c', thread: '#3aa', memprof: '#cc3' };
// Retained bytes by root kind over the trace's snapshots (SVG lines), the
// shown snapshot marked.
function evolutionSVG(E, shownSeq) {
  var rows = E.rows, W = 560, H = 150, x0 = 64, x1 = W - 120, y0 = 10, y1 = H - 22;
  var tmax = 0, vmax = 0, used = [];
  rows.forEach(function (r) { tmax = Math.max(tmax, r[1]); vmax = Math.max(vmax, r[2]); });
  E.kinds.forEach(function (k, i) { if (rows.some(function (r) { return r[3 + i] > 0; })) used.push(i); });
  var yt = byteTicks(vmax || 1, 3); vmax = Math.max(vmax, yt[yt.length - 1][0], 1);
  var X = function (t) { return x0 + (x1 - x0) * (tmax ? t / tmax : 0.5); }, Y = function (v) { return y1 - (y1 - y0) * v / vmax; };
  var h = ['<svg id="revo" width="' + W + '" height="' + H + '" font-size="10">'];
  yt.forEach(function (t) { h.push('<line x1="' + x0 + '" x2="' + x1 + '" y1="' + Y(t[0]) + '" y2="' + Y(t[0]) + '" stroke="#eee"/><text x="' + (x0 - 4) + '" y="' + (Y(t[0]) + 3) + '" text-anchor="end">' + esc(t[1]) + '</text>'); });
  timeTicks(tmax || 1, 4).forEach(function (t) { h.push('<text x="' + X(t[0]) + '" y="' + (H - 8) + '" text-anchor="middle">' + esc(t[1]) + '</text>'); });
  function line(col, color, name, k) {
    var pts = rows.map(function (r) { return X(r[1]).toFixed(1) + ',' + Y(r[col]).toFixed(1); }).join(' ');
    h.push('<polyline points="' + pts + '" fill="none" stroke="' + color + '" stroke-width="1.5"' + (col === 2 ? ' stroke-dasharray="4 3"' : '') + '/>');
    rows.forEach(function (r) { h.push('<circle cx="' + X(r[1]).toFixed(1) + '" cy="' + Y(r[col]).toFixed(1) + '" r="' + (r[0] === shownSeq ? 4 : 2) + '" fill="' + color + '"><title>' + esc(name + ', snapshot ' + r[0] + ' at ' + secs(r[1]) + ': ' + bytes(r[col])) + '</title></circle>'); });
    h.push('<text x="' + (x1 + 6) + '" y="' + (y0 + 12 * k + 8) + '" fill="' + color + '">' + esc(name) + '</text>');
  }
  line(2, '#333', 'live', 0);
  used.forEach(function (i, k) { line(3 + i, KIND_COLOURS[E.kinds[i]] || '#888', E.kinds[i], k + 1); });
  h.push('</svg>');
  return h.join('');
}
// The dominator tree (X.tree: parents first, a node's children together
// and heaviest first) as rows that open and close.  Open by default: the
// root, the kinds, and the heaviest child of each open node down to depth
// 6; treeOpen remembers the reader's clicks per snapshot.
var treeOpen = {};
function treeState(X) {
  var key = X.trace + '#' + X.snapshot.seq;
  if (treeOpen[key]) return treeOpen[key];
  var T = X.tree || [], open = new Uint8Array(T.length), first = new Int32Array(T.length).fill(-1), depth = new Int32Array(T.length);
  for (var i = T.length - 1; i > 0; i--) first[T[i].parent] = i;
  for (var j = 1; j < T.length; j++) depth[j] = depth[T[j].parent] + 1;
  for (var k = 0; k < T.length; k++)
    if (T[k].children && (depth[k] <= 1 || (depth[k] < 6 && open[T[k].parent] && first[T[k].parent] === k))) open[k] = 1;
  if (T.length) open[0] = 1;
  return (treeOpen[key] = { open: open, first: first, depth: depth });
}
var TREE_TYPE = { root: '', kind: 'root kind', label: '', blocks: '', others: '' };
// compact: beside the flame graph (narrow bars, short header)
function treeHTML(X, id, compact) {
  var T = X.tree || [], st = treeState(X), rows = [], live = X.snapshot.live_bytes, max = T.length ? T[0].retained : 0;
  if (!T.length) return '<div class="note">no dominator tree in the data</div>';
  function walk(i) {
    var n = T[i], d = st.depth[i], has = n.children > 0, fn = n.function ? NAMES.indexOf(n.function) : -1;
    var sel = fn >= 0 && fn === S.site;
    rows.push('<tr data-t="' + i + '"' + (sel ? ' class="sel"' : '') + '><td data-v="' + n.retained + '">' + (compact ? '' : bar(n.retained, max, '#69c') + ' ') + bytes(n.retained) + '</td><td>' + pct(n.retained, live) + '</td><td>' + num(n.count) +
      '</td><td class="name dtn" title="' + esc((n.kind ? n.kind + ' ' : '') + n.name) + '" style="padding-left:' + (4 + (compact ? 10 : 14) * d) + 'px"><span class="tg">' + (has ? (st.open[i] ? '▾' : '▸') : n.more ? '·' : ' ') + '</span> ' +
      (n.type === 'label' ? '<span class="note">' + esc(n.kind) + '</span> ' : n.type === 'kind' ? '<span class="note">root kind</span> ' : '') +
      (n.function && fn >= 0 && fn < NOBT ? '<a href="#" class="dsite" data-f="' + fn + '">' + esc(n.name) + '</a>' : '<span' + (n.type === 'others' ? ' class="note"' : '') + '>' + esc(n.name) + '</span>') +
      (n.more ? ' <span class="note" title="dominates more blocks than shown (pruned)">…</span>' : '') + '</td></tr>');
    if (has && st.open[i]) for (var c = st.first[i], e = c + n.children; c < e; c++) walk(c);
  }
  walk(0);
  return '<table class="dtree" id="' + id + '"><tr><th>retained</th><th>%</th><th>count</th><th class="name">' + (compact ? 'dominator tree' : 'dominator tree: root kind → root → blocks it alone keeps alive, by tag, size and allocation site') + '</th></tr>' + rows.join('') + '</table>';
}
function treeClick(e, redraw) {
  var a = e.target.closest('a.dsite');
  if (a) { e.preventDefault(); var f = +a.dataset.f; S.site = S.site === f ? null : f; update(); return true; }
  var tr = e.target.closest('tr[data-t]'); if (!tr) return false;
  var X = snapOf(), st = treeState(X), i = +tr.dataset.t;
  if (!X.tree[i].children) return false;
  st.open[i] ^= 1; redraw();
  return true;
}
// Beside the flame graph: the shown snapshot's dominator tree.
function drawFlameSide() {
  var el = $('fgdom');
  if (!SNAPS.length) { el.style.display = 'none'; return; }
  var X = snapOf();
  el.innerHTML = '<h3>Retention <span class="note">heap snapshot ' + X.snapshot.seq + ' at ' + secs(X.snapshot.time_ns) + ', live ' + bytes(X.snapshot.live_bytes) +
    ' (dominator tree: a row retains the rows under it; the filters do not apply; more in the Retention tab)</span></h3>' + treeHTML(X, 'fgtree', true);
}
$('fgdom').addEventListener('click', function (e) { treeClick(e, drawFlameSide); });
// The retention view's sites: the snapshot's own (X.sites, named by the
// innermost frame, or the frames the report's command line hid), or,
// when the page hides frames, its stacks (X.stacks) summed by the first
// location the page's patterns leave (a location is hidden when one of
// its frames matches, as in the CLI), each with the retainer paths of the
// snapshot's sites it merges, shortest first.
function retentionSites(X) {
  var pats = hiders(hidePatterns());
  if (!pats.length || !X.stacks) return X.sites;
  var L = X.stacks.locs, cls = L.map(function (entries) { return entriesClass(pats, entries); });
  var by = new Map(), out = [];
  X.stacks.rows.forEach(function (row) {
    var st = row[4], l = -1, hid = stackHidden(st, function (x) { return cls[x]; });
    for (var k = 0; k < st.length && l < 0; k++) if (!hid[k]) l = st[k];
    var e = l >= 0 ? L[l] : null, name = !e ? '(no stack)' : e.length ? e[0][0] + ' (' + e[0][1] + ':' + e[0][2] + ')' : '?';
    var g = by.get(name);
    if (!g) { g = { site: name, function: e && e.length ? e[0][0] : '', estimate: 0, variance: 0, sampled: 0, from: [] }; by.set(name, g); out.push(g); }
    g.estimate += row[0]; g.variance += row[1]; g.sampled += row[2];
    if (row[3] >= 0 && g.from.indexOf(row[3]) < 0) g.from.push(row[3]);
  });
  out.forEach(function (g) {
    g.stderr = Math.sqrt(g.variance);
    var ps = []; g.from.forEach(function (i) { ps = ps.concat(X.sites[i].paths); });
    g.paths = ps.sort(function (a, b) { return a.steps.length - b.steps.length || b.blocks - a.blocks; }).slice(0, 5);
    // the holders of the sites it merges, each site's own (a root holding two of them is listed twice)
    g.holders = { list: [], estimate: 0, shared: 0 };
    g.from.forEach(function (i) { var hs = X.sites[i].holders; if (!hs) return; g.holders.list = g.holders.list.concat(hs.list); g.holders.estimate += hs.estimate; g.holders.shared += hs.shared; });
    g.holders.list.sort(function (a, b) { return b.through - a.through; });
  });
  return out.sort(function (a, b) { return b.estimate - a.estimate; }).slice(0, X.sites.length);
}
// The line that makes the kinds table add up to the live bytes: what no
// single kind retains (blocks reachable from roots of several kinds are
// dominated by the tree's root alone, and unreachable blocks the snapshot
// still held by nothing).
function kindsRest(kinds, live, kmax) {
  var rest = live;
  kinds.forEach(function (k) { rest -= k.retained; });
  if (!(rest > 0)) return '';
  return '<tr class="rest" title="reachable from roots of several kinds (so retained by no single one), or unreachable garbage still in the heap"><td class="name note">shared or unreachable</td><td data-v="' + rest + '">' +
    bar(rest, kmax, '#bbb') + ' ' + bytes(rest) + '</td><td>' + pct(rest, live) + '</td><td></td></tr>';
}
function drawRetention() {
  var el = $('retention');
  if (!SNAPS.length) {
    el.innerHTML = '<h3>Retention</h3><p class="note" id="nosnap"><b>This trace has no heap snapshot</b>, so there is nothing to show here: which roots keep the heap alive needs one. ' +
      'Take one with <code>OCAMLRUNPARAM=memprof=PATH,memprof_snapshot_at_exit=1</code> (or <code>memprof_snapshot_signal=SIG</code>, <code>memprof_snapshot_every_s=N</code>, ' +
      '<code>memprof_snapshot_every_cycles=N</code>, <code>Gc.Memprof_trace.snapshot ()</code>) and write the report again. The other views describe allocations, not retainers.</p>';
    return;
  }
  var E = SNAPS[snapTrace()], X = snapOf(), sn = X.snapshot, live = sn.live_bytes, h = [];
  h.push('<h3>Retention <span class="note">heap snapshot ' + sn.seq + ' of ' + esc(X.trace) + ' at ' + secs(sn.time_ns) + ': ' +
    num(sn.blocks) + ' blocks, ' + num(sn.edges) + ' pointers, live ' + bytes(live) + (sn.outside_heap_bytes ? ' + ' + bytes(sn.outside_heap_bytes) + ' outside the heap' : '') +
    (sn.complete ? ', pause ' + secs(sn.pause_ns) : ', cut short by the end of the trace') + (sn.blocks_missing ? ', <span class="err">blocks missing (the runtime ran out of memory)</span>' : '') + '</span></h3>');
  h.push('<div class="tools">');
  if (SNAPS.length > 1) h.push('trace: <select id="rtrace">' + SNAPS.map(function (x, i) { return '<option value="' + i + '"' + (i === snapTrace() ? ' selected' : '') + '>' + esc(x.trace) + '</option>'; }).join('') + '</select> ');
  var cur = E.list.indexOf(X);
  h.push('snapshot: <select id="rsnap">' + E.list.map(function (x, i) { return '<option value="' + i + '"' + (i === cur ? ' selected' : '') + '>' + x.snapshot.seq + ' at ' + secs(x.snapshot.time_ns) + ', live ' + bytes(x.snapshot.live_bytes) + '</option>'; }).join('') + '</select>' +
    ' <span class="note">' + (E.count > E.list.length ? 'the last ' + E.list.length + ' of ' + E.count + ' snapshots (every one in the evolution)' : E.count + ' snapshot' + (E.count > 1 ? 's' : '')) + '</span></div>');
  h.push('<div class="note">Live here: every block the snapshot reached (exact bytes, headers included, weakly reachable ones too); the timeline\'s estimated live: the sampled blocks allocated and not yet collected, each worth 1 / rate words, a sampled block a snapshot does not hold being dead from that snapshot on.</div>');
  h.push('<div class="note">Retained bytes of a root: what would be freed if that root alone were cleared (dominator tree). Same figures as <code>ocaml-memprof retainers --json --snapshot ' + (E.count - E.list.length + cur + 1) + hideArgs().map(function (a) { return ' ' + esc(a); }).join('') + ' ' + esc(X.trace) + '</code>; of the filters, only the hidden frames apply here (they name the sites), the others select samples, not heap blocks.</div>');
  if (E.evolution.rows.length > 1) h.push('<h3>Evolution of retained bytes by root kind</h3>' + evolutionSVG(E.evolution, sn.seq));
  var kmax = 0; X.kinds.forEach(function (k) { kmax = Math.max(kmax, k.retained); });
  var rmax = X.roots.length ? X.roots[0].retained : 0, smax = 0, sites = retentionSites(X); sites.forEach(function (x) { smax = Math.max(smax, x.estimate); });
  h.push('<div id="retgrid"><div><h3>Retained by root kind</h3><table id="rkinds"><tr><th class="name">kind</th><th>retained</th><th>%</th><th>roots</th></tr>' +
    X.kinds.map(function (k) { return '<tr><td class="name">' + esc(k.kind) + '</td><td data-v="' + k.retained + '">' + bar(k.retained, kmax, '#69c') + ' ' + bytes(k.retained) + '</td><td>' + pct(k.retained, live) + '</td><td>' + num(k.roots) + '</td></tr>'; }).join('') +
    kindsRest(X.kinds, live, kmax) + '</table>');
  h.push('<h3>Roots by retained size</h3><table id="rroots"><tr><th>retained</th><th>%</th><th class="name">kind</th><th class="name">root</th></tr>' +
    X.roots.map(function (r) { return '<tr><td data-v="' + r.retained + '">' + bar(r.retained, rmax, '#c84') + ' ' + bytes(r.retained) + '</td><td>' + pct(r.retained, live) + '</td><td class="name">' + esc(r.kind) + '</td><td class="name">' + esc(r.label) + '</td></tr>'; }).join('') + '</table></div>');
  // the site selected in the Sites table, when it is one of these
  var sel = Math.min(S.rsite || 0, sites.length - 1);
  if (S.site !== null && sel >= 0 && sites[sel].function !== NAMES[S.site])
    sites.forEach(function (x, i) { if (x.function === NAMES[S.site] && sites[sel].function !== NAMES[S.site]) sel = i; });
  h.push('<div><h3>Live bytes by allocation site <span class="note">(estimated from the sampled blocks: each weighted by 1 / its sampling probability; ± one standard error; click a row for its retainer paths' +
    (X.stacks && hidePatterns().length ? '; hidden frames left out: a block goes to the first frame left, and its paths are those of the sites it merges' : '') + ')</span></h3>');
  if (!sites.length) h.push('<div class="note">No sampled block is live in this snapshot (sample with memprof_rate to attribute the heap to allocation sites).</div>');
  else h.push('<table id="rsites"><tr><th>live (est.)</th><th>± se</th><th>sampled</th><th class="name">site</th></tr>' +
    sites.map(function (x, i) { return '<tr data-r="' + i + '"' + (i === sel ? ' class="sel"' : '') + '><td data-v="' + x.estimate + '">' + bar(x.estimate, smax, '#8a6') + ' ' + bytes(x.estimate) + '</td><td>' + bytes(x.stderr) + '</td><td>' + num(x.sampled) + '</td><td class="name">' + esc(x.site) + '</td></tr>'; }).join('') + '</table>');
  if (sel >= 0) {
    var st = sites[sel];
    h.push('<h3>Retainer paths to the sampled blocks of ' + esc(st.site) + ' <span class="note">(shortest first; a step is a root or a block: tag, size, allocation site)</span></h3><div id="rpaths">');
    if (!st.paths.length) h.push('<div class="note">none reachable</div>');
    st.paths.forEach(function (p) {
      h.push('<div class="rpath"><div class="note">' + num(p.blocks) + ' sampled block' + (p.blocks > 1 ? 's' : '') + ' (' + bytes(p.bytes) + '), ' + p.steps.length + ' steps</div><ol>' +
        p.steps.map(function (t, i) { return '<li' + (i === 0 ? ' class="root"' : '') + '>' + esc(t) + '</li>'; }).join('') + '</ol></div>');
    });
    h.push('</div>');
    var hs = st.holders;
    if (hs && hs.list.length) {
      h.push('<h3>Every root holding them <span class="note">(through: the estimated bytes of these blocks the root reaches by that path; alone: of those, what no other root reaches, freed if it alone let go; shared by several roots: ' +
        bytes(hs.shared) + ' of ' + bytes(hs.estimate) + ')</span></h3><div id="rholders">');
      hs.list.forEach(function (o) {
        h.push('<div class="rpath"><div class="note">through ' + bytes(o.through) + ' (' + pct(o.through, hs.estimate) + '), alone ' + bytes(o.alone) + ' (' + pct(o.alone, hs.estimate) + '), ' + num(o.blocks) + ' sampled block' + (o.blocks > 1 ? 's' : '') + '</div><ol>' +
          o.steps.map(function (t, i) { return '<li' + (i === 0 ? ' class="root"' : '') + '>' + esc(t) + '</li>'; }).join('') + '</ol></div>');
      });
      h.push('</div>');
    }
  }
  h.push('</div></div>');
  h.push('<h3>Dominator tree <span class="note">(a row retains the rows under it; children heaviest first, the rest as "other groups"; ▸ opens, a site selects it everywhere; "…": pruned below)</span></h3>' + treeHTML(X, 'rtree'));
  el.innerHTML = h.join('');
}
$('retention').addEventListener('click', function (e) {
  if (treeClick(e, drawRetention)) return;
  var tr = e.target.closest('tr[data-r]'); if (!tr) return;
  // and the Sites table's selection follows (its live heap on the timeline)
  var X = snapOf(), id = NAMES.indexOf(retentionSites(X)[+tr.dataset.r].function);
  S.rsite = +tr.dataset.r;
  if (id >= 0 && id < NOBT) { S.site = id; update(); } else { drawRetention(); saveHash(); }
});
$('retention').addEventListener('change', function (e) {
  if (e.target.id === 'rtrace') { S.rtrace = +e.target.value; S.rsnap = -1; S.rsite = 0; }
  else if (e.target.id === 'rsnap') { var L = SNAPS[snapTrace()].list; S.rsnap = +e.target.value === L.length - 1 ? -1 : +e.target.value; S.rsite = 0; }
  else return;
  drawRetention(); drawTimeline(); saveHash();
});

// ---------- Lwt threads ----------
// The Lwt view (D.lwt, present when the trace is an Lwt program): Lwt's
// promises by creation site, named "Function (file:line)" after the first
// location outside the lwt preset and the page's hidden frames, as
// `ocaml-memprof lwt` names them (its figures are the CLI's when nothing
// else is hidden or filtered).
// - Created: from the cells the filters keep whose allocation site is one
//   of Lwt's promise constructors (D.lwt.constructors: page location,
//   words per promise): samples / (rate x words), variance samples /
//   (rate x words)^2; every filter applies.  When the report's own hidden
//   frames (`report --preset lwt`) took the constructors out of the call
//   tree (created_from "stacks"), from the stacks of the promises created
//   (D.lwt.traces[t].created), which only the hidden frames and the stack
//   filters select.
// - Pending, per trace and heap snapshot: the sampled blocks of pending
//   promises by stack (their first 64 locations, D.lwt.traces[t].stacks),
//   summed by the site their hidden frames leave: samples / (rate x 9).
//   Of the filters, the hidden frames and the stack filters (focus,
//   ignore, on those 64 locations) apply; the others select samples, not
//   heap blocks.  One series per site over the snapshots, and the last.
// The stacks are whole: the frames that the report's command line hid
// (--hide, --preset, in D.filter_args) are hidden here too.
var LWT = D.lwt || null, lwtWords = null;
// The report's command-line --hide and --preset options (as pairs), and
// the patterns they hide.
function lwtReportArgs() {
  var a = D.filter_args || [], out = [];
  for (var i = 0; i + 1 < a.length; i++) if (a[i] === '--hide' || a[i] === '--preset') out.push([a[i], a[++i]]);
  return out;
}
function lwtReportHides() {
  var out = [];
  lwtReportArgs().forEach(function (o) {
    if (o[0] === '--hide') out.push(o[1]);
    else o[1].split(',').forEach(function (n) { if (n in PRESETS) out.push(PRESETS[n]); });
  });
  return out;
}
function lwtPatterns() { return hiders(hidePatterns().concat(lwtReportHides(), PRESETS.lwt ? [PRESETS.lwt] : [])); }
function lwtFrameName(fn, file, line) { return fn === '<unknown>' && file === '' ? '? (no debug information)' : fn + ' (' + file + ':' + line + ')'; }
var LWT_NONE = '(no frame outside the hidden ones)';
// Per call-tree node: its creation site's name under [pats] (cached per node).
function lwtCreatedSites(pats) {
  var cls = new Int8Array(NLOC).fill(-1), state = new Int8Array(NN).fill(-1), name = new Map();
  function locClass(l) {
    if (cls[l] < 0) {
      var entries = [];
      for (var f = locOff[l]; f < locOff[l + 1]; f++) entries.push([STR[fFn[f]], STR[fFile[f]]]);
      cls[l] = entriesClass(pats, entries);
    }
    return cls[l];
  }
  // a node's state (nextState) from its ancestors', settled once
  state[0] = 0;
  function nodeState(n) {
    var path = [];
    while (state[n] < 0) { path.push(n); n = nParent[n]; }
    var s = state[n];
    while (path.length) { var y = path.pop(); s = state[y] = nextState(locClass(nLoc[y]), s); }
    return s;
  }
  return function (n) {
    var got = name.get(n);
    if (got !== undefined) return got;
    var x = n;
    while (x && nodeState(x) === 1) x = nParent[x];
    var f = locOff[nLoc[x]], s = x ? lwtFrameName(STR[fFn[f]], STR[fFile[f]], fLine[f]) : LWT_NONE;
    name.set(n, s);
    return s;
  };
}
function lwtCreated(pats) {
  if (!lwtWords) { lwtWords = new Float64Array(NLOC); LWT.constructors.forEach(function (c) { lwtWords[c[0]] = c[1]; }); }
  var siteOfNode = lwtCreatedSites(pats), by = new Map();
  for (var i = 0; i < NC; i++) {
    if (!R.keep[i]) continue;
    var n = cNode[i], w = lwtWords[nLoc[n]];
    if (!w) continue;
    var s = siteOfNode(n), e = by.get(s), u = D.sampling_rate * w;
    if (!e) { e = { site: s, samples: 0, created: 0, variance: 0 }; by.set(s, e); }
    e.samples += cSamp[i]; e.created += cSamp[i] / u; e.variance += cSamp[i] / (u * u);
  }
  return lwtRows(by);
}
// Created rows by site, most first, with standard errors.
function lwtRows(by) {
  var rows = Array.from(by.values());
  rows.forEach(function (e) { e.se = Math.sqrt(e.variance); delete e.variance; });
  return rows.sort(function (a, b) { return b.created - a.created || (a.site < b.site ? -1 : 1); });
}
// Per stack of trace data T: its site's name, null when the stack filters
// leave it out.
function lwtStackNames(T, pats) {
  var rf = re(S.focus), ri = re(S.ignore);
  function matches(r, e) { return e.length ? e.some(function (x) { return r.test(x[0]) || (x[1] !== '' && r.test(x[1])); }) : r.test('<unknown>'); }
  var cls = T.locs.map(function (e) { return entriesClass(pats, e); }), clsOf = function (l) { return cls[l]; };
  return T.stacks.map(function (st) {
    if ((rf && !st.some(function (l) { return matches(rf, T.locs[l]); })) || (ri && st.some(function (l) { return matches(ri, T.locs[l]); }))) return null;
    var hid = stackHidden(st, clsOf);
    for (var k = 0; k < st.length; k++) {
      if (hid[k]) continue;
      var e = T.locs[st[k]];
      return e.length ? lwtFrameName(e[0][0], e[0][1], e[0][2]) : '? (no debug information)';
    }
    return LWT_NONE;
  });
}
function lwtCreatedFromStacks(pats) {
  var by = new Map();
  LWT.traces.forEach(function (T) {
    if (!T) return;
    var names = lwtStackNames(T, pats);
    T.created.forEach(function (r) {
      var s = names[r[0]]; if (s === null) return;
      var e = by.get(s);
      if (!e) { e = { site: s, samples: 0, created: 0, variance: 0 }; by.set(s, e); }
      e.samples += r[1]; e.created += r[2]; e.variance += r[3] * r[3];
    });
  });
  return lwtRows(by);
}
function lwtPending(T, pats) {
  var u = D.sampling_rate * LWT.pending_words, names = lwtStackNames(T, pats), peak = new Map();
  var snaps = T.snapshots.map(function (sn) {
    var by = new Map();
    sn.rows.forEach(function (r) {
      var s = names[r[0]]; if (s === null) return;
      var e = by.get(s);
      if (!e) { e = { site: s, samples: 0, cb: 0, cbsq: 0 }; by.set(s, e); }
      e.samples += r[1]; e.cb += r[2]; e.cbsq += r[3];
    });
    var sites = Array.from(by.values()).map(function (e) {
      peak.set(e.site, Math.max(peak.get(e.site) || 0, e.samples));
      return { site: e.site, samples: e.samples, pending: e.samples / u, se: Math.sqrt(e.samples) / u, callbacks: e.cb / u, callbacks_se: Math.sqrt(e.cbsq) / u };
    }).sort(function (a, b) { return b.samples - a.samples || (a.site < b.site ? -1 : 1); });
    return { seq: sn.seq, time_ns: sn.time_ns, pending: sn.pending, callbacks: sn.callbacks, pending_sampled: sn.pending_sampled, sites: sites, by: by };
  });
  var order = Array.from(peak.keys()).sort(function (a, b) { return peak.get(b) - peak.get(a) || (a < b ? -1 : 1); });
  var series = order.map(function (s) {
    var smp = snaps.map(function (sn) { var e = sn.by.get(s); return e ? e.samples : 0; });
    return { site: s, samples: smp, pending: smp.map(function (v) { return v / u; }), se: smp.map(function (v) { return Math.sqrt(v) / u; }) };
  });
  snaps.forEach(function (sn) { delete sn.by; });
  return { trace: T.trace, snapshots: snaps, series: series };
}
// Everything the view shows, as `ocaml-memprof lwt --json` has it (the
// tests compare the two).
function lwtData() {
  if (!LWT) return null;
  var pats = lwtPatterns();
  return { created: LWT.created_from === 'stacks' ? lwtCreatedFromStacks(pats) : lwtCreated(pats),
           traces: LWT.traces.map(function (T) { return T && T.snapshots.length ? lwtPending(T, pats) : null; }) };
}
var LWT_ROWS = 50;   // rows of the created table
// The series drawn and tabulated: the first LWT_SERIES sites (the most
// pending at any snapshot), as the CLI's over-time table.
var LWT_SERIES = 6, LWT_COLOURS = ['#36c', '#c33', '#393', '#d80', '#909', '#099'];
// Pending promises per site over the snapshots: one line per site.
function lwtSeriesSVG(P, id) {
  var W = 560, H = 170, x0 = 64, x1 = W - 20, y0 = 10, y1 = H - 22, tmax = 0, vmax = 0, shown = P.series.slice(0, LWT_SERIES);
  P.snapshots.forEach(function (sn) { tmax = Math.max(tmax, sn.time_ns); });
  shown.forEach(function (s) { s.pending.forEach(function (v) { vmax = Math.max(vmax, v); }); });
  var st = step125(vmax || 1, 4), top = Math.max(st, Math.ceil(vmax / st) * st);
  var X = function (t) { return x0 + (x1 - x0) * (tmax ? t / tmax : 0.5); }, Y = function (v) { return y1 - (y1 - y0) * v / top; };
  var h = ['<svg id="' + id + '" width="' + W + '" height="' + H + '" font-size="10">'];
  for (var v = 0; v <= top * 1.0001; v += st) h.push('<line x1="' + x0 + '" x2="' + x1 + '" y1="' + Y(v) + '" y2="' + Y(v) + '" stroke="#eee"/><text x="' + (x0 - 4) + '" y="' + (Y(v) + 3) + '" text-anchor="end">' + num(v) + '</text>');
  timeTicks(tmax || 1, 5).forEach(function (t) { h.push('<text x="' + X(t[0]) + '" y="' + (H - 6) + '" text-anchor="middle">' + esc(t[1]) + '</text>'); });
  shown.forEach(function (s, k) {
    var pts = P.snapshots.map(function (sn, i) { return X(sn.time_ns).toFixed(1) + ',' + Y(s.pending[i]).toFixed(1); });
    h.push('<polyline fill="none" stroke-width="1.5" stroke="' + LWT_COLOURS[k] + '" points="' + pts.join(' ') + '"><title>' + esc(s.site) + '</title></polyline>');
    P.snapshots.forEach(function (sn, i) { h.push('<circle r="2" fill="' + LWT_COLOURS[k] + '" cx="' + X(sn.time_ns).toFixed(1) + '" cy="' + Y(s.pending[i]).toFixed(1) + '"/>'); });
  });
  h.push('</svg>');
  return h.join('');
}
function lwtPendingHTML(P, t, many) {
  var h = [], last = P.snapshots[P.snapshots.length - 1], cols = P.series.slice(0, LWT_SERIES);
  h.push('<h3>Pending promises by creation site over time' + (many ? ' — ' + esc(P.trace) : '') + ' <span class="note">(pending, callbacks and sampled: exact, every pending promise of the snapshot; S1...: estimated from their sampled blocks, samples / (rate × ' + LWT.pending_words + ' words); one line per site, the ' + cols.length + ' with the most at any snapshot)</span></h3>');
  if (!P.series.length) h.push('<div class="note">No sampled block in any pending promise' + (S.focus || S.ignore ? ' the stack filters keep' : '') + '.</div>');
  else h.push(lwtSeriesSVG(P, 'lwtchart' + t));
  h.push('<table class="lwtseries" id="lwtseries' + t + '"><tr><th>snapshot</th><th>time</th><th title="pending promises in the snapshot (exact)">pending</th><th title="the regular callbacks they hold (exact)">callbacks</th><th title="pending promises one of whose blocks was sampled">sampled</th>' +
    cols.map(function (s, k) { return '<th title="' + esc(s.site) + '"><span class="bar" style="width:10px;background:' + LWT_COLOURS[k] + '"></span> S' + (k + 1) + '</th>'; }).join('') + '</tr>' +
    P.snapshots.map(function (sn, i) {
      return '<tr><td>' + sn.seq + '</td><td>' + secs(sn.time_ns) + '</td><td>' + num(sn.pending) + '</td><td>' + num(sn.callbacks) + '</td><td>' + num(sn.pending_sampled) + '</td>' +
        cols.map(function (s) { return '<td data-v="' + s.pending[i] + '">' + num(s.pending[i]) + '</td>'; }).join('') + '</tr>';
    }).join('') + '</table>');
  if (cols.length) h.push('<table class="lwtlegend"><tr><th>column</th><th class="name">creation site</th></tr>' + cols.map(function (s, k) { return '<tr><td>S' + (k + 1) + '</td><td class="name">' + esc(s.site) + '</td></tr>'; }).join('') + '</table>');
  var pmax = last.sites.length ? last.sites[0].pending : 0;
  h.push('<h3>Pending promises at the last snapshot (' + last.seq + ', ' + secs(last.time_ns) + '), by creation site <span class="note">(estimated, ± one standard error; exact: ' + num(last.pending) + ' pending promises holding ' + num(last.callbacks) + ' callbacks, ' + num(last.pending_sampled) + ' of them with a sampled block)</span></h3>');
  h.push('<table id="lwtpending' + t + '"><tr><th>pending</th><th>± se</th><th>callbacks</th><th>± se</th><th>samples</th><th class="name">site</th></tr>' +
    last.sites.map(function (x) { return '<tr><td data-v="' + x.pending + '">' + bar(x.pending, pmax, '#8a6') + ' ' + num(x.pending) + '</td><td>' + num(x.se) + '</td><td data-v="' + x.callbacks + '">' + num(x.callbacks) + '</td><td>' + num(x.callbacks_se) + '</td><td>' + num(x.samples) + '</td><td class="name">' + esc(x.site) + '</td></tr>'; }).join('') + '</table>');
  return h.join('');
}
function drawLwt() {
  var el = $('lwtview');
  if (!LWT) { el.innerHTML = '<h3>Lwt</h3><p class="note" id="nolwt">No Lwt promise in this trace: no sample at Lwt\'s promise constructors (<code>Lwt.Pending_promises.new_pending</code>, <code>Lwt.Trivial_promises.return</code>, <code>fail</code>). Not an Lwt program, or not Lwt 5.6.1\'s, or sampled too rarely.</p>'; return; }
  var L = lwtData(), h = [], cmax = L.created.length ? L.created[0].created : 0, tot = 0, vt = 0;
  L.created.forEach(function (x) { tot += x.created; vt += x.se * x.se; });
  var cli = ['ocaml-memprof lwt'].concat(lwtReportArgs().map(function (o) { return o[0] + ' ' + shq(o[1]); }), hideArgs(), D.traces.slice(0, 1).map(shq));
  h.push('<h3>Lwt threads <span class="note">a promise\'s creation site is the first frame of its allocation stack outside the lwt preset and the hidden frames; Lwt 5.6.1\'s promise layout. Same figures as <code>' + esc(cli.join(' ')) + '</code> when no other filter is set' +
    (LWT.created_from === 'stacks' ? '; this report was written with Lwt\'s frames hidden, so the promises created are counted from their stacks, which the time, lifetime, size, domain and process filters do not select' : '') + '.</span></h3>');
  var shown = L.created.slice(0, LWT_ROWS);
  h.push('<h3>Promises created, by creation site <span class="note">(estimated from the samples at Lwt\'s promise constructors under the filters: ' + num(tot) + ' ± ' + num(Math.sqrt(vt)) + ' in all' +
    (shown.length < L.created.length ? '; the first ' + shown.length + ' of ' + L.created.length + ' sites' : '') + ')</span></h3>');
  if (!L.created.length) h.push('<div class="note">No sample at Lwt\'s promise constructors in the selection.</div>');
  else h.push('<table id="lwtcreated"><tr><th>created</th><th>± se</th><th>samples</th><th class="name">site</th></tr>' +
    shown.map(function (x) { return '<tr><td data-v="' + x.created + '">' + bar(x.created, cmax, '#69c') + ' ' + num(x.created) + '</td><td>' + num(x.se) + '</td><td>' + num(x.samples) + '</td><td class="name">' + esc(x.site) + '</td></tr>'; }).join('') + '</table>');
  var withSnaps = L.traces.filter(Boolean);
  if (!withSnaps.length) h.push('<h3>Pending promises</h3><p class="note" id="lwtnosnap">No heap snapshot in the trace: pending promises need one (<code>OCAMLRUNPARAM=...,memprof_snapshot_at_exit=1,memprof_snapshot_every_cycles=N</code>, or <code>Gc.Memprof_trace.snapshot ()</code>).</p>');
  L.traces.forEach(function (P, t) { if (P) h.push(lwtPendingHTML(P, t, L.traces.length > 1)); });
  el.innerHTML = h.join('');
}

// ---------- controls ----------
// options written once, then only selected
function opt(sel, items, val) {
  if (sel.options.length !== items.length) sel.innerHTML = items.map(function (t, i) { return '<option value="' + i + '">' + esc(t) + '</option>'; }).join('');
  sel.selectedIndex = val;
}
function syncControls() {
  opt($('lifelo'), lifeNames, S.life ? S.life[0] : 0);
  opt($('lifehi'), lifeNames.map(function (n, i) { return i + 1 < NLIFE ? '< ' + secs(D.life_lo[i + 1]) : '∞'; }), S.life ? S.life[1] : NLIFE - 1);
  opt($('sizelo'), sizeNames, S.size ? S.size[0] : 0);
  opt($('sizehi'), sizeNames.map(function (n, i) { return i < 31 ? '< ' + bytes(Math.pow(2, i + 4)) : '∞'; }), S.size ? S.size[1] : 31);
  $('domains').innerHTML = domains.map(function (d) { return '<label style="display:inline-block;margin-right:8px"><input type="checkbox" class="dom" value="' + d + '"' + (!S.doms || S.doms.indexOf(d) >= 0 ? ' checked' : '') + '> ' + d + '</label>'; }).join('') || '<span class="note">none</span>';
  var w = [];
  [['alloc', 'allocated in'], ['live', 'live in'], ['coll', 'collected in']].forEach(function (x) {
    var v = S[x[0]]; if (v) w.push('<div>' + x[1] + ' ' + secs(v[0] * D.bin_ns) + ' – ' + secs((v[1] + 1) * D.bin_ns) + ' <a href="#" data-clear="' + x[0] + '">×</a></div>');
  });
  $('windows').innerHTML = w.join('') || '<div class="note">whole trace</div>';
  if (PROCS.length > 1) {
    $('procs').style.display = '';
    opt($('pid'), ['all ' + PROCS.length + ' processes'].concat(PROCS.map(function (p) { return p[0] + ' ' + p[1]; })),
        S.pid === null ? 0 : 1 + PROCS.findIndex(function (p) { return p[0] === S.pid; }));
    opt($('exe'), ['all ' + EXES.length + ' executables'].concat(EXES), S.exe === null ? 0 : 1 + EXES.indexOf(S.exe));
  }
  $('never').checked = S.never; $('focus').value = S.focus; $('ignore').value = S.ignore; $('hide').value = S.hide;
  $('metric').value = S.metric; $('search').value = S.search; $('typere').value = S.type;
  document.querySelectorAll('.preset').forEach(function (p) { p.checked = S.presets.indexOf(p.value) >= 0; });
  document.querySelectorAll('#tabs button').forEach(function (b) { b.className = b.dataset.tab === S.tab ? 'on' : ''; });
  document.querySelectorAll('.view').forEach(function (v) { v.className = 'view' + (v.id === 'v-' + S.tab ? ' on' : ''); });
}
function readControls() {
  var ll = +$('lifelo').value, lh = +$('lifehi').value, sl = +$('sizelo').value, sh = +$('sizehi').value;
  S.life = ll === 0 && lh === NLIFE - 1 ? null : [ll, Math.max(ll, lh)];
  S.size = sl === 0 && sh === 31 ? null : [sl, Math.max(sl, sh)];
  var ds = []; document.querySelectorAll('.dom').forEach(function (c) { if (c.checked) ds.push(+c.value); });
  S.doms = ds.length === domains.length ? null : ds;
  if (PROCS.length > 1) {
    var pk = +$('pid').value, ek = +$('exe').value;
    S.pid = pk ? PROCS[pk - 1][0] : null; S.exe = ek ? EXES[ek - 1] : null;
  }
  S.never = $('never').checked; S.focus = $('focus').value; S.ignore = $('ignore').value; S.hide = $('hide').value;
  S.presets = []; document.querySelectorAll('.preset').forEach(function (p) { if (p.checked) S.presets.push(p.value); });
  S.metric = $('metric').value; S.type = $('typere').value;
}
$('filters').addEventListener('change', function (e) { if (e.target.id === 'brushmode') return; readControls(); update(); });
// regex fields: update once typing pauses (a hidden-frames change rebuilds the frame tree)
var typing = null;
$('filters').addEventListener('input', function (e) {
  if (e.target.type !== 'text') return;
  clearTimeout(typing); typing = setTimeout(function () { readControls(); update(); }, 150);
});
$('filters').addEventListener('click', function (e) { var c = e.target.dataset && e.target.dataset.clear; if (c) { e.preventDefault(); S[c] = null; syncControls(); update(); } });
$('reset').onclick = function () { var t = S.tab; S = freshState(); S.tab = t; zoom.flame = 0; zoom.icicle = []; syncControls(); update(); };
$('search').addEventListener('input', function () { S.search = this.value; drawTable(); if (S.tab !== 'sites') drawView(); else searchNote(); saveHash(); });
$('tabs').addEventListener('click', function (e) { var b = e.target.closest('button'); if (!b) return; S.tab = b.dataset.tab; syncControls(); drawView(); saveHash(); });
window.addEventListener('resize', function () { tl.W = fg.flame.W = fg.icicle.W = 0; drawTimeline(); drawView(); paintRows(); });

// A string quoted for a POSIX shell.
function shq(s) { return "'" + s.replace(/'/g, "'\\''") + "'"; }
// The hidden frames as options, quoted for a shell.
function hideArgs() {
  var a = [], pn = S.presets.filter(function (n) { return n in PRESETS; });
  if (S.hide) a.push('--hide ' + shq(S.hide));
  if (pn.length) a.push('--preset ' + shq(pn.join(',')));
  return a;
}
// The same selection on the command line: time windows on bin bounds,
// classes on their bounds (exact), regexes as given.
function ns(v) { return v + 'ns'; }
function cliCommand() {
  var a = ['ocaml-memprof top'].concat((D.filter_args || []).map(function (x) { return /^[-\w.,:]+$/.test(x) ? x : shq(x); })), W = D.bin_ns, note = '';
  [['alloc', '--allocated'], ['live', '--live'], ['coll', '--collected']].forEach(function (x) {
    var v = S[x[0]]; if (v) a.push(x[1] + ' ' + ns(v[0] * W) + ',' + ns((v[1] + 1) * W - 1));
  });
  if (S.life) { if (S.life[0]) a.push('--min-lifetime ' + ns(D.life_lo[S.life[0]])); if (S.life[1] + 1 < NLIFE) a.push('--max-lifetime ' + ns(D.life_lo[S.life[1] + 1] - 1)); }
  if (S.size) { if (S.size[0]) a.push('--min-size ' + Math.pow(2, S.size[0] + 3)); if (S.size[1] < 31) a.push('--max-size ' + (Math.pow(2, S.size[1] + 4) - 1)); }
  if (S.doms) S.doms.forEach(function (d) { a.push('--domain ' + d); });
  if (S.pid !== null) a.push('--pid ' + S.pid);
  if (S.exe !== null) a.push('--exe ' + shq(S.exe));
  if (S.focus) a.push('--focus ' + shq(S.focus));
  if (S.ignore) a.push('--ignore ' + shq(S.ignore));
  hideArgs().forEach(function (x) { a.push(x); });
  if (S.never) note = '   # "never collected": no CLI filter; see the live column (live at the end)';
  return a.join(' ') + ' ' + D.traces.map(shq).join(' ') + note;
}

// ---------- search ----------
// One search field above every view (the same regex everywhere): the
// sites table keeps the matching rows, the flame graph, icicle and call
// graph highlight the matching frames, the lifetimes view keeps the
// matching flags, the retention view marks the matching rows of its
// tables (its figures come from the snapshot, not from the filters).
function searchRe() { var r = S.search ? re(S.search) : null; return r || null; }
// The views drawn as HTML tables: their rows whose name cells match.
function markRows(container, hideOthers) {
  var rx = searchRe(), n = 0;
  if (!rx) return 0;
  container.querySelectorAll('tr').forEach(function (tr) {
    var names = tr.querySelectorAll('td.name');
    if (!names.length) return;
    var hit = Array.prototype.some.call(names, function (td) { return rx.test(td.textContent); });
    if (hit) { n++; tr.classList.add('hit'); } else if (hideOthers) tr.style.display = 'none';
  });
  return n;
}
function searchNote() {
  var rx = searchRe(), t = '';
  if (rx) {
    if (S.tab === 'sites') t = table.rows.length + ' sites match';
    else if (S.tab === 'flame' || S.tab === 'icicle') {
      var n = 0; drawn[S.tab].rects.forEach(function (q) { if (rx.test(NAMES[q[3]])) n++; });
      t = n + ' frames drawn match';
    } else if (S.tab === 'graph') t = document.querySelectorAll('#cg .cghit').length + ' functions match';
    else if (S.tab === 'life') t = markRows($('lifeflags'), true) + ' flags match';
    else if (S.tab === 'retention') t = markRows($('retention'), false) + ' rows match';
    else if (S.tab === 'lwt') t = markRows($('lwtview'), false) + ' rows match';
  }
  $('searchinfo').textContent = t;
}

// ---------- update ----------
function drawView() {
  var t0 = performance.now();
  if (S.tab === 'flame' || S.tab === 'icicle') { drawFlame(S.tab); if (S.tab === 'flame') { drawFlameSide(); markRows($('fgdom'), false); } }
  else if (S.tab === 'graph') drawGraph();
  else if (S.tab === 'life') drawLife();
  else if (S.tab === 'retention') drawRetention();
  else if (S.tab === 'types') drawTypes();
  else if (S.tab === 'lwt') drawLwt();
  searchNote();
  return performance.now() - t0;
}
function update() {
  var t0 = performance.now(), T = timings.update = {};
  computeCells(); T.cells = performance.now() - t0;
  computeSites(); T.sites = performance.now() - t0;
  // the command line first: its line's height moves the views below it,
  // whose boxes are sized to the window from where they start
  $('cli').textContent = cliCommand();
  drawTimeline(); T.timeline = performance.now() - t0;
  drawTable(); T.table = performance.now() - t0;
  drawView(); T.view = performance.now() - t0;
  var bad = [S.focus, S.ignore, S.hide, S.search, S.type].filter(function (x) { return x && re(x) === undefined; });
  var dt = performance.now() - t0;
  $('status').innerHTML = (bad.length ? '<div class="err">bad regex: ' + esc(bad[0]) + '</div>' : '') + R.kept + ' of ' + NC + ' cells; update ' + dt.toFixed(0) + ' ms';
  saveHash();
  return dt;
}
// The state goes into the address (a link reopens the same view) once
// the user pauses: history.replaceState costs milliseconds, and browsers
// throttle it.
var hashTimer = null;
function saveHash() {
  clearTimeout(hashTimer);
  hashTimer = setTimeout(writeHash, 300);
}
function writeHash() {
  if (location.hash.indexOf('#selftest') === 0) return;
  var st = {}, f = freshState();
  Object.keys(S).forEach(function (k) { if (JSON.stringify(S[k]) !== JSON.stringify(f[k])) st[k] = S[k]; });
  var h = Object.keys(st).length ? '#' + encodeURIComponent(JSON.stringify(st)) : '';
  if (h !== location.hash && history.replaceState) history.replaceState(null, '', h || location.pathname);
}
function loadHash() {
  var h = location.hash.slice(1);
  if (!h || h.indexOf('selftest') === 0) return;
  try { var st = JSON.parse(decodeURIComponent(h)); Object.keys(st).forEach(function (k) { if (k in S) S[k] = st[k]; }); }
  catch (e) { if (/^[a-z]+$/.test(h)) S.tab = h; }
}

// ---------- start ----------
// A report of several processes says so, with their executables (and
// how many processes ran each), not the first trace's name.
$('title').textContent = PROCS.length > 1 ? PROCS.length + ' processes: ' + EXES.map(function (e) {
  var n = PROCS.filter(function (p) { return p[1] === e; }).length;
  return e + (n > 1 ? ' ×' + n : '');
}).join(', ') : D.title;
document.title = $('title').textContent + ' — ocaml-memprof report';
$('presets').innerHTML = (D.presets || []).map(function (p) {
  return '<label title="' + esc((p.builtin ? 'built-in: ' : 'from your presets file: ') + p.regex) + '"><input type="checkbox" class="preset" value="' + esc(p.name) + '"> ' + esc(p.name) + '</label>';
}).join(' ');
if (LWT) $('lwttab').style.display = '';
var lifeNames = [], sizeNames = [];
for (var c0 = 0; c0 < NLIFE; c0++) lifeNames.push(c0 ? secs(D.life_lo[c0]) : '0');
for (var s0 = 0; s0 < 32; s0++) sizeNames.push(s0 ? bytes(Math.pow(2, s0 + 3)) : '0 B');
var timings = { parsed: performance.now() };
Promise.resolve().then(loadBlob).then(function (A) {
  timings.inflated = performance.now();
  setup(A);
  timings.setup = performance.now();
  $('meta').textContent = (PROCS.length > 1 ? D.traces.length + ' traces — ' : D.executable ? D.executable.split('/').pop() + ' — ' : '') + (D.bytecode ? 'bytecode, ' : '') + secs(D.end_ns) + ', sampling rate ' + D.sampling_rate +
    ', ' + NC + ' cells, ' + NN + ' call-tree nodes' + (D.lost_samples ? ', ' + D.lost_samples + ' samples lost' : '');
  loadHash();
  syncControls();
  update();
  window.firstPaintMs = timings.firstPaint = performance.now();
  setTimeout(function () { idle(warmUp); }, 500);   // after the first frames
  if (location.hash.indexOf('#selftest=') === 0) selftest();
  document.body.setAttribute('data-ready', '1');
}).catch(function (e) { errors.push(String(e)); $('status').innerHTML = '<div class="err">cannot read the data: ' + esc(e) + '</div>'; document.body.setAttribute('data-ready', 'error'); });

// Self-test (#selftest=JSON): apply filter settings one after the other and
// write the totals, the top rows and the timings into the page, for the
// headless-browser tests (tools/tests/run_tests.py).
function selftest() {
  var spec = JSON.parse(decodeURIComponent(location.hash.slice(10))), out = { firstPaintMs: window.firstPaintMs, runs: [], views: {} };
  (spec.settings || []).forEach(function (st) {
    S = freshState(); Object.keys(st).forEach(function (k) { S[k] = st[k]; }); syncControls();
    var ms = update();
    out.runs.push({ ms: ms, cli: cliCommand(), total: { alloc_bytes: R.total.alloc, samples: R.total.samples, blocks: R.total.blocks, live_bytes: R.total.live },
      rows: R.rows.slice().sort(function (a, b) { return b.alloc - a.alloc; }).slice(0, 15).map(function (r) { return { key: r.name, alloc_bytes: r.alloc, samples: r.samples, blocks: r.blocks, live_bytes: r.liveB }; }),
      flags: Array.from(R.flags.entries()).map(function (e) { return [NAMES[e[0]], e[1].kind]; }) });
  });
  S = freshState(); syncControls(); update();
  out.flags = Array.from(R.flags.entries()).map(function (e) { return [NAMES[e[0]], e[1].kind, +e[1].died.toFixed(3), +e[1].growth.toFixed(2)]; });
  ['flame', 'icicle', 'graph', 'life', 'retention', 'sites'].forEach(function (t) { S.tab = t; syncControls(); var ms = drawView(); out.views[t] = { ms: ms }; });
  out.views.flame.rects = drawn.flame.rects.length; out.views.icicle.rects = drawn.icicle.rects.length;
  out.views.flame.names = drawn.flame.rects.slice(0, 400).map(function (q) { return [NAMES[q[3]], q[1]]; });
  S.tab = 'graph'; syncControls(); drawView(); out.views.graph.nodes = document.querySelectorAll('.cgnode').length;
  // the retention view as drawn: its tables' cells and the paths shown
  S.tab = 'retention'; syncControls(); drawView();
  // (the kinds table's rest line is reported apart: retainers --json has none)
  function cells(id) { return Array.from(document.querySelectorAll('#' + id + ' tr:not(.rest)')).slice(1).map(function (tr) { return Array.from(tr.cells).map(function (td) { return td.dataset.v !== undefined ? +td.dataset.v : td.textContent; }); }); }
  function rest(id) { var tr = document.querySelector('#' + id + ' tr.rest'); return tr ? +tr.cells[1].dataset.v : 0; }
  out.retention = { none: !!$('nosnap'), kinds: cells('rkinds'),
                    kindsRest: rest('rkinds'), live: SNAPS.length ? snapOf().snapshot.live_bytes : 0, roots: cells('rroots'), sites: cells('rsites'),
                    paths: Array.from(document.querySelectorAll('#rpaths ol')).map(function (ol) { return Array.from(ol.children).map(function (li) { return li.textContent; }); }),
                    holders: Array.from(document.querySelectorAll('#rholders ol')).map(function (ol) { return Array.from(ol.children).map(function (li) { return li.textContent; }); }) };
  // the dominator tree as drawn (row: node index, retained, text), beside
  // the flame graph too; a site clicked in it selected; the first snapshot
  out.retention.tree = Array.from(document.querySelectorAll('#rtree tr[data-t]')).map(function (tr) { return [+tr.dataset.t, +tr.cells[0].dataset.v, tr.cells[3].textContent]; });
  out.retention.fgtree = document.querySelectorAll('#fgtree tr[data-t]').length;
  var ds = document.querySelector('#rtree a.dsite');
  if (ds) { ds.click(); out.retention.treeSite = S.site === null ? null : NAMES[S.site]; out.retention.treeSiteWant = snapOf().tree[+ds.closest('tr').dataset.t].function; S.site = null; S.tab = 'retention'; syncControls(); update(); }
  out.retention.evolution = !!$('revo');
  if (SNAPS.length) { S.rsnap = 0; drawRetention(); out.retention.first = { seq: snapOf().snapshot.seq, kinds: cells('rkinds') }; S.rsnap = -1; drawRetention(); }
  var t0 = performance.now(); S.search = 'a'; drawTable(); S.search = ''; drawTable(); out.searchMs = (performance.now() - t0) / 2;
  S.tab = 'sites'; syncControls();
  var upd = []; [{ alloc: [0, Math.floor(NB / 2)] }, { never: true }, { focus: 'a' }, { hide: 'Stdlib' }, {}].forEach(function (st) {
    S = freshState(); Object.keys(st).forEach(function (k) { S[k] = st[k]; }); S.tab = 'flame'; syncControls(); upd.push([update(), timings.update]); });
  out.updateMs = upd; out.errors = errors; out.timings = timings;
  var pre = document.createElement('pre'); pre.id = 'selftest-out'; pre.style.display = 'none'; pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
}
