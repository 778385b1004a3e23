(function(){
'use strict';
const $=id=>document.getElementById(id);
const S=JSON.parse($('summary').textContent),M=JSON.parse($('metrics').textContent);
const RULES=JSON.parse($('rules').textContent),JOBRULES=JSON.parse($('jobrules').textContent);
const TR=[...document.querySelectorAll('script.trace')].map(s=>JSON.parse(s.textContent));
const f=(x,d)=>x==null||isNaN(x)?'-':Number(x).toFixed(d==null?1:d);
const esc=s=>String(s==null?'':s).replace(/[&<>"]/g,c=>({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]));
const COL=['#4e79a7','#f28e2b','#e15759','#76b7b2','#59a14f','#edc948','#b07aa1','#ff9da7','#9c755f','#bab0ac'];
const tip=$('tip');
function hash(s){let h=0;for(const c of String(s))h=(h*31+c.charCodeAt(0))|0;return Math.abs(h);}
function showTip(x,y,text){tip.style.display='block';tip.style.left=(x+12)+'px';tip.style.top=(y+12)+'px';tip.textContent=text;}
function hideTip(){tip.style.display='none';}
/* ticks: about n round values covering [a,b] */
function ticks(a,b,n){const span=Math.max(b-a,1e-9),raw=span/n,p=Math.pow(10,Math.floor(Math.log10(raw))),m=raw/p;
  const st=(m<1.5?1:m<3?2:m<7?5:10)*p,out=[];for(let v=Math.ceil(a/st)*st;v<=b+st*1e-6;v+=st)out.push(v);return out;}
function tlabel(s){if(Math.abs(s)<1)return f(s*1e3,0)+' ms';if(s<120)return f(s,s<10?1:0)+' s';const m=Math.floor(s/60),r=Math.round(s-60*m);
  return m<60?m+':'+String(r).padStart(2,'0'):Math.floor(m/60)+'h'+String(m%60).padStart(2,'0');}
function vlabel(v){return Math.abs(v)>=1e4?v.toExponential(1):f(v,Math.abs(v)<10&&v%1?1:0);}
/* a line chart: lines [{n,t,v,c}] (t in s), drawn at the canvas' CSS width; hover shows the
   values, drag selects a time range to zoom into, double-click resets */
function chart(id,lines,ymax,unit){
  const c=$(id),g=c.getContext('2d'),lg=$('lg_'+id.slice(2));
  if(lg)lg.innerHTML=lines.map((l,k)=>'<span><i style="background:'+(l.c||COL[k%10])+'"></i>'+esc(l.n)+'</span>').join('');
  let tmax=0,vmax=ymax||0;lines.forEach(l=>{if(l.t.length)tmax=Math.max(tmax,l.t[l.t.length-1]);if(!ymax)l.v.forEach(v=>vmax=Math.max(vmax,v));});
  if(!(tmax>0))tmax=1;if(!(vmax>0))vmax=1;
  const L=48,R=10,T=8,B=22;let hx=-1,lo=0,hi=tmax,sel=null;
  const W=()=>c.clientWidth||560,tat=x=>lo+(x-L)/(W()-L-R)*(hi-lo);
  function draw(){const dpr=window.devicePixelRatio||1,Wd=W(),H=c.clientHeight||220;c.width=Wd*dpr;c.height=H*dpr;
    g.setTransform&&g.setTransform(dpr,0,0,dpr,0,0);g.clearRect(0,0,Wd,H);g.font='11px sans-serif';g.lineWidth=1;
    const X=t=>L+(Wd-L-R)*(t-lo)/(hi-lo),Y=v=>H-B-(H-B-T)*Math.min(v,vmax)/vmax;
    g.strokeStyle='#e3e3e3';g.fillStyle='#555';
    ticks(0,vmax,4).forEach(v=>{const y=Y(v);g.beginPath();g.moveTo(L,y);g.lineTo(Wd-R,y);g.stroke();g.fillText(vlabel(v),2,y+4);});
    ticks(lo,hi,Math.max(3,Math.floor((Wd-L)/90))).forEach(t=>{const x=X(t);g.beginPath();g.moveTo(x,T);g.lineTo(x,H-B);g.stroke();g.fillText(tlabel(t),Math.min(x-12,Wd-50),H-6);});
    g.save&&g.save();g.beginPath();g.rect&&g.rect(L,0,Wd-L-R,H);g.clip&&g.clip();
    lines.forEach((l,k)=>{g.strokeStyle=l.c||COL[k%10];g.lineWidth=1.5;g.beginPath();l.t.forEach((t,i)=>{const x=X(t),y=Y(l.v[i]);i?g.lineTo(x,y):g.moveTo(x,y);});g.stroke();});
    g.restore&&g.restore();
    if(sel){g.fillStyle='rgba(78,121,167,.15)';g.fillRect(Math.min(sel.a,sel.b),T,Math.abs(sel.b-sel.a),H-B-T);}
    if(hx>=L){g.strokeStyle='#888';g.lineWidth=1;g.beginPath();g.moveTo(hx,T);g.lineTo(hx,H-B);g.stroke();}
    if(!lines.length){g.fillStyle='#777';g.fillText('no data',L+10,H/2);}}
  c.addEventListener('mousedown',ev=>{const r=c.getBoundingClientRect();sel={a:ev.clientX-r.left,b:ev.clientX-r.left};});
  c.addEventListener('mouseup',()=>{if(sel&&Math.abs(sel.b-sel.a)>4){const a=tat(Math.min(sel.a,sel.b)),b=tat(Math.max(sel.a,sel.b));lo=Math.max(0,a);hi=Math.max(lo+1e-3,b);}sel=null;draw();});
  c.addEventListener('dblclick',()=>{lo=0;hi=tmax;sel=null;draw();});
  c.addEventListener('mousemove',ev=>{const r=c.getBoundingClientRect();hx=ev.clientX-r.left;if(sel)sel.b=hx;
    const t=tat(hx);if(t<lo||t>hi||!lines.length){hideTip();draw();return;}
    const rows=lines.map(l=>{let b=0;for(let i=0;i<l.t.length;i++)if(Math.abs(l.t[i]-t)<Math.abs(l.t[b]-t))b=i;return l.n+': '+(l.t.length?vlabel(l.v[b])+(unit||''):'-');});
    showTip(ev.clientX,ev.clientY,'t = '+tlabel(t)+'\n'+rows.join('\n'));draw();});
  c.addEventListener('mouseleave',()=>{hx=-1;sel=null;hideTip();draw();});
  window.addEventListener('resize',draw);draw();}
const ser=(n,d)=>M.series[n+'|'+d];
let cpu=null;for(let k=0;ser('cpu'+k,'CPUUtilization');k++){const s=ser('cpu'+k,'CPUUtilization');if(!cpu)cpu={n:'cpu',t:s.t.slice(),v:s.v.map(()=>0),k:0};cpu.k++;s.v.forEach((v,i)=>{if(i<cpu.v.length)cpu.v[i]+=v;});}
const L1=[];if(cpu){cpu.v=cpu.v.map(v=>v/cpu.k);L1.push(cpu);}
const mem=ser('MemoryUsedPercent','Memory');if(mem)L1.push({n:'memory',t:mem.t,v:mem.v});
const iow=ser('cpu_iowait','IOWait');if(iow)L1.push({n:'iowait',t:iow.t,v:iow.v});chart('c_cpu',L1,100,' %');
const L2=[];for(let g=0;ser('gpu'+g,'GPUUtilization');g++){const u=ser('gpu'+g,'GPUUtilization'),m=ser('gpu'+g,'GPUMemoryUtilization');L2.push({n:'gpu'+g,t:u.t,v:u.v});if(m)L2.push({n:'gpu'+g+' memory',t:m.t,v:m.v});}
chart('c_gpu',L2,100,' %');if(!L2.length)$('nogpu').textContent='no GPU metrics (NVML not found or no GPU)';
const L3=[];[['disk','ReadBytesPerSecond','disk read'],['disk','WriteBytesPerSecond','disk write'],['net','ReceiveBytesPerSecond','net rx'],['net','TransmitBytesPerSecond','net tx']].forEach(a=>{const s=ser(a[0],a[1]);if(s)L3.push({n:a[2],t:s.t,v:s.v.map(v=>Math.max(0,v)/1e6)});});
chart('c_io',L3,0,' MB/s');
/* rules: the job's configured rules, then the built-in defaults */
let rh='';const st=s=>'<td class="st-'+esc(s)+'">'+esc(s==='NoData'?'NoData (not evaluated)':s)+'</td>';
if(JOBRULES.length){rh+='<b>This job\'s rules</b><table><tr><th>rule configuration</th><th>rule</th><th>status</th><th>datapoints</th><th>details</th></tr>'+JOBRULES.map(r=>'<tr><td>'+esc(r.RuleConfigurationName)+'</td><td>'+esc(r.Rule)+'</td>'+st(r.RuleEvaluationStatus)+'<td class=n>'+esc(r.Datapoints==null?'-':r.Datapoints)+'</td><td>'+esc(r.StatusDetails)+'</td></tr>').join('')+'</table><br>';}
rh+='<b>Built-in rules (defaults)</b><table><tr><th>rule</th><th>status</th><th>datapoints</th><th>details</th></tr>'+RULES.map(r=>'<tr><td title="'+esc(r.doc)+'">'+esc(r.rule)+'</td>'+st(r.status)+'<td class=n>'+r.datapoints+'</td><td>'+esc(r.detail)+'</td></tr>').join('')+'</table>';
$('rules_t').innerHTML=rh;
const sy=S.system||{};let h='<table>';const row=(k,v)=>h+='<tr><td>'+esc(k)+'</td><td class=n>'+v+'</td></tr>';
if(S.run)row('command',esc((S.run.command||[]).join(' '))),row('exit code',S.run.exit_code),row('wall time',f(S.run.wall_s,2)+' s'),row('interval',S.run.interval_ms+' ms');
row('samples',sy.samples);row('cpu mean / p95',f(sy.cpu_util_mean)+' / '+f(sy.cpu_util_p95)+' %');row('memory max',f(sy.memory_used_percent_max)+' %');
(sy.gpus||[]).forEach(g=>row(g.name+' util mean / p95',f(g.util_mean)+' / '+f(g.util_p95)+' %'));
const PR=(S.processes||[]).slice().sort((a,b)=>(b.duration_s||0)-(a.duration_s||0));
PR.slice(0,4).forEach(p=>row('process '+p.pid,f(p.duration_s,2)+' s, gpu tracing '+(p.gpu_tracing?'on':'off')+(p.gpu_note?'<br><span class=muted>'+esc(p.gpu_note)+'</span>':'')));
if(PR.length>4)row('other processes',(PR.length-4)+' shorter ones (see the tables below)');
$('sys').innerHTML=h+'</table>';
let kh='',lh='',ch='',ah='';(S.processes||[]).filter(p=>(p.kernels||{}).count||(p.launch_latency||{}).count||(p.memcpy||[]).length||((p.annotations||{}).top_by_total||[]).length||(p.steps||{}).count).forEach(p=>{const k=p.kernels||{},top=k.top_by_total||[];const mx=top.length?top[0].total_us:1;
  kh+='<div class=muted>pid '+p.pid+': '+(k.count||0)+' kernels, '+f(k.total_us)+' us</div>';
  if(top.length)kh+='<table><tr><th>kernel</th><th>count</th><th>total us</th><th>mean us</th><th></th></tr>'+top.map(t=>'<tr><td class=name>'+esc(t.name)+'</td><td class=n>'+t.count+'</td><td class=n>'+f(t.total_us)+'</td><td class=n>'+f(t.mean_us,2)+'</td><td><span class=bar style="width:'+Math.round(120*t.total_us/mx)+'px"></span></td></tr>').join('')+'</table>';
  const l=p.launch_latency||{};lh+='<div class=muted>pid '+p.pid+'</div><table><tr><th>launch latency</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>max</th></tr><tr><td>us ('+(l.count||0)+')</td>'+['p50_us','p90_us','p95_us','p99_us','max_us'].map(x=>'<td class=n>'+f(l[x],2)+'</td>').join('')+'</tr></table>';
  ch+='<div class=muted>pid '+p.pid+'</div><table><tr><th>copy</th><th>count</th><th>bytes</th><th>GB/s</th></tr>'+(p.memcpy||[]).map(c=>'<tr><td>'+esc(c.kind)+'</td><td class=n>'+c.count+'</td><td class=n>'+c.bytes+'</td><td class=n>'+f(c.bandwidth_GBps,2)+'</td></tr>').join('')+'</table><div>sync: '+((p.sync||{}).count||0)+' calls, '+f((p.sync||{}).total_us)+' us; GPU idle: '+((p.gpus||[]).map(g=>'gpu'+g.device+' '+f(100*g.idle_fraction)+'%').join(', ')||'-')+'</div>';
  const an=(p.annotations||{}).top_by_total||[];if(an.length)ah+='<div class=muted>pid '+p.pid+'</div><table><tr><th>range</th><th>count</th><th>total us</th></tr>'+an.map(a=>'<tr><td class=name>'+esc(a.name)+'</td><td class=n>'+a.count+'</td><td class=n>'+f(a.total_us)+'</td></tr>').join('')+'</table>';});
$('kern').innerHTML=kh||'<span class=muted>no kernels (no process loaded libtyprof with CUDA)</span>';
$('lat').innerHTML=lh||'<span class=muted>no launches</span>';$('copies').innerHTML=ch||'<span class=muted>no copies</span>';
$('annot').innerHTML=ah||'<span class=muted>no annotations</span>';
/* timeline: X and i events in lanes per pid/tid, C events as counter lanes */
const lanes=new Map(),evs=[],ctr=new Map();let gb=Infinity;TR.forEach(tr=>gb=Math.min(gb,(tr.otherData||{}).base_time_ns||0));if(!isFinite(gb))gb=0;
TR.forEach(tr=>{const off=(((tr.otherData||{}).base_time_ns||0)-gb)/1e3,pn={},tn={};
  tr.traceEvents.forEach(e=>{if(e.ph==='M'){if(e.name==='process_name')pn[e.pid]=e.args.name;if(e.name==='thread_name')tn[e.pid+':'+e.tid]=e.args.name;}});
  tr.traceEvents.forEach(e=>{if(e.ph==='C'){if(!ctr.has(e.name))ctr.set(e.name,{name:e.name,t:[],v:[]});const c=ctr.get(e.name);c.t.push(off+e.ts);c.v.push(Number((e.args||{}).value)||0);return;}
    if(e.ph!=='X'&&e.ph!=='i')return;const key=e.pid+':'+e.tid;
    if(!lanes.has(key))lanes.set(key,{key,pid:e.pid,tid:e.tid,name:(pn[e.pid]||e.pid)+' / '+(tn[key]||e.tid),ev:[]});
    const ev={s:off+e.ts,d:e.dur||0,n:e.name,c:e.cat,a:e.args};lanes.get(key).ev.push(ev);evs.push(ev);});});
const LS=[...lanes.values()].sort((a,b)=>a.pid-b.pid||a.tid-b.tid);let y=0;
const CS=[...ctr.values()].filter(c=>/CPUUtilization$|Memory$|GPUUtilization$|BytesPerSecond$/.test(c.name)&&!/^cpu[1-9]/.test(c.name));
CS.forEach(c=>{c.y=y;c.max=Math.max(1,...c.v);y+=30;});
LS.forEach(l=>{l.ev.sort((a,b)=>a.s-b.s||b.d-a.d);const st=[];let md=0;l.ev.forEach(e=>{while(st.length&&st[st.length-1]<=e.s)st.pop();e.dp=st.length;md=Math.max(md,e.dp);st.push(e.s+e.d);});l.y=y;l.rows=md+1;y+=14*l.rows+16;});
const API=new Map(),DEV=[];LS.forEach(l=>l.ev.forEach(e=>{e.l=l;const c=e.a&&e.a.correlation;if(!c)return;
  if(e.c==='cuda_runtime'||e.c==='cuda_driver'){if(!API.has(c)||e.c==='cuda_runtime')API.set(c,e);}else if(e.c==='kernel'||e.c==='gpu_memcpy'||e.c==='gpu_memset')DEV.push(e);}));
/* steps: durations over time */
const steps=evs.filter(e=>e.c==='step').sort((a,b)=>a.s-b.s);
chart('c_steps',steps.length?[{n:'step duration',t:steps.map(e=>e.s/1e6),v:steps.map(e=>e.d/1e3)}]:[],0,' ms');
$('stepnote').textContent=steps.length?steps.length+' steps':'no steps recorded (annotate with typrof_step_begin/end or smprof.step_begin/end)';
const cv=$('tl'),g=cv.getContext('2d');let t0=0,t1=1;evs.forEach(e=>t1=Math.max(t1,e.s+e.d));CS.forEach(c=>c.t.forEach(t=>t1=Math.max(t1,t)));
let tmin=Infinity;evs.forEach(e=>tmin=Math.min(tmin,e.s));CS.forEach(c=>c.t.forEach(t=>tmin=Math.min(tmin,t)));if(!isFinite(tmin))tmin=0;t0=tmin;
const T0=t0,T1=t1,LW=220,AX=18;let sy0=0;
if(!evs.length&&!CS.length)$('tlnote').textContent='no timeline events';
function draw(){const dpr=window.devicePixelRatio||1,W0=cv.clientWidth||1000,H0=cv.clientHeight||480;cv.width=W0*dpr;cv.height=H0*dpr;g.setTransform&&g.setTransform(dpr,0,0,dpr,0,0);
  const W=W0-LW,k=W/(t1-t0);g.clearRect(0,0,W0,H0);g.font='10px sans-serif';
  g.strokeStyle='#eee';g.fillStyle='#555';ticks(t0-T0,t1-T0,Math.max(3,Math.floor(W/110))).forEach(v=>{const x=LW+(v+T0-t0)*k;if(x<LW)return;g.beginPath();g.moveTo(x,AX);g.lineTo(x,H0);g.stroke();g.fillText(tlabel(v/1e6),x+2,12);});
  CS.forEach(c=>{const ly=c.y-sy0+AX;if(ly>H0||ly+26<AX)return;g.fillStyle='#333';g.fillText(c.name.slice(0,38),4,ly+16);g.fillStyle='rgba(78,121,167,.35)';g.strokeStyle='#4e79a7';g.beginPath();g.moveTo(LW,ly+26);
    c.t.forEach((t,i)=>g.lineTo(LW+(t-t0)*k,ly+26-24*c.v[i]/c.max));g.lineTo(LW+(c.t[c.t.length-1]-t0)*k,ly+26);g.fill();});
  LS.forEach(l=>{const ly=l.y-sy0+AX+14;if(ly>H0||ly+14*l.rows<AX)return;g.fillStyle='#eee';g.fillRect(0,ly-12,W0,1);g.fillStyle='#333';g.fillText(String(l.name).slice(0,40),4,ly);
    l.ev.forEach(e=>{if(e.s+e.d<t0||e.s>t1)return;const x=LW+(e.s-t0)*k,w=Math.max(1,e.d*k),yy=ly-10+14*e.dp;g.fillStyle=COL[hash(e.c+e.n)%10];g.fillRect(x,yy,w,12);
      if(w>40){g.fillStyle='#fff';g.fillText(String(e.n).slice(0,Math.floor(w/6)),x+2,yy+9);}});});
  g.strokeStyle='rgba(200,0,0,.5)';let fl=0;for(const e of DEV){if(fl>2000)break;const a=API.get(e.a.correlation);if(!a||(e.s<t0&&a.s<t0)||(e.s>t1&&a.s>t1))continue;fl++;
    const ya=a.l.y-sy0+AX+14*a.dp+4,yk=e.l.y-sy0+AX+14*e.dp+4;g.beginPath();g.moveTo(LW+(a.s-t0)*k,ya);g.lineTo(LW+(e.s-t0)*k,yk);g.stroke();}}
cv.addEventListener('wheel',ev=>{ev.preventDefault();if(ev.shiftKey){sy0=Math.max(0,sy0+ev.deltaY);draw();return;}const r=cv.getBoundingClientRect(),W=(cv.clientWidth||1000)-LW,x=ev.clientX-r.left-LW,
  tm=t0+(t1-t0)*Math.max(0,x)/W,z=ev.deltaY>0?1.25:0.8;t0=tm-(tm-t0)*z;t1=tm+(t1-tm)*z;if(t1-t0<0.001)t1=t0+0.001;draw();},{passive:false});
let drag=null;cv.addEventListener('mousedown',ev=>drag={x:ev.clientX,y:ev.clientY,t0,t1,sy0});window.addEventListener('mouseup',()=>drag=null);
cv.addEventListener('dblclick',()=>{t0=T0;t1=T1;sy0=0;draw();});
cv.addEventListener('mouseleave',hideTip);
cv.addEventListener('mousemove',ev=>{const W=(cv.clientWidth||1000)-LW;if(drag){const dt=(ev.clientX-drag.x)*(drag.t1-drag.t0)/W;t0=drag.t0-dt;t1=drag.t1-dt;sy0=Math.max(0,drag.sy0-(ev.clientY-drag.y));draw();return;}
  const r=cv.getBoundingClientRect(),mx=ev.clientX-r.left,my=ev.clientY-r.top,k=W/(t1-t0),tm=t0+(mx-LW)/k;let hit=null;
  for(const c of CS){const ly=c.y-sy0+AX;if(my>=ly&&my<=ly+28&&mx>=LW){let b=0;for(let i=0;i<c.t.length;i++)if(Math.abs(c.t[i]-tm)<Math.abs(c.t[b]-tm))b=i;
    showTip(ev.clientX,ev.clientY,c.name+'\n'+vlabel(c.v[b])+' at '+tlabel((c.t[b]-T0)/1e6));return;}}
  LS.forEach(l=>{const ly=l.y-sy0+AX+14;if(my<ly-10||my>ly-10+14*l.rows)return;l.ev.forEach(e=>{const x=LW+(e.s-t0)*k,w=Math.max(2,e.d*k),yy=ly-10+14*e.dp;if(mx>=x&&mx<=x+w&&my>=yy&&my<=yy+12)hit=e;});});
  if(!hit){hideTip();return;}showTip(ev.clientX,ev.clientY,hit.n+'\n'+hit.c+'  '+f(hit.d,3)+' us at '+tlabel((hit.s-T0)/1e6)+(hit.a?'\n'+JSON.stringify(hit.a):''));});
window.addEventListener('resize',draw);draw();
$('meta').textContent='generated by typrof; '+evs.length+' events, '+CS.length+' counter tracks, '+steps.length+' steps';
})();
