// Small SVG charts drawn by hand (no library): a line chart of several series over time, and
// the colour scale of the queue heat map.
(function () {
  'use strict';
  const h = CMP.h;
  const COLORS = ['#1f6feb', '#c0362c', '#2a7d3f', '#b26b00', '#7b3fb2', '#0a8f99'];
  const LIMIT_COLORS = ['#c0362c', '#b26b00', '#7b3fb2', '#0a8f99'];
  const DOTS_UP_TO = 90;

  // series: [{label, points: [[Date, number], ...]}]; opts: {title, x0, x1 (the time domain,
  // default the points'), hlines: [{label, y}] (dashed levels, e.g. package limits), id}.
  // Times are labelled in the chosen locale and the deployment's zone.
  CMP.lineChart = function (series, opts) {
    opts = opts || {};
    const W = 800, H = 180, L = 52, R = 8, T = 8, B = 22;
    const hlines = opts.hlines || [];
    const all = [];
    series.forEach(function (s) { s.points.forEach(function (p) { all.push(p); }); });
    if (all.length === 0 && !opts.keepEmpty) {
      return h('div', null, opts.title ? h('div', { class: 'chart-title' }, opts.title) : null,
        h('p', { class: 'na' }, opts.empty || I18N.t('no_history')));
    }
    const xs = all.map(function (p) { return +p[0]; });
    let x0 = opts.x0 !== undefined ? +opts.x0 : Math.min.apply(null, xs);
    let x1 = opts.x1 !== undefined ? +opts.x1 : Math.max.apply(null, xs);
    if (x1 === x0) { x0 -= 60000; x1 += 60000; }
    const ymax = Math.max(1, Math.max.apply(null, all.map(function (p) { return p[1]; })
      .concat(hlines.map(function (l) { return l.y * 1.05; }))));
    const sx = function (x) { return L + ((+x - x0) / (x1 - x0)) * (W - L - R); };
    const sy = function (y) { return T + (1 - y / ymax) * (H - T - B); };
    const svg = h('svg', { class: 'chart', viewBox: '0 0 ' + W + ' ' + H, preserveAspectRatio: 'none',
      role: 'img', 'aria-label': opts.title || '', id: opts.id });
    [0, 0.5, 1].forEach(function (f) {
      const y = sy(ymax * f);
      svg.appendChild(h('line', { x1: L, x2: W - R, y1: y, y2: y, stroke: '#e4e8ee' }));
      svg.appendChild(h('text', { x: L - 4, y: y + 3, 'text-anchor': 'end' }, I18N.num(ymax * f, 1)));
    });
    const span = x1 - x0;
    const fmt = I18N.dateFormat(span > 40 * 86400e3
      ? { year: 'numeric', month: 'short' }
      : span > 2 * 86400e3 ? { month: 'short', day: 'numeric' } : { hour: '2-digit', minute: '2-digit' });
    [0, 0.25, 0.5, 0.75, 1].forEach(function (f) {
      const x = x0 + f * span;
      svg.appendChild(h('text', { x: sx(x), y: H - 6, 'text-anchor': f === 0 ? 'start' : f === 1 ? 'end' : 'middle' },
        fmt.format(new Date(x))));
    });
    hlines.forEach(function (l, i) {
      const y = sy(l.y);
      svg.appendChild(h('line', { x1: L, x2: W - R, y1: y, y2: y, stroke: LIMIT_COLORS[i % LIMIT_COLORS.length],
        'stroke-dasharray': '6 4', 'stroke-width': 1.4, 'data-limit': l.y }));
    });
    series.forEach(function (s, i) {
      const d = s.points.map(function (p) { return sx(p[0]).toFixed(1) + ',' + sy(p[1]).toFixed(1); }).join(' ');
      svg.appendChild(h('polyline', { points: d, fill: 'none', stroke: COLORS[i % COLORS.length],
        'stroke-width': 1.6, 'data-series': s.label, 'data-points': s.points.length }));
      // Few points: each one marked, so a lone sample is seen too.
      if (s.points.length <= DOTS_UP_TO) {
        s.points.forEach(function (p) {
          svg.appendChild(h('circle', { cx: sx(p[0]).toFixed(1), cy: sy(p[1]).toFixed(1), r: 2.2,
            fill: COLORS[i % COLORS.length] }));
        });
      }
    });
    const box = h('div', null);
    if (opts.title) box.appendChild(h('div', { class: 'chart-title' }, opts.title));
    box.appendChild(svg);
    const swatch = function (color, dashed) {
      const sw = h('i', null);
      sw.style.background = color;
      if (dashed) sw.style.opacity = '0.6';
      return sw;
    };
    box.appendChild(h('div', { class: 'legend' }, series.map(function (s, i) {
      return h('span', null, swatch(COLORS[i % COLORS.length]), s.label);
    }), hlines.map(function (l, i) {
      return h('span', null, swatch(LIMIT_COLORS[i % LIMIT_COLORS.length], true), l.label);
    })));
    return box;
  };

  // The heat map cell colour: white at 0, deep blue at max.
  CMP.heat = function (v, max) {
    const f = max > 0 ? Math.min(1, v / max) : 0;
    const mix = function (a, b) { return Math.round(a + (b - a) * f); };
    return 'rgb(' + mix(255, 31) + ',' + mix(255, 111) + ',' + mix(255, 235) + ')';
  };
})();
