/* trainyard console: confirmations, the job page's log tail and metric charts (uPlot).
   No inline script anywhere: the pages' Content-Security-Policy allows this file only. */
(function () {
  "use strict";

  /* forms that ask first (Stop, Delete) */
  document.addEventListener("submit", function (e) {
    var msg = e.target.getAttribute && e.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) e.preventDefault();
  });

  var log = document.getElementById("log");
  var charts = document.getElementById("charts");
  if (!log && !charts) return;
  var feed = (log || charts).getAttribute("data-feed");
  var running = log && log.getAttribute("data-running") === "1";
  var events = [];
  var token = null;

  /* metric series from the log lines, with the job's MetricDefinitions (as the agent does) */
  var defs = [];
  if (charts) {
    try { defs = JSON.parse(charts.getAttribute("data-defs")) || []; } catch (err) { defs = []; }
  }
  var plots = {};
  var haveUplot = charts && charts.getAttribute("data-uplot") === "1" && window.uPlot;

  function series(def) {
    var re, xs = [], ys = [];
    try { re = new RegExp(def.Regex); } catch (err) { return null; }
    events.forEach(function (ev) {
      var m = re.exec(ev.message);
      if (m && m[1] !== undefined) {
        var v = parseFloat(m[1]);
        if (isFinite(v)) { xs.push(ev.timestamp / 1000); ys.push(v); }
      }
    });
    return [xs, ys];
  }

  function drawCharts() {
    if (!charts) return;
    defs.forEach(function (def, i) {
      var data = series(def);
      if (!data) return;
      var p = plots[def.Name];
      if (!p) {
        var box = document.createElement("figure");
        box.className = "chart";
        box.id = "chart-" + i;
        box.setAttribute("role", "group");
        box.setAttribute("aria-label", "Metric " + def.Name + " over time");
        var h = document.createElement("h3");
        h.textContent = def.Name;
        box.appendChild(h);
        var area = document.createElement("div");
        box.appendChild(area);
        var cap = document.createElement("figcaption");
        cap.className = "hint";
        box.appendChild(cap);
        charts.appendChild(box);
        p = plots[def.Name] = { box: box, area: area, cap: cap, u: null };
      }
      p.cap.textContent = data[0].length + " points" +
        (data[1].length ? ", latest " + data[1][data[1].length - 1] : "");
      if (!haveUplot) {
        p.area.textContent = "Charts need uPlot (run scripts/install-deps.sh and rebuild).";
        return;
      }
      var width = Math.max(300, p.box.clientWidth - 16);
      if (!p.u) {
        p.u = new window.uPlot({
          width: width, height: 220,
          scales: { x: { time: true } },
          series: [
            { label: "Time (UTC)", value: "{YYYY}-{MM}-{DD} {HH}:{mm}:{ss}" },
            { label: def.Name, stroke: "#0b5cad", width: 2, points: { show: true, size: 4 } }
          ],
          axes: [{ label: "time", stroke: "#1b1f24" }, { label: def.Name, stroke: "#1b1f24" }],
          tzDate: function (ts) { return window.uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"); }
        }, data, p.area);
      } else {
        p.u.setData(data);
      }
      /* a job that logged everything within seconds still gets a readable time axis */
      var xs = data[0];
      if (xs.length) {
        var lo = xs[0], hi = xs[xs.length - 1];
        if (hi - lo < 60) p.u.setScale("x", { min: lo - 30, max: hi + 30 });
      }
    });
  }

  window.addEventListener("resize", function () {
    Object.keys(plots).forEach(function (k) {
      var p = plots[k];
      if (p.u) p.u.setSize({ width: Math.max(300, p.box.clientWidth - 16), height: 220 });
    });
  });

  function fmt(ev) {
    var d = new Date(ev.timestamp);
    return d.toISOString().slice(11, 19) + "  " + ev.message;
  }

  function poll() {
    var url = feed + (token ? "?nextToken=" + encodeURIComponent(token) : "");
    fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { return r.json().then(function (j) { return [r.status, j]; }); })
      .then(function (res) {
        var j = res[1];
        if (res[0] !== 200) {
          if (log) log.textContent = (j.__type || "Error") + ": " + (j.message || "");
          return;
        }
        var fresh = j.events || [];
        if (fresh.length) {
          events = events.concat(fresh);
          if (log) {
            if (log.textContent === "(no log lines yet)\n") log.textContent = "";
            var atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
            log.textContent += fresh.map(fmt).join("\n") + "\n";
            if (atEnd) log.scrollTop = log.scrollHeight;
          }
          drawCharts();
        } else if (!events.length && log && !log.textContent) {
          log.textContent = "(no log lines yet)\n";
        }
        if (j.nextForwardToken) token = j.nextForwardToken;
        if (fresh.length >= 10000) { poll(); return; }
        if (running) setTimeout(poll, 2000);
      })
      .catch(function () { if (running) setTimeout(poll, 5000); });
  }
  poll();
})();

