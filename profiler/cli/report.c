/*
 * report.c - `typrof report` and the summary merge of `typrof run`: reads a profiler output
 * directory (system metrics, per-process summaries, traces), writes DIR/summary.json, prints a
 * text summary, and writes one self-contained HTML dashboard (inline CSS/JS, data embedded as
 * JSON; no network resources): utilisation charts, top kernels, copies, latency percentiles
 * and a zoomable timeline (wheel: zoom, drag: pan, double-click: reset).
 */
#define _GNU_SOURCE
#include "cli.h"
#include "jsonmini.h"
#include "rules.h"
#include "typrof_int.h"
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_FILES             4096
#define MAX_POINTS_PER_SERIES 4000

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists files of dir ending in suffix, sorted. OUT: *names (free each and the array). */
static size_t list_files(const char *dir, const char *suffix, char ***names)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t n = 0, sl = strlen(suffix);
    *names = NULL;
    if (!d)
        return 0;
    char **v = calloc(MAX_FILES, sizeof(*v));
    while (v && (e = readdir(d)) && n < MAX_FILES) {
        size_t l = strlen(e->d_name);
        if (l > sl && !strcmp(e->d_name + l - sl, suffix)) {
            size_t pl = strlen(dir) + l + 2;
            v[n] = malloc(pl);
            if (v[n])
                snprintf(v[n++], pl, "%s/%s", dir, e->d_name);
        }
    }
    closedir(d);
    if (v)
        qsort(v, n, sizeof(*v), cmp_str);
    *names = v;
    return n;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void stats(const double *v, size_t n, double *mean, double *p95, double *max)
{
    *mean = *p95 = *max = 0;
    if (!n)
        return;
    double *c = malloc(n * sizeof(*c)), s = 0;
    if (!c)
        return;
    memcpy(c, v, n * sizeof(*c));
    qsort(c, n, sizeof(*c), cmp_d);
    for (size_t i = 0; i < n; i++)
        s += c[i];
    *mean = s / (double)n;
    size_t r = (size_t)ceil(0.95 * (double)n);
    *p95 = c[(r ? r : 1) - 1];
    *max = c[n - 1];
    free(c);
}

/* Copies text to f, turning "</" into "<\/" so it can sit inside a <script> element. */
static void put_script_safe(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '<' && i + 1 < n && s[i + 1] == '/') {
            fputs("<\\/", f);
            i++;
        } else {
            fputc(s[i], f);
        }
    }
}

