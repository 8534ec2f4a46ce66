// Overview (fleet, per task type rates, backlog, initializer, firing alerts, history charts in
// the deployment's zone)
// and Queues (shard x task type heat map, manual list lengths). Every call is a monitoring
// route; a route answering 404 (not on this server) shows a "not available" panel.
(function () {
  'use strict';
  const h = CMP.h, t = I18N.t;
  let range = '1h';
  const RANGES = ['1h', '24h', '30d', '13mo'];

  function fleet(stats) {
    const c = stats.cards;
    const stopped = Object.values(c.stopped_by_reason || {}).reduce(function (a, b) { return a + b; }, 0);
    return h('div', null,
      h('div', { class: 'grid' },
        CMP.stat(t('total_cards'), I18N.num(c.cards), 'cards'),
        CMP.stat(t('polling_enabled'), I18N.num(c.polling_enabled), 'polling_enabled'),
        CMP.stat(t('online'), I18N.num(Math.max(0, c.cards - stopped)), 'online'),
        CMP.stat(t('stopped'), I18N.num(stopped), 'stopped'),
        Object.keys(c.stopped_by_reason || {}).map(function (r) {
          return CMP.stat(t('stopped') + ': ' + CMP.reasonName(r), I18N.num(c.stopped_by_reason[r]), 'stopped_' + r);
        })),
      h('p', { class: 'muted', id: 'refreshed' }, t('source') + ': ' + c.source + ' · ' + t('refreshed') + ' ',
        CMP.time(stats.generated_at)));
  }

  function tasks(stats) {
    return CMP.panel(t('task_type'), CMP.table([
      [t('task_type'), function (r) { return r.task_type; }],
      [t('polls_per_sec'), function (r) { return I18N.num(r.polls_per_minute / 60, 2); }, true],
      [t('failure_rate'), function (r) { return I18N.pct(r.failure_rate); }, true],
      [t('due_backlog'), function (r) { return I18N.num(r.due_backlog); }, true],
      [t('oldest_due'), function (r) { return I18N.secs(r.oldest_due_age_secs); }, true],
      [t('decisive'), function (r) { return I18N.num(r.decisive_waiting); }, true],
      [t('depth'), function (r) { return I18N.num(r.total_depth); }, true],
    ], stats.task_types), (stats.warnings || []).map(function (w) { return h('p', { class: 'warn' }, w); }));
  }

  function initializer(i) {
    const bar = h('div', { class: 'bar' }, h('div', { 'width%': (100 * (i.fraction || 0)).toFixed(1) }));
    return CMP.panel(t('initializer'), h('p', null, i.status + ' · ' + I18N.num(i.processed) + ' / ' +
      I18N.num(i.total) + ' ' + t('processed') + ' (' + I18N.pct(i.fraction) + ')'), bar);
  }

  async function alerts() {
    const [hist, rules] = await Promise.all([
      CMP.get('/polling-alert-history?page_size=100'), CMP.get('/polling-alert-rules?page_size=100')]);
    if (hist.status !== 200) return CMP.na(t('firing_alerts'));
    const names = {};
    if (rules.status === 200) rules.data.items.forEach(function (r) { names[r.id] = r.name; });
    const firing = hist.data.items.filter(function (a) { return !a.resolved_at; });
    return CMP.panel(t('firing_alerts') + ' (' + I18N.num(firing.length) + ')', firing.length === 0
      ? h('p', { class: 'ok' }, t('none'))
      : CMP.table([
        [t('name'), function (a) { return names[a.rule_id] || '#' + a.rule_id; }],
        [t('value'), function (a) { return a.value; }, true],
        [t('fired_at'), function (a) { return CMP.time(a.fired_at); }],
      ], firing));
  }

  // The history of the fleet (`all`: gateway calls, errors, throttles) and of each task type
  // (polls, failures, due backlog, oldest due age): five reads of the sampled history, at most
  // 1,440 points each. The samples are written once a minute, so they are read again only
  // when the range changes or HISTORY_MS has passed, not on every refresh.
  const HISTORY_MS = 30000;
  let cache = null; // {range, at, answers}
  async function historyData() {
    if (cache && cache.range === range && Date.now() - cache.at < HISTORY_MS) return cache.answers;
    const scopes = ['all'].concat(TYPES);
    const answers = await Promise.all(scopes.map(function (s) {
      return CMP.get('/polling-stats/history?scope=' + s + '&range=' + range);
    }));
    if (answers.every(function (a) { return a.status === 200; })) cache = { range: range, at: Date.now(), answers: answers };
    return answers;
  }
  const TYPES = ['realname', 'carddata', 'package', 'protect'];

  async function history() {
    const answers = await historyData();
    const tabs = h('div', { class: 'row tabs' }, RANGES.map(function (x) {
      return h('button', { type: 'button', class: x === range ? 'on' : null, 'data-range': x,
        onclick: function () { range = x; refresh(); } }, t('range_' + x));
    }));
    if (answers.some(function (a) { return a.status !== 200; })) return CMP.na(t('history'));
    const all = answers[0].data, types = answers.slice(1).map(function (a) { return a.data; });
    const per = ' (' + t('per_' + all.resolution) + ')';
    const series = function (data, label, f) {
      return { label: label, points: data.points.map(function (p) { return [new Date(p.bucket_at), f(p)]; }) };
    };
    const byType = function (f) {
      return types.map(function (d, i) { return series(d, TYPES[i], f); });
    };
    // Failures of every type summed per bucket.
    const failures = {};
    types.forEach(function (d) {
      d.points.forEach(function (p) { failures[p.bucket_at] = (failures[p.bucket_at] || 0) + p.failures; });
    });
    const failSeries = { label: t('failures') + ' (' + t('all_types') + ')', points: Object.keys(failures).sort()
      .map(function (k) { return [new Date(k), failures[k]]; }) };
    // The range's span, from its first sample when the history is younger than the range.
    let first = +new Date(all.to);
    answers.forEach(function (a) { if (a.data.points.length) first = Math.min(first, +new Date(a.data.points[0].bucket_at)); });
    const span = { x0: new Date(Math.max(+new Date(all.from), first)), x1: new Date(all.to) };
    const chart = function (id, title, s) {
      return h('div', { 'data-chart': id }, CMP.lineChart(s, Object.assign({ title: title, id: 'chart-' + id }, span)));
    };
    return CMP.panel(t('history'), tabs, h('div', { class: 'charts' },
      chart('polls', t('polls_by_type') + per, byType(function (p) { return p.polls; }).concat([failSeries])),
      chart('gateway', t('gateway_chart') + per, [
        series(all, t('gateway_calls'), function (p) { return p.gateway_calls; }),
        series(all, t('gateway_errors'), function (p) { return p.gateway_errors; }),
        series(all, t('gateway_throttles'), function (p) { return p.gateway_throttles; })]),
      chart('backlog', t('backlog_by_type'), byType(function (p) { return p.due_backlog; })),
      chart('oldest', t('oldest_chart'), byType(function (p) { return p.oldest_due_age_secs; }))));
  }

  async function build() {
    const stats = await CMP.get('/polling-stats');
    const out = h('div', null, h('h1', null, t('overview')));
    if (stats.status === 200) {
      out.appendChild(fleet(stats.data));
      out.appendChild(tasks(stats.data));
      out.appendChild(initializer(stats.data.initializer));
    } else {
      // Without the monitoring routes: the one figure the card list gives (not refreshed).
      const cards = await CMP.get('/cards?page_size=1');
      out.appendChild(h('p', { class: 'na', 'data-na': '1' }, t('fleet_from_cards')));
      out.appendChild(h('div', { class: 'grid' }, CMP.stat(t('total_cards'),
        cards.status === 200 ? I18N.num(cards.data.total) : '–', 'cards')));
      fallback = true;
    }
    out.appendChild(await alerts());
    out.appendChild(await history());
    return out;
  }
  let fallback = false;

  async function refresh() {
    if (fallback) return;
    const node = await build();
    if (CMP.current && CMP.current.page === CMP.pages.overview) {
      document.getElementById('main').replaceChildren(node);
    }
  }

  CMP.pages.overview = { render: function () { fallback = false; return build(); }, refresh: refresh };

  async function queues() {
    const [q, manual] = await Promise.all([CMP.get('/polling-stats/queues'),
      CMP.get('/polling-manual-trigger/status')]);
    const out = h('div', null, h('h1', null, t('queues')));
    if (q.status === 200) {
      const types = q.data;
      const shards = types.length ? types[0].shards.map(function (s) { return s.shard; }) : [];
      let max = 0;
      types.forEach(function (ty) { ty.shards.forEach(function (s) { max = Math.max(max, s.due); }); });
      const cell = function (s) {
        const td = h('td', { title: I18N.secs(s.oldest_due_age_secs) + (s.error ? ' · ' + s.error : '') },
          I18N.num(s.due) + ' / ' + I18N.num(s.depth));
        td.style.background = s.error ? '#fde8e6' : CMP.heat(s.due, max);
        if (s.due > max * 0.6 && max > 0) td.style.color = '#fff';
        return td;
      };
      out.appendChild(CMP.panel(t('queues'), h('p', { class: 'muted' }, t('heat_legend')),
        h('table', { class: 'heat' },
          h('thead', null, h('tr', null, h('th', null, t('task_type')), shards.map(function (s) {
            return h('th', null, t('shard') + ' ' + s);
          }), h('th', null, t('due') + ' / ' + t('depth')))),
          h('tbody', null, types.map(function (ty) {
            return h('tr', null, h('th', null, ty.task_type), ty.shards.map(cell),
              h('td', null, I18N.num(ty.summary.due) + ' / ' + I18N.num(ty.summary.depth)));
          })))));
    } else {
      out.appendChild(CMP.na(t('queues')));
    }
    out.appendChild(manual.status === 200 ? CMP.panel(t('manual_lists'), CMP.table([
      [t('task_type'), function (r) { return r.task_type; }],
      [t('waiting'), function (r) { return I18N.num(r.waiting); }, true],
    ], manual.data)) : CMP.na(t('manual_lists')));
    return out;
  }

  CMP.pages.queues = {
    render: queues,
    refresh: async function () {
      const node = await queues();
      if (CMP.current && CMP.current.page === CMP.pages.queues) document.getElementById('main').replaceChildren(node);
    },
  };
})();
