/* cmd_flamegraph.c: `ocaml-memprof flamegraph`: a self-contained HTML file
   (inline SVG drawn by inline JavaScript; no network, no server) with two
   views: a flame graph rooted at the program's entry (callers below
   callees) and an icicle rooted at the allocation sites (what allocates at
   the top, who called it below).  Zoom by clicking, search by regex,
   tooltips with bytes and percentages.

   Data: the call tree is re-keyed by frame *name* (function, or function
   and file:line with --lines), with each location expanded into its
   inlined frames, and same-name siblings merged (flame-graph convention).
   Merging goes through a map keyed by (parent, name id).  The result is
   embedded as three arrays: parent index, name index and self value per
   node; the page derives totals and the inverted (icicle) tree itself. */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "commands.h"
#include "presets.h"
#include "report.h"
#include "util.h"

typedef struct {
  strpool *names;
  uint32_t *parent, *name;
  double *self;
  size_t n, cap;
  u64map idx;
} ftree;

static uint32_t fnode(ftree *t, uint32_t parent, const char *name)
{
  uint32_t nid = strpool_intern(t->names, name, strlen(name));
  uint64_t key = (uint64_t)parent << 32 | nid;
  uint32_t *v = u64map_get(&t->idx, key);
  if (v) return *v;
  if (t->n + 1 > t->cap) {
    size_t c = t->cap;
    grow_array((void **)&t->parent, &c, t->n + 1, sizeof *t->parent);
    t->name = xrealloc(t->name, c * sizeof *t->name);
    t->self = xrealloc(t->self, c * sizeof *t->self);
    t->cap = c;
  }
  uint32_t id = (uint32_t)t->n++;
  t->parent[id] = parent;
  t->name[id] = nid;
  t->self[id] = 0;
  u64map_put(&t->idx, key, id);
  return id;
}

static void js_str(FILE *o, const char *s)
{
  /* JSON string that is also safe inside <script>: escape '<' and '>'. */
  putc('"', o);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') { putc('\\', o); putc(*p, o); }
    else if (*p < 0x20 || *p == '<' || *p == '>') fprintf(o, "\\u%04x", *p);
    else putc(*p, o);
  }
  putc('"', o);
}

/* The page: styles, the SVG host, and the renderer.  Kept in one string so
   the output needs nothing else. */
static const char page_head[] =
  "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ocaml-memprof flame graph</title>\n"
  "<style>body{font:13px sans-serif;margin:8px}#bar{margin-bottom:6px}"
  "#bar button.on{font-weight:bold}#tip{position:fixed;pointer-events:none;background:#ffd;"
  "border:1px solid #999;padding:3px 6px;display:none;white-space:pre}"
  "svg text{font:11px monospace;pointer-events:none}svg rect{stroke:#fff;stroke-width:.5}"
  "#info{color:#555;margin-left:12px}</style></head><body>\n"
  "<div id=\"bar\"><button id=\"vflame\" class=\"on\">flame (from main)</button> "
  "<button id=\"vicicle\">icicle (from allocation sites)</button> "
  "<button id=\"reset\">reset zoom</button> search: <input id=\"q\" size=\"30\" "
  "placeholder=\"regex\"> <span id=\"info\"></span></div>\n"
  "<div id=\"title\"></div><svg id=\"fg\" width=\"100%\"></svg><div id=\"tip\"></div>\n<script>\n";