static void write_system(FILE *f, const struct typrof_metrics *m, FILE *out)
{
    double mean, p95, max;
    size_t n = 0;
    const struct typrof_series *c0 = typrof__metrics_find(m, "cpu0", "CPUUtilization");
    double *cpu = NULL;
    if (c0) {
        n = c0->n;
        cpu = calloc(n ? n : 1, sizeof(*cpu));
        int cores = 0;
        for (int k = 0; cpu; k++) {
            char name[32];
            snprintf(name, sizeof(name), "cpu%d", k);
            const struct typrof_series *s = typrof__metrics_find(m, name, "CPUUtilization");
            if (!s)
                break;
            cores++;
            for (size_t i = 0; i < n && i < s->n; i++)
                cpu[i] += s->v[i];
        }
        for (size_t i = 0; cpu && i < n; i++)
            cpu[i] /= cores ? cores : 1;
    }
    fprintf(f, "{\"samples\":%zu,\"metric_files\":%zu,\"bad_lines\":%zu", n, m->files,
            m->bad_lines);
    if (cpu) {
        stats(cpu, n, &mean, &p95, &max);
        fputs(",\"cpu_util_mean\":", f);
        typrof__json_num(f, mean);
        fputs(",\"cpu_util_p95\":", f);
        typrof__json_num(f, p95);
        if (out)
            fprintf(out, "system: %zu samples; cpu mean %.1f%% p95 %.1f%%", n, mean, p95);
    } else if (out) {
        fprintf(out, "system: no system metrics");
    }
    free(cpu);
    const struct typrof_series *s = typrof__metrics_find(m, "MemoryUsedPercent", "Memory");
    if (s) {
        stats(s->v, s->n, &mean, &p95, &max);
        fputs(",\"memory_used_percent_mean\":", f);
        typrof__json_num(f, mean);
        fputs(",\"memory_used_percent_max\":", f);
        typrof__json_num(f, max);
        if (out)
            fprintf(out, "; memory max %.1f%%", max);
    }
    s = typrof__metrics_find(m, "cpu_iowait", "IOWait");
    if (s) {
        stats(s->v, s->n, &mean, &p95, &max);
        fputs(",\"iowait_mean\":", f);
        typrof__json_num(f, mean);
    }
    static const char *io[][3] = {{"disk", "ReadBytesPerSecond", "disk_read_Bps_mean"},
                                  {"disk", "WriteBytesPerSecond", "disk_write_Bps_mean"},
                                  {"net", "ReceiveBytesPerSecond", "net_rx_Bps_mean"},
                                  {"net", "TransmitBytesPerSecond", "net_tx_Bps_mean"}};
    for (size_t k = 0; k < 4; k++) {
        s = typrof__metrics_find(m, io[k][0], io[k][1]);
        if (!s)
            continue;
        stats(s->v, s->n, &mean, &p95, &max);
        fprintf(f, ",\"%s\":", io[k][2]);
        typrof__json_num(f, mean);
    }
    if (out)
        fputc('\n', out);
    fputs(",\"gpus\":[", f);
    int g;
    for (g = 0; g < 64; g++) {
        char name[32];
        snprintf(name, sizeof(name), "gpu%d", g);
        const struct typrof_series *u = typrof__metrics_find(m, name, "GPUUtilization");
        const struct typrof_series *mm = typrof__metrics_find(m, name, "GPUMemoryUtilization");
        if (!u)
            break;
        stats(u->v, u->n, &mean, &p95, &max);
        fprintf(f, "%s{\"name\":\"%s\",\"util_mean\":", g ? "," : "", name);
        typrof__json_num(f, mean);
        fputs(",\"util_p95\":", f);
        typrof__json_num(f, p95);
        if (out)
            fprintf(out, "        %s util mean %.1f%% p95 %.1f%%", name, mean, p95);
        if (mm) {
            stats(mm->v, mm->n, &mean, &p95, &max);
            fputs(",\"memory_util_max\":", f);
            typrof__json_num(f, max);
            if (out)
                fprintf(out, "; memory max %.1f%%", max);
        }
        if (out)
            fputc('\n', out);
        fputc('}', f);
    }
    if (g == 0 && out)
        fprintf(out, "        no gpu metrics (NVML not found or no GPU)\n");
    fputs("]}", f);
}

/* Prints a name from a profile with control characters made visible. */
static void put_name(FILE *out, const char *s)
{
    for (; *s; s++)
        fputc((unsigned char)*s < 0x20 ? '?' : *s, out);
}

static void print_process(FILE *out, const struct jm_val *v)
{
    fprintf(out, "process %s pid %d: %.2f s, gpu tracing %s", jm_str(v, "node", "?"),
            (int)jm_num(v, "pid", 0), jm_num(v, "duration_s", 0),
            jm_num(v, "gpu_tracing", 0) ? "on" : "off");
    const char *note = jm_str(v, "gpu_note", NULL);
    if (note)
        fprintf(out, " (%s)", note);
    fputc('\n', out);
    const struct jm_val *k = jm_get(v, "kernels"), *l = jm_get(v, "launch_latency");
    fprintf(out,
            "  kernels: %.0f (%.0f distinct), %.1f us total; launch latency p50 %.2f p95 "
            "%.2f p99 %.2f us (%.0f matched)\n",
            jm_num(k, "count", 0), jm_num(k, "distinct", 0), jm_num(k, "total_us", 0),
            jm_num(l, "p50_us", 0), jm_num(l, "p95_us", 0), jm_num(l, "p99_us", 0),
            jm_num(k, "launches_matched", 0));
    const struct jm_val *top = jm_get(k, "top_by_total");
    for (size_t i = 0; top && i < top->n && i < 5; i++) {
        fprintf(out, "    %10.1f us %6.0fx  ", jm_num(jm_at(top, i), "total_us", 0),
                jm_num(jm_at(top, i), "count", 0));
        put_name(out, jm_str(jm_at(top, i), "name", "?"));
        fputc('\n', out);
    }
    const struct jm_val *mc = jm_get(v, "memcpy");
    for (size_t i = 0; mc && i < mc->n; i++) {
        const struct jm_val *c = jm_at(mc, i);
        fprintf(out, "  memcpy %s: %.0f copies, %.0f bytes, %.2f GB/s\n", jm_str(c, "kind", "?"),
                jm_num(c, "count", 0), jm_num(c, "bytes", 0), jm_num(c, "bandwidth_GBps", 0));
    }
    const struct jm_val *sy = jm_get(v, "sync");
    if (jm_num(sy, "count", 0) > 0)
        fprintf(out, "  sync: %.0f, %.1f us\n", jm_num(sy, "count", 0), jm_num(sy, "total_us", 0));
    const struct jm_val *st = jm_get(v, "steps");
    if (jm_num(st, "count", 0) > 0)
        fprintf(out, "  steps: %.0f, mean %.2f ms, p95 %.2f ms, first after %.2f s\n",
                jm_num(st, "count", 0), jm_num(st, "mean_ms", 0), jm_num(st, "p95_ms", 0),
                jm_num(st, "first_step_start_s", 0));
    const struct jm_val *an = jm_get(jm_get(v, "annotations"), "top_by_total");
    for (size_t i = 0; an && i < an->n && i < 5; i++) {
        fputs("  annotation ", out);
        put_name(out, jm_str(jm_at(an, i), "name", "?"));
        fprintf(out, ": %.0fx, %.1f us\n", jm_num(jm_at(an, i), "count", 0),
                jm_num(jm_at(an, i), "total_us", 0));
    }
}

