// The exported page's own script and style (html_view.cpp writes the data block they read).
#include "export/html_view_page.hpp"

namespace mhascope::export_detail {

// The page's script: draws from the data block, answers hover and clicks, and follows the
// address's #head=H&cell=R,C&query=Q (so a link, or a test, can say what is pointed at).
const char* const kHtmlViewScript = R"JS(
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('mhascope-data').textContent);
  var lut = [];
  for (var i = 0; i < 256; ++i) lut.push('#' + D.lut.substr(6 * i, 6));
  var H = D.heads.length, R = D.rows, C = D.cols;
  var state = { head: 0, cell: null, query: null, shown: [], preview: null };
  for (var h = 0; h < H; ++h) state.shown.push(true);
  var headColors = [];
  for (var h2 = 0; h2 < H; ++h2) headColors.push('hsl(' + Math.round(360 * h2 / Math.max(1, H)) + ',70%,42%)');
  function $(id) { return document.getElementById(id); }
  function code(h, i) { return D.heads[h].index.substr(2 * i, 2); }
  function colorOf(h, i) {
    var k = code(h, i);
    if (k === '--') return '#' + D.blocked;
    if (k === 'nn') return '#' + D.nan;
    return lut[parseInt(k, 16)];
  }
  function draw(canvas, h, cell, labels) {
    var left = labels ? D.labelWidth : 0, bottom = labels ? D.labelWidth : 0;
    canvas.width = left + C * cell + 2;
    canvas.height = R * cell + bottom + 2;
    var g = canvas.getContext('2d');
    g.fillStyle = '#ffffff';
    g.fillRect(0, 0, canvas.width, canvas.height);
    for (var r = 0; r < R; ++r) {
      for (var c = 0; c < C; ++c) {
        var i = r * C + c, k = code(h, i);
        g.fillStyle = colorOf(h, i);
        g.fillRect(left + 1 + c * cell, 1 + r * cell, cell, cell);
        if (k === '--' && cell >= 8) {
          g.strokeStyle = '#' + D.blockedMark;
          g.lineWidth = 1.5;
          g.beginPath();
          g.moveTo(left + 1 + c * cell + 2, 1 + r * cell + 2);
          g.lineTo(left + 1 + (c + 1) * cell - 2, 1 + (r + 1) * cell - 2);
          g.moveTo(left + 1 + (c + 1) * cell - 2, 1 + r * cell + 2);
          g.lineTo(left + 1 + c * cell + 2, 1 + (r + 1) * cell - 2);
          g.stroke();
        } else if (k === 'nn' && cell >= 8) {
          g.fillStyle = '#' + D.nanMark;  // the dark dot every view draws on a NaN cell
          g.beginPath();
          g.arc(left + 1 + (c + 0.5) * cell, 1 + (r + 0.5) * cell, Math.max(1.5, cell * 0.18), 0, 2 * Math.PI);
          g.fill();
        }
      }
    }
    if (state.cell && labels && state.cell[0] < R && state.cell[1] < C) {
      g.strokeStyle = '#ff2d2d';
      g.lineWidth = 2;
      g.strokeRect(left + 1 + state.cell[1] * cell, 1 + state.cell[0] * cell, cell, cell);
    }
    if (!labels) return;
    g.fillStyle = '#1a1a1a';
    g.font = Math.max(9, Math.min(13, cell - 2)) + 'px sans-serif';
    var stride = Math.max(1, Math.ceil(12 / cell));
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    for (var r2 = 0; r2 < R; r2 += stride) g.fillText(D.rowLabels[r2].slice(0, 16), left - 4, 1 + (r2 + 0.5) * cell);
    for (var c2 = 0; c2 < C; c2 += stride) {
      g.save();
      g.translate(left + 1 + (c2 + 0.5) * cell, R * cell + 6);
      g.rotate(-Math.PI / 2);
      g.fillText(D.colLabels[c2].slice(0, 16), 0, 0);
      g.restore();
    }
  }
  function mainCell() {
    var box = $('main-box').clientWidth || 640;
    var fit = Math.floor((box - D.labelWidth - 4) / C);
    return Math.max(2, Math.min(56, fit, Math.floor(640 / Math.max(R, 1))));
  }
  function describe(r, c, h) {
    var i = r * C + c, k = code(h, i), v = D.heads[h].values[i];
    var where = D.heads[h].name + ' · ' + D.rowAxis + ' ' + (r * D.block) + ' «' + D.rowLabels[r] + '» · ' +
                D.colAxis + ' ' + (c * D.block) + ' «' + D.colLabels[c] + '»';
    if (D.block > 1) where += ' (a block of ' + D.block + ' × ' + D.block + ')';
    if (k === '--') return where + ': blocked by the mask';
    return where + ': ' + v;
  }
  function renderMain() {
    var cv = $('main'), shown = state.preview !== null && state.preview !== undefined ? state.preview : state.head;
    draw(cv, shown, mainCell(), true);
    $('main-title').textContent = D.heads[shown].name + (shown !== state.head ? ' (preview: click to keep)' : '');
    $('main-note').textContent = D.heads[shown].note;
    $('readout').textContent = state.cell ? describe(state.cell[0], state.cell[1], shown) : D.hint;
    // Where the cells are on the page (left, top, CSS px per canvas px, cell, label width): a test
    // reads a screenshot's cells from it.
    var b = cv.getBoundingClientRect();
    document.body.setAttribute('data-cells', [b.left + window.scrollX, b.top + window.scrollY, b.width / cv.width,
                                              mainCell(), D.labelWidth].join(','));
    var thumbs = document.querySelectorAll('.thumb');
    for (var t = 0; t < thumbs.length; ++t) thumbs[t].classList.toggle('chosen', t === state.head);
  }
  function renderGrid() {
    var grid = $('grid');
    if (!grid || H < 2) return;
    grid.innerHTML = '';
    var cell = Math.max(1, Math.min(8, Math.floor((D.gridColumns > 0 ? 96 : 160) / Math.max(R, C))));
    var line = grid;
    for (var h = 0; h < H; ++h) {
      if (D.gridColumns > 0 && h % D.gridColumns === 0) {
        line = document.createElement('div');
        line.className = 'gridrow';
        var head = document.createElement('div');
        head.className = 'rowhead';
        head.textContent = D.rowHeadings[h / D.gridColumns] || '';
        line.appendChild(head);
        grid.appendChild(line);
      }
      var fig = document.createElement('figure');
      fig.className = 'thumb';
      var cv = document.createElement('canvas');
      draw(cv, h, cell, false);
      var cap = document.createElement('figcaption');
      cap.textContent = D.heads[h].name;
      fig.appendChild(cv);
      fig.appendChild(cap);
      if (D.heads[h].note) {
        var role = document.createElement('div');
        role.className = 'role';
        role.textContent = D.heads[h].note;
        fig.appendChild(role);
      }
      fig.title = 'Show ' + D.heads[h].name + ' large';
      fig.addEventListener('click', (function (hh) { return function () { state.head = hh; state.preview = null; say(); }; })(h));
      // Pointing at a thumbnail previews that head in the large view; leaving it shows the chosen one again.
      fig.addEventListener('mouseenter', (function (hh) { return function () { state.preview = hh; renderMain(); }; })(h));
      fig.addEventListener('mouseleave', function () { state.preview = null; renderMain(); });
      line.appendChild(fig);
    }
  }
  function renderHeadView() {
    var svg = $('headview');
    if (!svg) return;
    var ns = 'http://www.w3.org/2000/svg', rowH = 20, w = 600, gap = 170;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    svg.setAttribute('width', w);
    svg.setAttribute('height', Math.max(R, C) * rowH + 10);
    for (var h = 0; h < H; ++h) {
      if (!state.shown[h]) continue;
      for (var r = 0; r < R; ++r) {
        if (state.query !== null && state.query !== r) continue;
        for (var c = 0; c < C; ++c) {
          var k = code(h, r * C + c);
          if (k === '--' || k === 'nn') continue;
          var wgt = parseFloat(D.heads[h].values[r * C + c]);
          if (!(wgt > 0.005)) continue;
          var ln = document.createElementNS(ns, 'line');
          ln.setAttribute('x1', gap + 6); ln.setAttribute('y1', 14 + r * rowH);
          ln.setAttribute('x2', w - gap - 6); ln.setAttribute('y2', 14 + c * rowH);
          ln.setAttribute('stroke', headColors[h]);
          ln.setAttribute('stroke-width', 2);
          ln.setAttribute('stroke-opacity', Math.min(1, wgt).toFixed(3));
          svg.appendChild(ln);
        }
      }
    }
    function label(text, x, y, anchor, r) {
      var t = document.createElementNS(ns, 'text');
      t.setAttribute('x', x); t.setAttribute('y', y);
      t.setAttribute('text-anchor', anchor);
      t.textContent = text;
      if (r !== undefined) {
        t.setAttribute('class', 'query' + (state.query === r ? ' chosen' : ''));
        t.addEventListener('mouseenter', function () { state.query = r; renderHeadView(); });
        t.addEventListener('click', function () { state.query = state.query === r ? null : r; say(); });
      }
      svg.appendChild(t);
    }
    for (var r2 = 0; r2 < R; ++r2) label(D.rowLabels[r2], gap, 18 + r2 * rowH, 'end', r2);
    for (var c2 = 0; c2 < C; ++c2) label(D.colLabels[c2], w - gap, 18 + c2 * rowH, 'start');
  }
  function renderToggles() {
    var box = $('toggles');
    if (!box) return;
    box.innerHTML = '';
    for (var h = 0; h < H; ++h) {
      var lab = document.createElement('label');
      var cb = document.createElement('input');
      cb.type = 'checkbox';
      cb.checked = state.shown[h];
      cb.addEventListener('change', (function (hh) { return function (e) { state.shown[hh] = e.target.checked; renderHeadView(); }; })(h));
      lab.style.color = headColors[h];
      lab.appendChild(cb);
      lab.appendChild(document.createTextNode(' ' + D.heads[h].name));
      box.appendChild(lab);
    }
  }
  // The address holds what is pointed at, so the page can be linked (and tested) in that state.
  function say() {
    var parts = ['head=' + state.head];
    if (state.cell) parts.push('cell=' + state.cell[0] + ',' + state.cell[1]);
    if (state.query !== null) parts.push('query=' + state.query);
    if (D.frames.length) parts.push('frame=' + state.frame);
    history.replaceState(null, '', '#' + parts.join('&'));
    renderMain();
    renderHeadView();
  }
  function read() {
    var q = (location.hash || '').replace(/^#/, '').split('&');
    for (var i = 0; i < q.length; ++i) {
      var kv = q[i].split('='), v = kv[1] || '';
      if (kv[0] === 'head' && +v >= 0 && +v < H) state.head = +v;
      if (kv[0] === 'cell') {
        var rc = v.split(',');
        if (rc.length === 2 && +rc[0] >= 0 && +rc[0] < R && +rc[1] >= 0 && +rc[1] < C) state.cell = [+rc[0], +rc[1]];
      }
      if (kv[0] === 'query' && +v >= 0 && +v < R) state.query = +v;
      if (kv[0] === 'frame' && D.frames.length && +v >= 0 && +v < D.frames.length) state.frame = +v;
    }
  }
  // A timeline: the slider (and a click on a curve) picks the frame; the grid and the large view
  // show that step's heads, the curves mark its step.
  state.frame = 0;
  var palette = ['#4c72b0', '#dd8452', '#55a868', '#c44e52', '#8172b3', '#937860', '#da8bc3', '#8c8c8c'];
  function renderCurves() {
    var box = $('curves');
    if (!box || !D.curves.length) return;
    box.innerHTML = '';
    var panels = [];
    D.curves.forEach(function (c) { if (panels.indexOf(c.panel) < 0) panels.push(c.panel); });
    var step = D.frames[state.frame].step, ns = 'http://www.w3.org/2000/svg', W = 360, Hh = 150, pad = 34;
    panels.forEach(function (name) {
      var mine = D.curves.filter(function (c) { return c.panel === name; });
      var xs = [], ys = [];
      mine.forEach(function (c) { c.steps.forEach(function (x, i) { xs.push(x); if (c.values[i] !== null) ys.push(c.values[i]); }); });
      var x0 = Math.min.apply(null, xs), x1 = Math.max.apply(null, xs), y0 = Math.min(0, Math.min.apply(null, ys)), y1 = Math.max.apply(null, ys);
      if (x1 === x0) x1 = x0 + 1;
      if (!(y1 > y0)) y1 = y0 + 1;
      function X(x) { return pad + (W - pad - 8) * (x - x0) / (x1 - x0); }
      function Y(y) { return Hh - 20 - (Hh - 36) * (y - y0) / (y1 - y0); }
      var svg = document.createElementNS(ns, 'svg');
      svg.setAttribute('width', W); svg.setAttribute('height', Hh);
      svg.setAttribute('class', 'curve');
      function add(tag, attrs, text) {
        var e = document.createElementNS(ns, tag);
        for (var a in attrs) e.setAttribute(a, attrs[a]);
        if (text !== undefined) e.textContent = text;
        svg.appendChild(e);
        return e;
      }
      add('text', { x: pad, y: 11 }, name);
      add('line', { x1: pad, y1: Hh - 20, x2: W - 8, y2: Hh - 20, stroke: '#8c8c8c' });
      add('text', { x: 2, y: Y(y1) + 4 }, (+y1.toPrecision(3)).toString());
      add('text', { x: 2, y: Y(y0) + 4 }, (+y0.toPrecision(3)).toString());
      add('text', { x: pad, y: Hh - 6 }, String(x0));
      add('text', { x: W - 40, y: Hh - 6 }, String(x1));
      mine.forEach(function (c, ci) {
        var pts = [];
        c.steps.forEach(function (x, i) { if (c.values[i] !== null) pts.push(X(x).toFixed(1) + ',' + Y(c.values[i]).toFixed(1)); });
        add('polyline', { points: pts.join(' '), fill: 'none', stroke: palette[ci % palette.length], 'stroke-width': 1.6 });
        add('text', { x: W - 130, y: 24 + 12 * ci, fill: palette[ci % palette.length] }, c.name);
      });
      add('line', { x1: X(step), y1: 16, x2: X(step), y2: Hh - 20, stroke: '#ff2d2d', 'stroke-width': 1.2 });
      svg.addEventListener('click', function (e) {
        var b = svg.getBoundingClientRect(), x = x0 + (e.clientX - b.left - pad) / (W - pad - 8) * (x1 - x0), best = 0;
        D.frames.forEach(function (f, i) { if (Math.abs(f.step - x) < Math.abs(D.frames[best].step - x)) best = i; });
        setFrame(best);
      });
      box.appendChild(svg);
    });
  }
  function setFrame(f) {
    if (!D.frames.length) return;
    state.frame = Math.max(0, Math.min(D.frames.length - 1, f));
    D.heads = D.frames[state.frame].heads;
    $('step').value = state.frame;
    $('step-label').textContent = 'step ' + D.frames[state.frame].step + ' (' + (state.frame + 1) + ' of ' + D.frames.length + ')';
    renderGrid();
    renderCurves();
    say();
  }
  if (D.frames.length) {
    $('step').addEventListener('input', function (e) { setFrame(+e.target.value); });
    var timer = null;
    $('play').addEventListener('click', function () {
      if (timer) { clearInterval(timer); timer = null; $('play').textContent = 'Play'; return; }
      if (state.frame === D.frames.length - 1) setFrame(0);
      $('play').textContent = 'Pause';
      timer = setInterval(function () {
        if (state.frame >= D.frames.length - 1) { clearInterval(timer); timer = null; $('play').textContent = 'Play'; return; }
        setFrame(state.frame + 1);
      }, 400);
    });
  }
  var main = $('main');
  main.addEventListener('mousemove', function (e) {
    var cell = mainCell(), b = main.getBoundingClientRect();
    var x = (e.clientX - b.left) * main.width / b.width - D.labelWidth - 1, y = (e.clientY - b.top) * main.height / b.height - 1;
    var r = Math.floor(y / cell), c = Math.floor(x / cell);
    if (r < 0 || c < 0 || r >= R || c >= C) return;
    if (state.cell && state.cell[0] === r && state.cell[1] === c) return;
    state.cell = [r, c];
    say();
  });
  var bar = $('bar');
  if (bar) bar.style.background = 'linear-gradient(to right,' + lut.filter(function (x, i) { return i % 8 === 0 || i === 255; }).join(',') + ')';
  window.addEventListener('resize', renderMain);
  window.addEventListener('hashchange', function () { read(); if (D.frames.length) setFrame(state.frame); renderMain(); renderHeadView(); });
  read();
  if (D.frames.length) D.heads = D.frames[state.frame].heads;
  renderGrid();
  renderToggles();
  if (D.frames.length) setFrame(state.frame);
  renderMain();
  renderHeadView();
  document.body.setAttribute('data-ready', '1');
})();
)JS";

