// check_report.js REPORT.html - runs the dashboard's script against a stub DOM (node, no
// browser): the embedded JSON parses, every chart and the timeline draw, and zoom, pan and
// hover handlers run without throwing, the charts' time axes carry several labels, hovering a
// chart shows its values and dragging zooms. Prints the page's summary line on success.
'use strict';
const fs = require('fs');
const html = fs.readFileSync(process.argv[2], 'utf8');
if (/(src|href)\s*=\s*["']?(https?:)?\/\//i.test(html)) throw new Error('external resource');
const json = {}, traces = [];
const re = /<script type="application\/json" (id|class)="([^"]+)">([\s\S]*?)<\/script>/g;
let m;
while ((m = re.exec(html))) {
  if (m[1] === 'id') json[m[2]] = m[3]; else traces.push(m[3]);
}
const code = html.slice(html.lastIndexOf('<script>') + 8, html.lastIndexOf('</script>'));
let calls = 0;
const texts = [];
const ctx = new Proxy({}, { get: (t, k) => (k in t ? t[k] : k === 'fillText' ?
                                              (s) => { calls++; texts.push(String(s)); } :
                                              () => { calls++; }),
                            set: (t, k, v) => { t[k] = v; return true; } });
const handlers = {};
const el = id => ({
  id, textContent: json[id] || '', innerHTML: '', style: {}, width: 560, height: 200,
  clientWidth: 1000, clientHeight: 420, getContext: () => ctx,
  getBoundingClientRect: () => ({ left: 0, top: 0 }),
  addEventListener: (ev, fn) => { handlers[id + ':' + ev] = fn; },
});
const els = {};
global.document = {
  getElementById: id => (els[id] = els[id] || el(id)),
  querySelectorAll: () => traces.map(t => ({ textContent: t })),
};
global.window = { addEventListener: (ev, fn) => { handlers['window:' + ev] = fn; } };
eval(code);
const ev = { preventDefault() {}, clientX: 600, clientY: 30, deltaY: -100, shiftKey: false };
handlers['tl:wheel'](ev);
handlers['tl:wheel']({ ...ev, deltaY: 100 });
handlers['tl:mousedown'](ev);
handlers['tl:mousemove']({ ...ev, clientX: 650 });
handlers['window:mouseup']();
handlers['tl:mousemove'](ev);
handlers['tl:dblclick']();
if (!calls) throw new Error('nothing drawn');
// time axes: several labels (ms / s / m:ss)
const timeLabels = new Set(texts.filter(t => /^\d+(\.\d)? (ms|s)$|^\d+:\d\d$/.test(t)));
if (timeLabels.size < 3) throw new Error('time axes have ' + timeLabels.size + ' labels');
// hover on the CPU chart: a tooltip with the time and each series' value
handlers['c_cpu:mousemove']({ clientX: 300, clientY: 50 });
if (!/^t = /.test(els.tip.textContent) || !/cpu: [\d.]+ %/.test(els.tip.textContent))
  throw new Error('no hover values: ' + els.tip.textContent);
// drag-select zooms: the axis then starts past 0
handlers['c_cpu:mousedown']({ clientX: 400, clientY: 50 });
handlers['c_cpu:mousemove']({ clientX: 700, clientY: 50 });
texts.length = 0;
handlers['c_cpu:mouseup']();
if (texts.includes('0 ms')) throw new Error('zoom did not move the time axis');
handlers['c_cpu:dblclick']();
if (!texts.includes('0 ms')) throw new Error('reset did not restore the time axis');
handlers['c_cpu:mouseleave']();
if (els.tip.style.display !== 'none') throw new Error('tooltip stays');
console.log(els.meta.textContent);