int typrof_cli_summary(const char *dir, FILE *out)
{
    char path[4200], tmp[4300], sdir[4200];
    struct typrof_metrics m;
    if (typrof__metrics_load(dir, &m) != 0) {
        fprintf(stderr, "typrof: cannot read '%s'\n", dir);
        return -1;
    }
    snprintf(path, sizeof(path), "%s/summary.json", dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "typrof: cannot write '%s'\n", path);
        typrof__metrics_cleanup(&m);
        return -1;
    }
    if (out)
        fprintf(out, "typrof report: %s\n", dir);
    fputs("{\"schema\":\"typrof.report/1\",\"run\":", f);
    snprintf(sdir, sizeof(sdir), "%s/run.json", dir);
    size_t len;
    char *run = jm_read_file(sdir, 1 << 20, &len);
    struct jm_val *rv = run ? jm_parse(run, len, NULL) : NULL;
    if (rv) {
        fwrite(run, 1, strcspn(run, "\n"), f);
        if (out)
            fprintf(out, "run: exit %d, %.2f s, interval %d ms\n", (int)jm_num(rv, "exit_code", 0),
                    jm_num(rv, "wall_s", 0), (int)jm_num(rv, "interval_ms", 0));
    } else {
        fputs("null", f);
    }
    jm_free(rv);
    free(run);
    fputs(",\n\"system\":", f);
    write_system(f, &m, out);
    typrof__metrics_cleanup(&m);
    fputs(",\n\"processes\":[", f);
    char **files;
    snprintf(sdir, sizeof(sdir), "%s/summary", dir);
    size_t n = list_files(sdir, ".summary.json", &files), written = 0;
    for (size_t i = 0; i < n; i++) {
        char *txt = jm_read_file(files[i], 64u << 20, &len);
        struct jm_val *v = txt ? jm_parse(txt, len, NULL) : NULL;
        if (v) {
            fputs(written++ ? ",\n" : "\n", f);
            while (len && (txt[len - 1] == '\n' || txt[len - 1] == ' '))
                len--;
            fwrite(txt, 1, len, f);
            if (out)
                print_process(out, v);
        }
        jm_free(v);
        free(txt);
    }
    free_list(files, n);
    if (out && written == 0)
        fprintf(out, "no process summaries (no process loaded libtyprof)\n");
    fputs("]}\n", f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        fprintf(stderr, "typrof: cannot write '%s'\n", path);
        unlink(tmp);
        return -1;
    }
    return 0;
}

