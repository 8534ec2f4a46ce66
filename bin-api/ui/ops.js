// Concurrency (current and max per type; admins set the max), Cleanup (configs, preview, run,
// progress, logs) and Audit (the operators' writes; admin keys). Alerts are in alerts.js.
(function () {
  'use strict';
  const h = CMP.h, t = I18N.t;
  const replaceIf = function (page, node) {
    if (CMP.current && CMP.current.page === page) document.getElementById('main').replaceChildren(node);
  };

  async function concurrency() {
    const r = await CMP.get('/polling-concurrency');
    const out = h('div', null, h('h1', null, t('concurrency')));
    if (r.status !== 200) { out.appendChild(CMP.na(t('concurrency'))); return out; }
    const cols = [
      [t('task_type'), function (c) { return c.task_type; }],
      [t('current'), function (c) { return I18N.num(c.current); }, true],
      [t('max'), function (c) { return I18N.num(c.max); }, true],
      [t('default_max'), function (c) { return I18N.num(c.default_max); }, true],
    ];
    if (CMP.can('admin')) {
      cols.push([t('set'), function (c) {
        const input = h('input', { type: 'number', min: 1, value: c.max, 'aria-label': c.task_type });
        return [input, h('button', { class: 'act', type: 'button', onclick: async function () {
          const x = await CMP.api('PUT', '/polling-concurrency/' + c.task_type, { max: Number(input.value) });
          if (x.status >= 300) CMP.showError(CMP.problem(x)); else CMP.route();
        } }, t('set'))];
      }]);
    }
    out.appendChild(CMP.panel(null, CMP.table(cols, r.data)));
    return out;
  }
  // The editable inputs would be lost on a refresh: only viewers and operators get one.
  CMP.pages.concurrency = { render: concurrency, refresh: async function () {
    if (!CMP.can('admin')) replaceIf(CMP.pages.concurrency, await concurrency());
  } };

  async function cleanup() {
    const [configs, preview, progress, logs] = await Promise.all([CMP.get('/data-cleanup-configs?page_size=100'),
      CMP.get('/data-cleanup/preview'), CMP.get('/data-cleanup/progress'), CMP.get('/data-cleanup/logs?page_size=50')]);
    const out = h('div', null, h('h1', null, t('cleanup')));
    if (configs.status !== 200) { out.appendChild(CMP.na(t('cleanup'))); return out; }
    out.appendChild(CMP.panel(t('configs'), CMP.table([
      [t('table'), function (c) { return c.table_name; }],
      [t('retention_days'), function (c) { return I18N.num(c.retention_days); }, true],
      [t('enabled'), function (c) { return t(c.enabled ? 'yes' : 'no'); }],
    ], configs.data.items)));
    if (preview.status === 200) {
      const run = CMP.can('admin') ? h('button', { class: 'act danger', type: 'button', 'data-action': 'cleanup-run',
        onclick: async function () {
          const x = await CMP.api('POST', '/data-cleanup/run', {});
          if (x.status >= 300) CMP.showError(CMP.problem(x)); else CMP.route();
        } }, t('run_cleanup')) : null;
      out.appendChild(CMP.panel(t('preview'), CMP.table([
        [t('table'), function (p) { return p.table_name; }],
        [t('rows'), function (p) { return (p.estimated ? '≈ ' : '') + I18N.num(p.rows); }, true],
        ['cutoff', function (p) { return I18N.date(p.cutoff); }],
        ['', function (p) { return p.note || p.partitions.join(', '); }],
      ], preview.data), run));
    }
    const logTable = function (rows) {
      return CMP.table([
        [t('table'), function (l) { return l.table_name; }],
        [t('status'), function (l) { return l.status + (l.error ? ': ' + l.error : ''); }],
        [t('rows_deleted'), function (l) { return I18N.num(l.rows_deleted); }, true],
        [t('started'), function (l) { return I18N.date(l.started_at); }],
        [t('finished'), function (l) { return I18N.date(l.finished_at); }],
      ], rows);
    };
    if (progress.status === 200) out.appendChild(CMP.panel(t('progress'), logTable(progress.data)));
    if (logs.status === 200) out.appendChild(CMP.panel(t('logs'), logTable(logs.data.items)));
    return out;
  }
  // Refresh only the cheap progress route: the preview counts rows.
  CMP.pages.cleanup = { render: cleanup };

  async function audit() {
    const out = h('div', null, h('h1', null, t('audit')));
    if (!CMP.can('admin')) { out.appendChild(CMP.panel(null, h('p', { class: 'muted' }, t('admin_only')))); return out; }
    const [r, logs] = await Promise.all([CMP.get('/admin-audit-log?page_size=100'),
      CMP.get('/polling-manual-trigger/logs?page_size=50')]);
    out.appendChild(r.status !== 200 ? CMP.na(t('audit')) : CMP.panel(null, CMP.table([
      [t('when'), function (a) { return I18N.date(a.created_at); }],
      [t('who'), function (a) { return a.key_name || '–'; }],
      [t('method'), function (a) { return a.method; }],
      [t('path'), function (a) { return a.path; }],
      [t('status'), function (a) { return h('span', { class: a.status >= 400 ? 'bad' : 'ok' }, String(a.status)); }, true],
      [t('target'), function (a) { return h('pre', null, JSON.stringify(a.target)); }],
    ], r.data.items)));
    if (logs.status === 200) {
      out.appendChild(CMP.panel(t('trigger_logs'), CMP.table([
        [t('when'), function (l) { return I18N.date(l.created_at); }],
        [t('who'), function (l) { return l.who; }],
        [t('scope'), function (l) { return h('pre', null, JSON.stringify(l.scope)); }],
        [t('task_type'), function (l) { return l.task_types.join(', '); }],
        [t('count'), function (l) { return I18N.num(l.count); }, true],
      ], logs.data.items)));
    }
    return out;
  }
  CMP.pages.audit = { render: audit };
})();