const char* const kHtmlViewStyle = R"CSS(
body { font: 14px/1.45 "DejaVu Sans", sans-serif; color: #1a1a1a; margin: 20px; max-width: 1400px; }
h1 { font-size: 20px; margin: 0 0 4px; }
.sub, .note, #readout { color: #595959; margin: 2px 0; }
#readout { min-height: 1.5em; color: #1a1a1a; font-variant-numeric: tabular-nums; }
.row { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
#main-box { flex: 1 1 560px; min-width: 320px; }
canvas { image-rendering: pixelated; max-width: 100%; }
#grid { display: flex; flex-wrap: wrap; gap: 10px; margin: 12px 0; }
.thumb { margin: 0; padding: 3px; border: 2px solid transparent; cursor: pointer; text-align: center; }
.thumb.chosen { border-color: #ff2d2d; }
.thumb figcaption { font-size: 12px; }
.gridrow { display: flex; gap: 8px; align-items: flex-start; width: 100%; }
.rowhead { width: 110px; flex: none; font-size: 12px; color: #595959; padding-top: 30px; }
.role { font-size: 11px; color: #595959; max-width: 130px; }
.bar { display: flex; align-items: center; gap: 8px; margin: 8px 0; }
#bar { width: 240px; height: 14px; border: 1px solid #8c8c8c; }
.swatch { display: inline-block; width: 12px; height: 12px; border: 1px solid #8c8c8c; vertical-align: middle; }
#headview text { font-size: 13px; cursor: default; }
#headview text.query { cursor: pointer; }
#headview text.chosen { font-weight: bold; }
#toggles label { margin-right: 10px; white-space: nowrap; }
.timeline { margin: 10px 0; display: flex; gap: 12px; align-items: center; }
#step { width: 420px; }
#curves { display: flex; flex-wrap: wrap; gap: 16px; }
#curves svg text { font-size: 11px; }
#curves svg text:not([fill]) { fill: #595959; }
)CSS";

}  // namespace mhascope::export_detail