static void write_metrics_json(FILE *f, const struct typrof_metrics *m)
{
    double t0 = -1;
    for (size_t i = 0; i < m->n; i++)
        if (m->s[i].n && (t0 < 0 || m->s[i].t[0] < t0))
            t0 = m->s[i].t[0];
    fprintf(f, "{\"t0\":%.6f,\"series\":{", t0 < 0 ? 0 : t0);
    for (size_t i = 0; i < m->n; i++) {
        const struct typrof_series *s = &m->s[i];
        size_t stride = s->n / MAX_POINTS_PER_SERIES + 1;
        fprintf(f, "%s\"%s|%s\":{\"t\":[", i ? "," : "", s->name, s->dim);
        for (size_t k = 0; k < s->n; k += stride)
            fprintf(f, "%s%.3f", k ? "," : "", s->t[k] - t0);
        fputs("],\"v\":[", f);
        for (size_t k = 0; k < s->n; k += stride)
            fprintf(f, "%s%.2f", k ? "," : "", s->v[k]);
        fputs("]}", f);
    }
    fputs("}}", f);
}

static const char HTML_HEAD[] =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<title>typrof report</title>\n<style>\n"
    "body{font:13px/1.4 system-ui,sans-serif;margin:16px;color:#222;background:#fafafa}\n"
    "h1{font-size:20px}h2{font-size:16px;margin:18px 0 6px}\n"
    ".grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(460px,1fr));gap:12px}\n"
    ".card{background:#fff;border:1px solid #ddd;border-radius:6px;padding:10px}\n"
    "table{border-collapse:collapse;width:100%}td,th{padding:2px 6px;border-bottom:1px solid "
    "#eee;text-align:left;vertical-align:top}td.n{text-align:right;font-variant-numeric:"
    "tabular-nums}\n"
    ".bar{background:#4e79a7;height:10px;display:inline-block}\n"
    "#tl{width:100%;height:420px;border:1px solid #ccc;background:#fff;cursor:grab}\n"
    "#tip{position:fixed;pointer-events:none;background:#333;color:#fff;padding:4px 6px;"
    "border-radius:4px;display:none;max-width:520px;font-size:12px;white-space:pre-wrap}\n"
    ".muted{color:#777}\n</style></head><body>\n"
    "<h1>typrof report</h1><div id=\"meta\" class=\"muted\"></div>\n"
    "<h2>Utilisation</h2><div class=\"grid\">"
    "<div class=\"card\"><b>CPU (mean of cores) and memory, %</b><canvas id=\"c_cpu\" "
    "width=\"560\" height=\"200\"></canvas></div>"
    "<div class=\"card\"><b>GPU utilisation and GPU memory, %</b><canvas id=\"c_gpu\" "
    "width=\"560\" height=\"200\"></canvas><div id=\"nogpu\" class=\"muted\"></div></div>"
    "<div class=\"card\"><b>Disk and network, MB/s</b><canvas id=\"c_io\" width=\"560\" "
    "height=\"200\"></canvas></div>"
    "<div class=\"card\"><b>Summary</b><div id=\"sys\"></div></div>"
    "<div class=\"card\"><b>Rules (defaults)</b><div id=\"rules_t\"></div></div></div>\n"
    "<h2>GPU work</h2><div class=\"grid\"><div class=\"card\"><b>Top kernels by total time</b>"
    "<div id=\"kern\"></div></div><div class=\"card\"><b>Launch latency and copies</b>"
    "<div id=\"lat\"></div></div></div>\n"
    "<h2>Timeline</h2><div class=\"muted\">wheel: zoom &middot; drag: pan &middot; "
    "double-click: reset &middot; hover: details</div><canvas id=\"tl\"></canvas>"
    "<div id=\"tlnote\" class=\"muted\"></div><div id=\"tip\"></div>\n";