static const char page_js[] =
  "'use strict';\n"
  "function human(b){var u=['B','kB','MB','GB','TB'],i=0;while(Math.abs(b)>=1000&&i<4){b/=1000;i++;}"
  "return (i?b.toPrecision(3):Math.round(b))+' '+u[i];}\n"
  "function fmt(v){return D.unit==='bytes'?human(v):Math.round(v).toString();}\n"
  "function mk(name){return {name:name,value:0,kids:new Map()};}\n"
  "function child(n,name){var k=n.kids.get(name);if(!k){k=mk(name);n.kids.set(name,k);}return k;}\n"
  "var N=D.parent.length,trees={};\n"
  "(function(){var nodes=new Array(N),root=mk('all');nodes[0]=root;\n"
  " for(var i=1;i<N;i++){nodes[i]=child(nodes[D.parent[i]],D.names[D.name[i]]);}\n"
  " function sum(n){var s=n.self||0;n.kids.forEach(function(k){s+=sum(k);});n.value=s;return s;}\n"
  " for(var i=0;i<N;i++){nodes[i].self=D.self[i];}\n"
  " sum(root);trees.flame=root;\n"
  " var inv=mk('all');\n"
  " for(var i=1;i<N;i++){if(!D.self[i])continue;var v=D.self[i],n=inv;n.value+=v;\n"
  "  for(var j=i;j>0;j=D.parent[j]){n=child(n,D.names[D.name[j]]);n.value+=v;}}\n"
  " trees.icicle=inv;})();\n"
  "var view='flame',zoom=null,re=null,svg=document.getElementById('fg'),tip=document.getElementById('tip');\n"
  "var RH=17,W=1200;\n"
  "function depth(n){var d=0;n.kids.forEach(function(k){d=Math.max(d,depth(k));});return d+1;}\n"
  "function render(keep){W=Math.max(400,(svg.parentNode.clientWidth||1200)-20);\n"
  " var root=trees[view],z=zoom||root,path=[];\n"
  " (function find(n,acc){if(n===z){path=acc.concat([n]);return true;}"
  "var r=false;n.kids.forEach(function(k){if(!r)r=find(k,acc.concat([n]));});return r;})(root,[]);\n"
  " var H=(path.length-1+depth(z))*RH+4;svg.setAttribute('height',H);svg.setAttribute('viewBox','0 0 '+W+' '+H);\n"
  " while(svg.firstChild)svg.removeChild(svg.firstChild);var total=root.value||1;\n"
  " function draw(n,x,w,d,anc){if(w<0.3)return;\n"
  "  var y=view==='flame'?H-(d+1)*RH:d*RH;\n"
  "  var g=document.createElementNS('http://www.w3.org/2000/svg','g');g.setAttribute('class','frame');\n"
  "  var r=document.createElementNS('http://www.w3.org/2000/svg','rect');\n"
  "  r.setAttribute('x',x);r.setAttribute('y',y);r.setAttribute('width',w);r.setAttribute('height',RH-1);\n"
  "  var hit=re&&re.test(n.name);\n"
  "  var h=0;for(var i=0;i<n.name.length;i++)h=(h*31+n.name.charCodeAt(i))>>>0;\n"
  "  r.setAttribute('fill',hit?'#c6f':anc?'#ddd':'hsl('+(10+h%50)+','+(70+h%30)+'%,'+(55+h%15)+'%)');\n"
  "  g.appendChild(r);\n"
  "  if(w>30){var t=document.createElementNS('http://www.w3.org/2000/svg','text');t.setAttribute('x',x+3);"
  "t.setAttribute('y',y+12);var s=n.name,m=Math.floor((w-6)/6.7);t.textContent=s.length>m?s.slice(0,Math.max(0,m-2))+'..':s;g.appendChild(t);}\n"
  "  g.setAttribute('data-name',n.name);g.setAttribute('data-value',n.value);g.setAttribute('data-depth',d);\n"
  "  g.onmousemove=function(e){tip.style.display='block';tip.style.left=(e.clientX+12)+'px';tip.style.top=(e.clientY+12)+'px';\n"
  "   tip.textContent=n.name+'\\n'+fmt(n.value)+'  '+(100*n.value/total).toFixed(2)+'% of all, '+(100*n.value/(z.value||1)).toFixed(2)+'% of zoom';};\n"
  "  g.onmouseout=function(){tip.style.display='none';};\n"
  "  g.onclick=function(){zoom=(n===root)?null:n;render();};\n"
  "  svg.appendChild(g);return hit;}\n"
  " for(var i=0;i<path.length-1;i++)draw(path[i],0,W,i,true);\n"
  " function rec(n,x,w,d){draw(n,x,w,d,false);var cx=x;\n"
  "  var ks=Array.from(n.kids.values()).sort(function(a,b){return a.name<b.name?-1:a.name>b.name?1:0;});\n"
  "  ks.forEach(function(k){var kw=n.value?w*k.value/n.value:0;rec(k,cx,kw,d+1);cx+=kw;});}\n"
  " function recm(n){if(re&&re.test(n.name)){return n.value;}var s=0;n.kids.forEach(function(k){s+=recm(k);});return s;}\n"
  " rec(z,0,W,path.length-1);\n"
  " document.getElementById('info').textContent=re?('matched '+(100*recm(root)/total).toFixed(2)+'% ('+fmt(recm(root))+')'):('total '+fmt(root.value));\n"
  " document.getElementById('title').textContent=D.title+' ('+D.what+')';\n"
  " if(!keep)window.scrollTo(0,view==='flame'?document.body.scrollHeight:0);}\n"
  "function setView(v){view=v;zoom=null;document.getElementById('vflame').className=v==='flame'?'on':'';"
  "document.getElementById('vicicle').className=v==='icicle'?'on':'';render();}\n"
  "document.getElementById('vflame').onclick=function(){setView('flame');};\n"
  "document.getElementById('vicicle').onclick=function(){setView('icicle');};\n"
  "document.getElementById('reset').onclick=function(){zoom=null;render();};\n"
  "document.getElementById('q').oninput=function(){var v=this.value;try{re=v?new RegExp(v):null;}catch(e){re=null;}render(true);};\n"
  "window.onresize=function(){render(true);};setView(location.hash==='#icicle'?'icicle':'flame');\n"
  "</script></body></html>\n";