/* a profiled job's system metrics (<job page>/system.json, console_sysmon.h): CPU and memory,
   GPU, network, as uPlot charts refreshed every 2 s while the job runs */
(function () {
  "use strict";
  var box = document.getElementById("sysmon");
  if (!box) return;
  var feed = box.getAttribute("data-feed");
  var running = box.getAttribute("data-running") === "1";
  var haveUplot = box.getAttribute("data-uplot") === "1" && window.uPlot;
  var groups = [
    { id: "sys-cpu", title: "CPU and memory (%)", keys: ["cpu", "mem"],
      labels: ["CPU (mean of cores)", "Memory used"], colors: ["#0b5cad", "#b3261e"] },
    { id: "sys-gpu", title: "GPU (%)", keys: ["gpu", "gpumem"],
      labels: ["GPU utilization", "GPU memory"], colors: ["#1e7b34", "#8a4b00"], gpu: true },
    { id: "sys-net", title: "Network (bytes/s)", keys: ["rx", "tx"],
      labels: ["Received", "Transmitted"], colors: ["#5b3cc4", "#00707a"] }
  ];
  var plots = {};

  function last(a) {
    for (var i = a.length - 1; i >= 0; i--) if (a[i] !== null) return a[i];
    return null;
  }

  function num(v) {
    if (v === null || v === undefined) return "-";
    return Math.abs(v) >= 1000 ? Math.round(v).toLocaleString("en-US") : v.toFixed(1);
  }

  function draw(j) {
    var note = document.getElementById("sysmon-note");
    if (!note) {
      note = document.createElement("p");
      note.id = "sysmon-note";
      note.className = "hint";
      box.appendChild(note);
    }
    if (!j.enabled) { note.textContent = "Profiling is not enabled for this job."; return; }
    note.textContent = j.t.length ? j.t.length + " samples" + (running ? " (live)" : "")
                                  : "No system metrics yet: the agent uploads them every few seconds while the job runs.";
    if (!j.t.length) return;
    groups.forEach(function (g) {
      var p = plots[g.id];
      if (!p) {
        var fig = document.createElement("figure");
        fig.className = "chart";
        fig.id = g.id;
        fig.setAttribute("role", "group");
        fig.setAttribute("aria-label", g.title + " over time");
        var h = document.createElement("h3");
        h.textContent = g.title;
        fig.appendChild(h);
        var area = document.createElement("div");
        fig.appendChild(area);
        var cap = document.createElement("figcaption");
        cap.className = "hint";
        fig.appendChild(cap);
        box.appendChild(fig);
        p = plots[g.id] = { fig: fig, area: area, cap: cap, u: null };
      }
      if (g.gpu && !j.gpus) {
        p.cap.textContent = "No GPU on this host.";
        return;
      }
      p.cap.textContent = g.labels.map(function (l, i) {
        return l + ": " + num(last(j[g.keys[i]]));
      }).join(", ");
      if (!haveUplot) {
        p.area.textContent = "Charts need uPlot (run scripts/install-deps.sh and rebuild).";
        return;
      }
      var data = [j.t].concat(g.keys.map(function (k) { return j[k]; }));
      var width = Math.max(300, p.fig.clientWidth - 16);
      if (!p.u) {
        var series = [{ label: "Time (UTC)", value: "{YYYY}-{MM}-{DD} {HH}:{mm}:{ss}" }];
        g.keys.forEach(function (k, i) {
          series.push({ label: g.labels[i], stroke: g.colors[i], width: 2,
                        value: function (u, v) { return num(v); } });
        });
        p.u = new window.uPlot({
          width: width, height: 200, series: series, scales: { x: { time: true } },
          axes: [{ label: "time", stroke: "#1b1f24" }, { label: g.title, stroke: "#1b1f24" }],
          tzDate: function (ts) { return window.uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"); }
        }, data, p.area);
      } else {
        p.u.setData(data);
      }
      /* a short run still gets a readable time axis */
      var lo = j.t[0], hi = j.t[j.t.length - 1];
      if (hi - lo < 60) p.u.setScale("x", { min: lo - 30, max: hi + 30 });
    });
  }

  window.addEventListener("resize", function () {
    Object.keys(plots).forEach(function (k) {
      var p = plots[k];
      if (p.u) p.u.setSize({ width: Math.max(300, p.fig.clientWidth - 16), height: 200 });
    });
  });

  function poll() {
    fetch(feed, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { return r.json().then(function (j) { return [r.status, j]; }); })
      .then(function (res) {
        if (res[0] !== 200) {
          box.textContent = (res[1].__type || "Error") + ": " + (res[1].message || "");
          return;
        }
        draw(res[1]);
        box.setAttribute("data-samples", String(res[1].t ? res[1].t.length : 0));
        if (running) setTimeout(poll, 2000);
      })
      .catch(function () { if (running) setTimeout(poll, 5000); });
  }
  poll();
})();