static const char HTML_JS[] =
    "<script>\n"
    "(function(){\n"
    "const $=id=>document.getElementById(id);\n"
    "const S=JSON.parse($('summary').textContent),M=JSON.parse($('metrics').textContent);\n"
    "const TR=[...document.querySelectorAll('script.trace')].map(s=>JSON.parse(s.textContent));\n"
    "const f=(x,d)=>x==null||isNaN(x)?'-':Number(x).toFixed(d==null?1:d);\n"
    "const esc=s=>String(s).replace(/[&<>\"]/g,c=>({'&':'&amp;','<':'&lt;','>':'&gt;','\"':"
    "'&quot;'}[c]));\n"
    "const COL=['#4e79a7','#f28e2b','#e15759','#76b7b2','#59a14f','#edc948','#b07aa1',"
    "'#ff9da7','#9c755f','#bab0ac'];\n"
    "function hash(s){let h=0;for(const c of String(s))h=(h*31+c.charCodeAt(0))|0;return "
    "Math.abs(h);}\n"
    "function chart(id,lines,ymax){const c=$(id),g=c.getContext('2d'),W=c.width,H=c.height,"
    "L=40,B=20;g.clearRect(0,0,W,H);let tmax=1,vmax=ymax||1;lines.forEach(l=>{if(l.t.length)"
    "tmax=Math.max(tmax,l.t[l.t.length-1]);if(!ymax)l.v.forEach(v=>vmax=Math.max(vmax,v));});"
    "g.strokeStyle='#ccc';g.fillStyle='#666';g.font='10px sans-serif';for(let i=0;i<=4;i++){"
    "const y=H-B-(H-B-10)*i/4;g.beginPath();g.moveTo(L,y);g.lineTo(W,y);g.stroke();g.fillText("
    "f(vmax*i/4,0),2,y+3);}g.fillText(f(tmax,0)+' s',W-40,H-5);lines.forEach((l,k)=>{"
    "g.strokeStyle=l.c||COL[k%10];g.beginPath();l.t.forEach((t,i)=>{const x=L+(W-L)*t/tmax,"
    "y=H-B-(H-B-10)*Math.min(l.v[i],vmax)/vmax;i?g.lineTo(x,y):g.moveTo(x,y);});g.stroke();"
    "g.fillStyle=l.c||COL[k%10];g.fillText(l.n,L+5+k*90,10);});}\n"
    "const ser=(n,d)=>M.series[n+'|'+d];\n"
    "let cpu=null;for(let k=0;ser('cpu'+k,'CPUUtilization');k++){const s=ser('cpu'+k,"
    "'CPUUtilization');if(!cpu)cpu={n:'cpu',t:s.t.slice(),v:s.v.map(()=>0),k:0};cpu.k++;"
    "s.v.forEach((v,i)=>{if(i<cpu.v.length)cpu.v[i]+=v;});}\n"
    "const L1=[];if(cpu){cpu.v=cpu.v.map(v=>v/cpu.k);L1.push(cpu);}const mem=ser("
    "'MemoryUsedPercent','Memory');if(mem)L1.push({n:'memory',t:mem.t,v:mem.v});const iow=ser("
    "'cpu_iowait','IOWait');if(iow)L1.push({n:'iowait',t:iow.t,v:iow.v});chart('c_cpu',L1,100);\n"
    "const L2=[];for(let g=0;ser('gpu'+g,'GPUUtilization');g++){const u=ser('gpu'+g,"
    "'GPUUtilization'),m=ser('gpu'+g,'GPUMemoryUtilization');L2.push({n:'gpu'+g,t:u.t,v:u.v});"
    "if(m)L2.push({n:'gpu'+g+' mem',t:m.t,v:m.v});}chart('c_gpu',L2,100);if(!L2.length)"
    "$('nogpu').textContent='no GPU metrics (NVML not found or no GPU)';\n"
    "const L3=[];[['disk','ReadBytesPerSecond','disk read'],['disk','WriteBytesPerSecond',"
    "'disk write'],['net','ReceiveBytesPerSecond','net rx'],['net','TransmitBytesPerSecond',"
    "'net tx']].forEach(a=>{const s=ser(a[0],a[1]);if(s)L3.push({n:a[2],t:s.t,v:s.v.map(v=>"
    "v/1e6)});});chart('c_io',L3,0);\n"
    "const R=JSON.parse($('rules').textContent);$('rules_t').innerHTML='<table>'+R.map(r=>"
    "'<tr><td title=\"'+esc(r.doc)+'\">'+esc(r.rule)+'</td><td style=\"color:'+(r.status==="
    "'IssuesFound'?'#c00':'#070')+'\">'+r.status+'</td><td>'+esc(r.detail)+'</td></tr>').join('')"
    "+'</table>';\n"
    "const sy=S.system||{};let h='<table>';const row=(k,v)=>h+='<tr><td>'+esc(k)+'</td><td "
    "class=n>'+v+'</td></tr>';if(S.run)row('command',esc((S.run.command||[]).join(' '))),"
    "row('exit code',S.run.exit_code),row('wall time',f(S.run.wall_s,2)+' s'),row('interval',"
    "S.run.interval_ms+' ms');row('samples',sy.samples);row('cpu mean / p95',f(sy.cpu_util_mean)"
    "+' / '+f(sy.cpu_util_p95)+' %');row('memory max',f(sy.memory_used_percent_max)+' %');"
    "(sy.gpus||[]).forEach(g=>row(g.name+' util mean / p95',f(g.util_mean)+' / '+f(g.util_p95)+"
    "' %'));(S.processes||[]).forEach(p=>row('process '+p.pid,f(p.duration_s,2)+' s, gpu "
    "tracing '+(p.gpu_tracing?'on':'off')+(p.gpu_note?'<br><span class=muted>'+esc(p.gpu_note)+"
    "'</span>':'')));$('sys').innerHTML=h+'</table>';\n"
    "let kh='',lh='';(S.processes||[]).forEach(p=>{const k=p.kernels||{},top=k.top_by_total||[]"
    ";const mx=top.length?top[0].total_us:1;kh+='<div class=muted>pid '+p.pid+': '+(k.count||0)+"
    "' kernels, '+f(k.total_us)+' us</div><table><tr><th>kernel</th><th>count</th><th>total "
    "us</th><th>mean us</th><th></th></tr>';top.forEach(t=>kh+='<tr><td>'+esc(t.name)+'</td><td"
    " class=n>'+t.count+'</td><td class=n>'+f(t.total_us)+'</td><td class=n>'+f(t.mean_us,2)+"
    "'</td><td><span class=bar style=\"width:'+Math.round(120*t.total_us/mx)+'px\"></span></td>"
    "</tr>');kh+='</table>';const l=p.launch_latency||{};lh+='<div class=muted>pid '+p.pid+"
    "'</div><table><tr><th>launch latency</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th>"
    "<th>max</th></tr><tr><td>us ('+(l.count||0)+')</td>'+['p50_us','p90_us','p95_us','p99_us',"
    "'max_us'].map(x=>'<td class=n>'+f(l[x],2)+'</td>').join('')+'</tr></table><table><tr><th>"
    "copy</th><th>count</th><th>bytes</th><th>GB/s</th></tr>'+(p.memcpy||[]).map(c=>'<tr><td>'+"
    "c.kind+'</td><td class=n>'+c.count+'</td><td class=n>'+c.bytes+'</td><td class=n>'+"
    "f(c.bandwidth_GBps,2)+'</td></tr>').join('')+'</table><div>sync: '+((p.sync||{}).count||0)"
    "+' calls, '+f((p.sync||{}).total_us)+' us; GPU idle: '+(p.gpus||[]).map(g=>'gpu'+g.device+"
    "' '+f(100*g.idle_fraction)+'%').join(', ')+'</div>';});$('kern').innerHTML=kh||"
    "'<span class=muted>no kernels</span>';$('lat').innerHTML=lh||'<span class=muted>no "
    "process summaries</span>';\n"
    "const lanes=new Map(),evs=[];let gb=Infinity;TR.forEach(tr=>gb=Math.min(gb,"
    "(tr.otherData||{}).base_time_ns||0));TR.forEach(tr=>{const off=(((tr.otherData||{})."
    "base_time_ns||0)-gb)/1e3,pn={},tn={};tr.traceEvents.forEach(e=>{if(e.ph==='M'){if(e.name"
    "==='process_name')pn[e.pid]=e.args.name;if(e.name==='thread_name')tn[e.pid+':'+e.tid]="
    "e.args.name;}});tr.traceEvents.forEach(e=>{if(e.ph!=='X'&&e.ph!=='i')return;const key="
    "e.pid+':'+e.tid;if(!lanes.has(key))lanes.set(key,{key,pid:e.pid,tid:e.tid,name:(pn[e.pid]"
    "||e.pid)+' / '+(tn[key]||e.tid),ev:[]});const ev={s:off+e.ts,d:e.dur||0,n:e.name,c:e.cat,"
    "a:e.args};lanes.get(key).ev.push(ev);evs.push(ev);});});\n"
    "const LS=[...lanes.values()].sort((a,b)=>a.pid-b.pid||a.tid-b.tid);let y=0;LS.forEach(l=>{"
    "l.ev.sort((a,b)=>a.s-b.s||b.d-a.d);const st=[];let md=0;l.ev.forEach(e=>{while(st.length&&"
    "st[st.length-1]<=e.s)st.pop();e.dp=st.length;md=Math.max(md,e.dp);st.push(e.s+e.d);});"
    "l.y=y;l.rows=md+1;y+=14*l.rows+16;});\n"
    "const API=new Map(),DEV=[];LS.forEach(l=>l.ev.forEach(e=>{e.l=l;const c=e.a&&e.a.correlation;"
    "if(!c)return;if(e.c==='cuda_runtime'||e.c==='cuda_driver'){if(!API.has(c)||e.c==="
    "'cuda_runtime')API.set(c,e);}else if(e.c==='kernel'||e.c==='gpu_memcpy'||e.c==="
    "'gpu_memset')DEV.push(e);}));\n"
    "const cv=$('tl'),g=cv.getContext('2d'),tip=$('tip');let t0=0,t1=1;evs.forEach(e=>t1=Math."
    "max(t1,e.s+e.d));const T1=t1,LW=220;let sy0=0;\n"
    "if(!evs.length)$('tlnote').textContent='no timeline events (no process loaded libtyprof, "
    "or traces were over the size cap)';\n"
    "function draw(){cv.width=cv.clientWidth;cv.height=cv.clientHeight;const W=cv.width-LW,"
    "k=W/(t1-t0);g.clearRect(0,0,cv.width,cv.height);g.font='10px sans-serif';LS.forEach(l=>{"
    "const ly=l.y-sy0+14;if(ly>cv.height||ly+14*l.rows<0)return;g.fillStyle='#eee';g.fillRect("
    "0,ly-12,cv.width,1);g.fillStyle='#333';g.fillText(l.name.slice(0,40),4,ly);l.ev.forEach(e"
    "=>{if(e.s+e.d<t0||e.s>t1)return;const x=LW+(e.s-t0)*k,w=Math.max(1,e.d*k),yy=ly-10+14*e.dp;"
    "g.fillStyle=COL[hash(e.c+e.n)%10];g.fillRect(x,yy,w,12);if(w>40){g.fillStyle='#fff';"
    "g.fillText(e.n.slice(0,Math.floor(w/6)),x+2,yy+9);}});});"
    "g.strokeStyle='rgba(200,0,0,.5)';let fl=0;for(const e of DEV){if(fl>2000)break;"
    "const a=API.get(e.a.correlation);if(!a||(e.s<t0&&a.s<t0)||(e.s>t1&&a.s>t1))continue;fl++;"
    "const ya=a.l.y-sy0+14*a.dp+4,yk=e.l.y-sy0+14*e.dp+4;g.beginPath();g.moveTo(LW+(a.s-t0)*k,"
    "ya);g.lineTo(LW+(e.s-t0)*k,yk);g.stroke();}g.fillStyle='#666';g.fillText("
    "f(t0/1e3,3)+' ms',LW,cv.height-2);g.fillText(f(t1/1e3,3)+' ms',cv.width-80,cv.height-2);}\n"
    "cv.addEventListener('wheel',ev=>{ev.preventDefault();if(ev.shiftKey){sy0=Math.max(0,sy0+"
    "ev.deltaY);draw();return;}const r=cv.getBoundingClientRect(),x=ev.clientX-r.left-LW,"
    "tm=t0+(t1-t0)*Math.max(0,x)/(cv.width-LW),z=ev.deltaY>0?1.25:0.8;t0=tm-(tm-t0)*z;t1=tm+"
    "(t1-tm)*z;if(t1-t0<0.001)t1=t0+0.001;draw();},{passive:false});\n"
    "let drag=null;cv.addEventListener('mousedown',ev=>drag={x:ev.clientX,y:ev.clientY,t0,t1,"
    "sy0});window.addEventListener('mouseup',()=>drag=null);cv.addEventListener('dblclick',()=>"
    "{t0=0;t1=T1;sy0=0;draw();});\n"
    "cv.addEventListener('mousemove',ev=>{if(drag){const dt=(ev.clientX-drag.x)*(drag.t1-"
    "drag.t0)/(cv.width-LW);t0=drag.t0-dt;t1=drag.t1-dt;sy0=Math.max(0,drag.sy0-(ev.clientY-"
    "drag.y));draw();return;}const r=cv.getBoundingClientRect(),mx=ev.clientX-r.left,my="
    "ev.clientY-r.top,k=(cv.width-LW)/(t1-t0);let hit=null;LS.forEach(l=>{const ly=l.y-sy0+14;"
    "if(my<ly-10||my>ly-10+14*l.rows)return;l.ev.forEach(e=>{const x=LW+(e.s-t0)*k,w=Math.max(2,"
    "e.d*k),yy=ly-10+14*e.dp;if(mx>=x&&mx<=x+w&&my>=yy&&my<=yy+12)hit=e;});});if(!hit){"
    "tip.style.display='none';return;}tip.style.display='block';tip.style.left=(ev.clientX+12)+"
    "'px';tip.style.top=(ev.clientY+12)+'px';tip.textContent=hit.n+'\\n'+hit.c+'  '+f(hit.d,3)+"
    "' us at '+f(hit.s/1e3,3)+' ms'+(hit.a?'\\n'+JSON.stringify(hit.a):'');});\n"
    "window.addEventListener('resize',draw);draw();\n"
    "$('meta').textContent='generated by typrof; '+TR.length+' trace file(s), '+evs.length+"
    "' events';\n"
    "})();\n</script>\n</body></html>\n";