static const char usage[] =
  "usage: ocaml-memprof flamegraph [OPTIONS] TRACE...\n"
  "Write a self-contained interactive HTML flame graph (flame view rooted at\n"
  "main, icicle view rooted at allocation sites; click to zoom, regex search,\n"
  "tooltips).  Open FILE#icicle to start in the icicle view.\n"
  "  --value alloc|live|samples   frame width: estimated allocated bytes\n"
  "                    (default), bytes live at --live-at, or samples\n"
  "  --live-at end|peak|TIME   for --value live (end)\n"
  "  --lines           frames are function (file:line) instead of function\n"
  "  -o FILE           output (default: stdout, unless it is a terminal)\n";

int cmd_flamegraph(int argc, char **argv)
{
  an_filter f;
  an_filter_init(&f);
  stack_opts op;
  cli_inputs in;
  cli_inputs_init(&in);
  int rc = stack_opts_parse(&op, &f, &in, usage, 0, argc, argv);
  if (rc < 0 && cli_refuse_terminal(op.out, "the flame graph (an HTML page)")) rc = 2;
  if (rc >= 0) { an_filter_free(&f); cli_inputs_free(&in); return rc; }
  an_ctx *c;
  nodeagg agg;
  rc = nodeagg_run(in.paths, in.npaths, &f, op.live_arg, &agg, &c);
  if (rc) { an_filter_free(&f); cli_inputs_free(&in); return rc; }

  /* Re-key the call tree by frame names.  Call-tree nodes are created
     parent first, so parents are mapped before their children. */
  const an_node *nodes = an_nodes(c);
  uint32_t nn = an_node_count(c);
  ftree t;
  memset(&t, 0, sizeof t);
  t.names = strpool_new();
  u64map_init(&t.idx, 1024);
  fnode(&t, 0, "all");
  uint32_t *map = xmalloc((size_t)nn * sizeof *map);
  map[0] = 0;
  /* per allocation-site location, for the hint on scheduler frames */
  double *site_value = xcalloc((size_t)an_location_count(c) + 1, sizeof *site_value);
  char buf[2048];
  for (uint32_t i = 1; i < nn; i++) {
    uint32_t p = map[nodes[i].parent];
    const mpt_location *l = an_location(c, nodes[i].loc);
    if (!l || l->n == 0) {
      p = fnode(&t, p, an_loc_function(c, nodes[i].loc));
    } else {
      for (uint32_t k = l->n; k-- > 0;) {          /* outermost inlined first */
        const mpt_loc_entry *e = &l->entries[k];
        const char *fn = e->function && e->function[0] ? e->function : "??";
        if (op.lines) {
          snprintf(buf, sizeof buf, "%s (%s:%u)", fn, e->file ? e->file : "", e->line);
          fn = buf;
        }
        p = fnode(&t, p, fn);
      }
    }
    map[i] = p;
    nstat s = nodeagg_get(&agg, i);
    t.self[p] += nstat_value(c, &s, op.value);
    site_value[nodes[i].loc] += nstat_value(c, &s, op.value);
  }
  presets_hint_by_location(c, &f, site_value);
  free(site_value);
  nstat s0 = nodeagg_get(&agg, 0);
  t.self[0] += nstat_value(c, &s0, op.value);

  FILE *o = out_open(op.out);
  if (!o) { rc = 1; goto done; }
  fputs(page_head, o);
  fputs("var D={title:", o);
  js_str(o, in.npaths == 1 ? in.paths[0] : "several traces");
  fprintf(o, ",what:\"%s\",unit:\"%s\",\nnames:[", op.value == VALUE_ALLOC ? "estimated allocated bytes"
          : op.value == VALUE_LIVE ? "estimated live bytes" : "samples",
          op.value == VALUE_SAMPLES ? "samples" : "bytes");
  uint32_t nnames = strpool_count(t.names);
  for (uint32_t k = 0; k < nnames; k++) {
    if (k) putc(',', o);
    js_str(o, strpool_get(t.names, k));
  }
  fputs("],\nparent:[", o);
  for (size_t k = 0; k < t.n; k++) fprintf(o, "%s%u", k ? "," : "", t.parent[k]);
  fputs("],\nname:[", o);
  for (size_t k = 0; k < t.n; k++) fprintf(o, "%s%u", k ? "," : "", t.name[k]);
  fputs("],\nself:[", o);
  for (size_t k = 0; k < t.n; k++) fprintf(o, "%s%.0f", k ? "," : "", t.self[k]);
  fputs("]};\n", o);
  fputs(page_js, o);
  rc = out_close(o, op.out);
done:
  free(map);
  free(t.parent); free(t.name); free(t.self);
  u64map_free(&t.idx);
  strpool_free(t.names);
  nodeagg_free(&agg);
  an_filter_free(&f);
  an_close(c);
  cli_inputs_free(&in);
  return rc;
}
