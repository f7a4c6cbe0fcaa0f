// The views of the run (issue 25): draws what perfexpert computed (the JSON object
// #views-data); computes nothing about the trace itself.
(function () {
  'use strict';
  var el = document.getElementById('views-data');
  if (!el) { return; }
  var D = JSON.parse(el.textContent);
  var NR = D.rows.length;
  function $(id) { return document.getElementById(id); }
  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c];
    });
  }
  function fmt(s) {
    var a = Math.abs(s);
    if (a >= 1) { return s.toFixed(3) + ' s'; }
    if (a >= 1e-3) { return (s * 1e3).toFixed(3) + ' ms'; }
    return (s * 1e6).toFixed(3) + ' µs';
  }
  function fmtB(b) {
    if (b >= 1e9) { return (b / 1e9).toFixed(2) + ' GB'; }
    if (b >= 1e6) { return (b / 1e6).toFixed(2) + ' MB'; }
    if (b >= 1e3) { return (b / 1e3).toFixed(2) + ' kB'; }
    return b.toFixed(0) + ' B';
  }
  var RGB = D.classes.map(function (c) {
    return [1, 3, 5].map(function (i) { return parseInt(c.color.substr(i, 2), 16); });
  });
  function rgba(k, a) { var c = RGB[k] || [200, 200, 200]; return 'rgba(' + c[0] + ',' + c[1] + ',' + c[2] + ',' + a + ')'; }

  // ---- orderings: display slot of each row, position of each rank ----
  var orderIx = 0, disp = [], slot = [], rankPos = [];
  function reorder() {
    var o = D.orders[orderIx] ? D.orders[orderIx].ranks : [];
    rankPos = [];
    o.forEach(function (r, i) { rankPos[r] = i; });
    disp = D.rows.map(function (_, i) { return i; });
    disp.sort(function (a, b) {
      var ra = D.rows[a].rank, rb = D.rows[b].rank;
      var pa = ra == null ? 1e9 : rankPos[ra], pb = rb == null ? 1e9 : rankPos[rb];
      return (pa - pb) || (a - b);
    });
    slot = [];
    disp.forEach(function (r, i) { slot[r] = i; });
  }
  reorder();

  // ---- the levels: run-length coded rows (cell, call path + 1, run) ----
  var cache = {};
  function runs(k, r) {
    var key = k + '/' + r;
    if (cache[key]) { return cache[key]; }
    var s = atob(D.levels[k].rows[r]), out = [], i = 0, col = 0;
    function vi() {
      var v = 0, m = 1, b;
      do { b = s.charCodeAt(i++); v += (b & 127) * m; m *= 128; } while (b & 128);
      return v;
    }
    while (i < s.length) {
      var cell = s.charCodeAt(i++), cn = vi(), n = vi();
      out.push(col, n, cell, cn);
      col += n;
    }
    cache[key] = out;
    return out;
  }

  // ---- the timeline ----
  var cv = $('tl-canvas'), tip = $('tip');
  var v0 = 0, v1 = D.dur > 0 ? D.dur : 1, marks = null, LW = 96, AX = 20, G = null, lev = -1;
  function geom() {
    var w = cv.clientWidth || 1000, rh = Math.max(3, Math.min(20, Math.floor(340 / Math.max(NR, 1))));
    return {w: w, rh: rh, h: rh * NR + AX + 4, pw: w - LW - 8};
  }
  function X(t) { return LW + (t - v0) / (v1 - v0) * G.pw; }
  function pickLevel() {
    for (var k = 0; k < D.levels.length; k++) {
      if (D.levels[k].cols * (v1 - v0) / D.dur >= G.pw) { return k; }
    }
    return D.levels.length - 1;
  }
  function drawPieces(c) {
    D.pieces.forEach(function (p) {
      if (p[2] < v0 || p[1] > v1) { return; }
      var x = X(p[1]), w = Math.max(X(p[2]) - x, 0.6), y = slot[p[0]] * G.rh, end = x + w;
      p[5].forEach(function (wc) {
        c.fillStyle = rgba(wc[0], 1); c.fillRect(x, y, w * wc[1], G.rh - 1); x += w * wc[1];
      });
      c.fillStyle = rgba(p[4], 1); c.fillRect(x, y, Math.max(end - x, 0), G.rh - 1);
    });
  }
  function drawLevels(c) {
    lev = pickLevel();
    var L = D.levels[lev], cw = D.dur / L.cols, a = Math.floor(v0 / cw), b = Math.ceil(v1 / cw);
    for (var r = 0; r < NR; r++) {
      var rs = runs(lev, r), y = slot[r] * G.rh;
      for (var j = 0; j < rs.length; j += 4) {
        var s = rs[j], n = rs[j + 1], cell = rs[j + 2];
        if (s + n < a || s > b || cell === 0xF0) { continue; }
        c.fillStyle = rgba(cell >> 4, (0.25 + 0.75 * (cell & 15) / 15).toFixed(3));
        var x0 = X(s * cw);
        c.fillRect(x0, y, Math.max(X((s + n) * cw) - x0, 1), G.rh - 1);
      }
    }
  }
  function drawOverlays(c) {
    var mid = G.rh / 2;
    c.strokeStyle = 'rgba(0,0,0,0.55)'; c.lineWidth = 1; c.beginPath();
    D.msgs.forEach(function (m) {
      if (m[3] < v0 || m[2] > v1) { return; }
      c.moveTo(X(m[2]), slot[m[0]] * G.rh + mid); c.lineTo(X(m[3]), slot[m[1]] * G.rh + mid);
    });
    c.stroke();
    c.fillStyle = 'rgba(0,0,0,0.8)';
    D.colls.forEach(function (k) {
      if (k[0] < v0 || k[0] > v1) { return; }
      var x = X(k[0]);
      k[2].forEach(function (r) { c.fillRect(x - 1, slot[r] * G.rh, 2, G.rh - 1); });
    });
    if (!marks) { return; }
    c.strokeStyle = '#000'; c.lineWidth = 2; c.fillStyle = '#000'; c.textAlign = 'left';
    marks.forEach(function (m, i) {
      var x = X(m[1]), y = slot[m[0]] * G.rh + mid;
      c.beginPath(); c.arc(x, y, Math.max(5, mid), 0, 2 * Math.PI); c.stroke();
      c.fillText('#' + (i + 1), x + Math.max(7, mid + 2), y);
    });
  }
  function axis(c) {
    var y = NR * G.rh + 2;
    c.fillStyle = '#222'; c.fillRect(LW, y, G.pw, 1); c.textBaseline = 'top';
    for (var k = 0; k <= 4; k++) {
      var t = v0 + (v1 - v0) * k / 4;
      c.textAlign = k === 0 ? 'left' : (k === 4 ? 'right' : 'center');
      c.fillText(fmt(t), X(t), y + 4);
    }
  }
  function draw() {
    G = geom();
    var dpr = window.devicePixelRatio || 1;
    cv.style.height = G.h + 'px'; cv.width = G.w * dpr; cv.height = G.h * dpr;
    var c = cv.getContext('2d');
    c.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.clearRect(0, 0, G.w, G.h);
    c.font = '11px system-ui,sans-serif'; c.textAlign = 'right'; c.textBaseline = 'middle'; c.fillStyle = '#222';
    var every = Math.ceil(12 / G.rh);
    disp.forEach(function (r, i) { if (i % every === 0) { c.fillText(D.rows[r].label, LW - 4, i * G.rh + G.rh / 2); } });
    c.save(); c.beginPath(); c.rect(LW, 0, G.pw, NR * G.rh); c.clip();
    if (D.pieces.length) { drawPieces(c); } else { drawLevels(c); }
    c.font = '11px system-ui,sans-serif'; c.textBaseline = 'middle';
    drawOverlays(c);
    c.restore();
    axis(c);
    $('tl-range').textContent = fmt(v0) + ' – ' + fmt(v1) +
      (D.pieces.length ? '' : ' · zoom level ' + (lev + 1) + ' of ' + D.levels.length + ' (' + D.levels[lev].cols + ' columns in the run)');
  }
  function setView(a, b) {
    var min = Math.max(D.dur * 1e-7, 1e-9), span = Math.min(Math.max(b - a, min), D.dur || 1);
    a = Math.max(0, Math.min(a, (D.dur || 1) - span));
    v0 = a; v1 = a + span; draw();
  }
  function region(path) { return path ? path.split('/').pop() : '?'; }
  function hover(ev) {
    var rc = cv.getBoundingClientRect(), x = ev.clientX - rc.left, y = ev.clientY - rc.top;
    var i = Math.floor(y / G.rh);
    if (x < LW || i < 0 || i >= NR) { tip.style.display = 'none'; return; }
    var r = disp[i], t = v0 + (x - LW) / G.pw * (v1 - v0), html = '<b>' + esc(D.rows[r].label) + '</b><br>';
    if (D.pieces.length) {
      var p = null;
      for (var j = 0; j < D.pieces.length; j++) {
        var q = D.pieces[j];
        if (q[0] === r && q[1] <= t && t < q[2]) { p = q; break; }
      }
      if (!p) { tip.style.display = 'none'; return; }
      var cls = p[5].map(function (w) { return esc(D.classes[w[0]].name) + ' ' + (100 * w[1]).toFixed(0) + ' %'; });
      cls.push(esc(D.classes[p[4]].name));
      html += cls.join(', ') + '<br>region: ' + esc(region(D.cp[p[3]])) + '<br>call path: ' + esc(D.cp[p[3]] || '?') +
        '<br>start ' + fmt(p[1]) + ', duration ' + fmt(p[2] - p[1]);
    } else {
      var L = D.levels[lev], cw = D.dur / L.cols, col = Math.floor(t / cw), rs = runs(lev, r), hit = -1;
      for (var k = 0; k < rs.length; k += 4) { if (rs[k] <= col && col < rs[k] + rs[k + 1]) { hit = k; break; } }
      if (hit < 0 || rs[hit + 2] === 0xF0) { tip.style.display = 'none'; return; }
      var cell = rs[hit + 2], cn = rs[hit + 3];
      html += esc(D.classes[cell >> 4].name) + ' dominant (' + Math.round(100 * (cell & 15) / 15) + ' % of the column)' +
        '<br>region (longest piece): ' + esc(cn ? region(D.cp[cn - 1]) : '—') +
        '<br>call path: ' + esc(cn ? D.cp[cn - 1] || '?' : '—') +
        '<br>start ' + fmt(rs[hit] * cw) + ', duration ' + fmt(rs[hit + 1] * cw) +
        (rs[hit + 1] > 1 ? ' (' + rs[hit + 1] + ' columns alike)' : '');
    }
    tip.innerHTML = html; tip.style.display = 'block';
    tip.style.left = Math.min(x + 12, G.w - 300) + 'px'; tip.style.top = (y + 14) + 'px';
  }
  if (cv) {
    var drag = null;
    cv.addEventListener('mousedown', function (e) { drag = {x: e.clientX, a: v0, b: v1}; cv.style.cursor = 'grabbing'; });
    window.addEventListener('mouseup', function () { drag = null; cv.style.cursor = 'grab'; });
    cv.addEventListener('mousemove', function (e) {
      if (drag) {
        var dt = (e.clientX - drag.x) / G.pw * (drag.b - drag.a);
        setView(drag.a - dt, drag.b - dt);
      }
      hover(e);
    });
    cv.addEventListener('mouseleave', function () { tip.style.display = 'none'; });
    cv.addEventListener('wheel', function (e) {
      e.preventDefault();
      var rc = cv.getBoundingClientRect(), f = e.deltaY < 0 ? 0.8 : 1.25;
      var t = v0 + Math.max(0, e.clientX - rc.left - LW) / G.pw * (v1 - v0);
      setView(t - (t - v0) * f, t + (v1 - t) * f);
    }, {passive: false});
    document.querySelectorAll('button[data-z]').forEach(function (b) {
      b.addEventListener('click', function () {
        var s = v1 - v0, m = (v0 + v1) / 2, z = b.dataset.z;
        if (z === 'in') { setView(m - s / 4, m + s / 4); }
        if (z === 'out') { setView(m - s, m + s); }
        if (z === 'left') { setView(v0 - s / 4, v1 - s / 4); }
        if (z === 'right') { setView(v0 + s / 4, v1 + s / 4); }
        if (z === 'all') { marks = null; setView(0, D.dur); }
      });
    });
    // a finding's worst instances, marked and brought into view
    document.querySelectorAll('tr.f').forEach(function (row) {
      row.addEventListener('click', function () {
        marks = D.worst[+row.dataset.k] || null;
        if (!marks || !marks.length) { draw(); return; }
        var ts = marks.map(function (m) { return m[1]; });
        var a = Math.min.apply(null, ts), b = Math.max.apply(null, ts), pad = Math.max((b - a) * 0.1, D.dur * 0.02);
        setView(a - pad, b + pad);
      });
    });
    window.addEventListener('resize', draw);
    draw();
  }

  // ---- the animations ----
  var nF = D.win.length - 1, fr = 0, timer = null;
  var maxW = 0, maxT = 0, finalMax = 1;
  D.waits.forEach(function (f) { f.forEach(function (c) { maxW = Math.max(maxW, c[2]); }); });
  D.traffic.forEach(function (f) { f.forEach(function (c) { maxT = Math.max(maxT, c[2]); }); });
  if (D.kiviat.length) { finalMax = Math.max.apply(null, D.kiviat[D.kiviat.length - 1].concat([1])); }
  function heat(x) { // pale yellow → orange → dark red (sequential, colour-blind safe)
    x = Math.max(0, Math.min(1, x));
    var s = [[255, 255, 204], [253, 141, 60], [128, 0, 38]], i = x < 0.5 ? 0 : 1, f = x < 0.5 ? x * 2 : x * 2 - 1;
    return 'rgb(' + [0, 1, 2].map(function (k) { return Math.round(s[i][k] + (s[i + 1][k] - s[i][k]) * f); }).join(',') + ')';
  }
  function gain() { return (+$('an-gain').value) / 100; }
  function matrix(id, cells, max, fmtv) {
    var c = $(id).getContext('2d'), n = Math.max(D.ranks, 1), cs = 250 / n;
    c.fillStyle = '#fff'; c.fillRect(0, 0, 250, 250); c.strokeStyle = '#ccc'; c.strokeRect(0, 0, 250, 250);
    cells.forEach(function (x) {
      c.fillStyle = heat(0.15 + 0.85 * x[2] / (max * gain() || 1));
      c.fillRect(rankPos[x[1]] * cs, rankPos[x[0]] * cs, Math.max(cs, 1), Math.max(cs, 1));
    });
    var top = cells.slice().sort(function (a, b) { return b[2] - a[2]; }).slice(0, 5);
    $(id).setAttribute('aria-label', cells.length + ' rank pairs; largest: ' +
      top.map(function (x) { return x[0] + '→' + x[1] + ' ' + fmtv(x[2]); }).join(', '));
    return top;
  }
  function states() {
    var c = $('an-states').getContext('2d'), n = Math.max(NR, 1), cols = Math.ceil(Math.sqrt(n)), cs = 250 / cols;
    var st = D.states[fr] || [], count = {};
    c.clearRect(0, 0, 250, 250);
    c.font = '10px system-ui,sans-serif'; c.textAlign = 'center'; c.textBaseline = 'middle';
    disp.forEach(function (r, i) {
      var k = st[2 * r], pct = st[2 * r + 1], x = (i % cols) * cs, y = Math.floor(i / cols) * cs;
      if (k === 15 || k === undefined) { c.fillStyle = '#f4f4f4'; } else {
        c.fillStyle = rgba(k, (0.25 + 0.75 * pct / 100).toFixed(3));
        count[k] = (count[k] || 0) + 1;
      }
      c.fillRect(x + 1, y + 1, cs - 2, cs - 2);
      if (cs >= 26) { c.fillStyle = '#000'; c.fillText(D.rows[r].label.replace('rank ', ''), x + cs / 2, y + cs / 2); }
    });
    var parts = Object.keys(count).map(function (k) { return count[k] + ' × ' + D.classes[k].name; });
    $('an-states').setAttribute('aria-label', 'Process states: ' + parts.join(', '));
    return parts;
  }
  function kiviat() {
    var svg = $('an-kiviat'), cum = D.kiviat[fr] || [], K = D.nodes.length, cx = 125, cy = 125, R = 90;
    var nodes = D.nodes.map(function (n, i) {
      return {i: i, pos: Math.min.apply(null, n.ranks.map(function (r) { return rankPos[r]; }).concat([1e9]))};
    }).sort(function (a, b) { return a.pos - b.pos || a.i - b.i; });
    var s = '<title>Messages sent so far per node: ' + esc(nodes.map(function (n) {
      return D.nodes[n.i].name + ' ' + (cum[n.i] || 0);
    }).join(', ')) + '</title>', pts = [];
    if (K < 3) { // no ring to draw: one bar per node
      nodes.forEach(function (n, j) {
        var w = 200 * (cum[n.i] || 0) / finalMax, y = 40 + 60 * j;
        s += '<text x="20" y="' + (y - 6) + '">' + esc(D.nodes[n.i].name) + ': ' + (cum[n.i] || 0) + ' messages</text>' +
          '<rect x="20" y="' + y + '" width="200" height="18" fill="none" stroke="#ddd"/>' +
          '<rect x="20" y="' + y + '" width="' + w.toFixed(1) + '" height="18" fill="rgba(0,114,178,0.6)"/>';
      });
      svg.innerHTML = s;
      return;
    }
    nodes.forEach(function (n, j) {
      var a = 2 * Math.PI * j / Math.max(K, 1) - Math.PI / 2, x = cx + R * Math.cos(a), y = cy + R * Math.sin(a);
      var v = (cum[n.i] || 0) / finalMax;
      s += '<line x1="' + cx + '" y1="' + cy + '" x2="' + x.toFixed(1) + '" y2="' + y.toFixed(1) + '" stroke="#bbb"/>';
      if (K <= 24) {
        s += '<text x="' + (cx + (R + 14) * Math.cos(a)).toFixed(1) + '" y="' + (cy + (R + 14) * Math.sin(a) + 4).toFixed(1) +
          '" text-anchor="middle">' + esc(D.nodes[n.i].name) + '</text>';
      }
      pts.push((cx + R * v * Math.cos(a)).toFixed(1) + ',' + (cy + R * v * Math.sin(a)).toFixed(1));
    });
    [0.5, 1].forEach(function (f) { s += '<circle cx="' + cx + '" cy="' + cy + '" r="' + R * f + '" fill="none" stroke="#ddd"/>'; });
    s += '<polygon points="' + pts.join(' ') + '" fill="rgba(0,114,178,0.35)" stroke="#0072B2" stroke-width="2"/>';
    svg.innerHTML = s;
  }
  function render() {
    if (!$('an-states') || nF < 1) { return; }
    fr = Math.max(0, Math.min(fr, nF - 1));
    $('an-frame').value = fr;
    var parts = states();
    var tw = matrix('an-waits', D.waits[fr] || [], maxW, fmt), tt = matrix('an-traffic', D.traffic[fr] || [], maxT, fmtB);
    kiviat();
    $('an-label').textContent = 'frame ' + (fr + 1) + ' of ' + nF + ': ' + fmt(D.win[fr]) + ' – ' + fmt(D.win[fr + 1]) +
      (D.winPhase[fr] ? ', phase ' + D.winPhase[fr] : '');
    var cum = D.kiviat[fr] || [];
    $('an-text').innerHTML = '<p>Processes: ' + esc(parts.join(', ') || 'none') + '.</p><p>Largest waits: ' +
      esc(tw.map(function (x) { return 'rank ' + x[0] + ' for rank ' + x[1] + ' ' + fmt(x[2]); }).join('; ') || 'none') +
      '.</p><p>Largest traffic: ' + esc(tt.map(function (x) { return 'rank ' + x[0] + ' → ' + x[1] + ' ' + fmtB(x[2]) + ' in ' + x[3] + ' messages'; }).join('; ') || 'none') +
      '.</p><p>Messages sent so far per node: ' + esc(D.nodes.map(function (n, i) { return n.name + ' ' + (cum[i] || 0); }).join(', ')) + '.</p>';
  }
  function stop() {
    if (timer) { clearInterval(timer); timer = null; }
    $('an-play').textContent = 'play'; $('an-gain').disabled = false;
  }
  function play() {
    if (timer) { stop(); return; }
    if (fr >= nF - 1) { fr = 0; }
    $('an-play').textContent = 'pause'; $('an-gain').disabled = true;
    timer = setInterval(function () {
      if (fr >= nF - 1) { stop(); return; }
      fr++; render();
    }, 1000 / (+$('an-speed').value));
  }
  if ($('an-play')) {
    $('an-play').addEventListener('click', play);
    $('an-step').addEventListener('click', function () { stop(); fr++; render(); });
    $('an-back').addEventListener('click', function () { stop(); fr--; render(); });
    $('an-speed').addEventListener('change', function () { if (timer) { stop(); play(); } });
    $('an-frame').addEventListener('input', function () { stop(); fr = +$('an-frame').value; render(); });
    $('an-gain').addEventListener('input', render);
    render();
  }
  // the wait-time and traffic heat maps follow the same order, so that blocks appear
  function heatmaps() {
    var o = D.orders[orderIx] ? D.orders[orderIx].ranks : [];
    function pos(r) { return rankPos[r] == null ? r : rankPos[r]; }
    document.querySelectorAll('svg.hm').forEach(function (svg) {
      var off = +svg.getAttribute('data-off'), cs = +svg.getAttribute('data-cs');
      svg.querySelectorAll('rect[data-r]').forEach(function (c) {
        c.setAttribute('x', (off + cs * pos(+c.getAttribute('data-c'))).toFixed(1));
        c.setAttribute('y', (off + cs * pos(+c.getAttribute('data-r'))).toFixed(1));
      });
      svg.querySelectorAll('text.hl').forEach(function (t) {
        var k = +t.getAttribute('data-k');
        t.textContent = o[k] == null ? k : o[k];
      });
    });
  }
  document.querySelectorAll('select.order').forEach(function (s) {
    s.addEventListener('change', function () {
      orderIx = +s.value;
      document.querySelectorAll('select.order').forEach(function (o) { o.value = s.value; });
      reorder();
      heatmaps();
      if (cv) { draw(); }
      render();
    });
  });
  // ?frame=N, ?order=K, ?finding=K, ?play=1 (tools/screenshots.sh, tests/html_views.rs): start
  // at a frame, in an order, with a finding clicked, playing
  var q = location.search;
  var fm = q.match(/[?&]frame=(\d+)/);
  if (fm) { fr = +fm[1]; render(); }
  var om = q.match(/[?&]order=(\d)/);
  if (om) { var s0 = document.querySelector('select.order'); if (s0) { s0.value = om[1]; s0.dispatchEvent(new Event('change')); } }
  var fk = q.match(/[?&]finding=(\d+)/);
  if (fk) { var tr = document.querySelector('tr.f[data-k="' + fk[1] + '"]'); if (tr) { tr.click(); } }
  if (/[?&]play=1/.test(q) && $('an-play')) { $('an-play').click(); }
  // when the views were drawn, in ms since the page began loading (README's open times)
  document.documentElement.setAttribute('data-views-ms', Math.round(performance.now()));
})();