int typrof_cli_html(const char *dir, const char *html_path, size_t max_trace_bytes)
{
    char path[4200], tmp[4300];
    size_t len;
    snprintf(path, sizeof(path), "%s/summary.json", dir);
    char *summary = jm_read_file(path, 64u << 20, &len);
    if (!summary) {
        fprintf(stderr, "typrof: cannot read '%s'\n", path);
        return -1;
    }
    snprintf(tmp, sizeof(tmp), "%s.tmp", html_path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "typrof: cannot write '%s'\n", html_path);
        free(summary);
        return -1;
    }
    fputs(HTML_HEAD, f);
    fputs("<script type=\"application/json\" id=\"summary\">", f);
    put_script_safe(f, summary, len);
    free(summary);
    fputs("</script>\n<script type=\"application/json\" id=\"metrics\">", f);
    struct typrof_metrics m;
    if (typrof__metrics_load(dir, &m) == 0) {
        write_metrics_json(f, &m);
        typrof__metrics_cleanup(&m);
    } else {
        fputs("{\"t0\":0,\"series\":{}}", f);
    }
    fputs("</script>\n<script type=\"application/json\" id=\"rules\">[", f);
    if (typrof__metrics_load(dir, &m) == 0) {
        size_t nr;
        const struct typrof_rule_def *defs = typrof__rules(&nr);
        for (size_t r = 0; r < nr; r++) {
            struct typrof_rule_result res;
            typrof__rule_eval(defs[r].name, &m, NULL, 0, &res);
            fprintf(f, "%s{\"rule\":\"%s\",\"status\":\"%s\",\"detail\":", r ? "," : "", res.rule,
                    typrof__rule_status_name(res.status));
            typrof__json_str(f, res.detail);
            fputs(",\"doc\":", f);
            typrof__json_str(f, defs[r].doc);
            fputc('}', f);
        }
        typrof__metrics_cleanup(&m);
    }
    fputs("]</script>\n", f);
    char **files;
    snprintf(path, sizeof(path), "%s/trace", dir);
    size_t n = list_files(path, ".trace.json", &files), used = 0, skipped = 0;
    for (size_t i = 0; i < n; i++) {
        char *txt = jm_read_file(files[i], max_trace_bytes + 1, &len);
        if (!txt || used + len > max_trace_bytes) {
            skipped++;
            free(txt);
            continue;
        }
        used += len;
        fputs("<script type=\"application/json\" class=\"trace\">", f);
        put_script_safe(f, txt, len);
        fputs("</script>\n", f);
        free(txt);
    }
    free_list(files, n);
    if (skipped)
        fprintf(f,
                "<p class=\"muted\">%zu trace file(s) left out (over --max-trace-mb); open "
                "them in ui.perfetto.dev</p>\n",
                skipped);
    fputs(HTML_JS, f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, html_path) != 0) {
        fprintf(stderr, "typrof: cannot write '%s'\n", html_path);
        unlink(tmp);
        return -1;
    }
    return 0;
}
