// The card page's chart of the month: the carrier's month total by hour (GET
// /cards/{id}/usage, the current month of the deployment's calendar) against the limits of the
// active packages covering the card (from the explain answer), over the whole month.
(function () {
  'use strict';
  const h = CMP.h, t = I18N.t;

  CMP.usagePanel = async function (id, ex) {
    const r = await CMP.get('/cards/' + id + '/usage');
    // 404: a server without the route (the card itself was just read).
    if (r.status === 404) return CMP.na(t('usage_chart'));
    if (r.status !== 200) return CMP.panel(t('usage_chart'), h('p', { class: 'bad' }, CMP.problem(r)));
    const u = r.data;
    const points = u.hours.map(function (x) { return [new Date(x.hour), Number(x.month_total_mb)]; });
    // The limits of the active packages (those counted this month), valid now or not.
    const hlines = ex.packages.filter(function (p) { return p.status === 'active' && p.limit_mb !== null; })
      .map(function (p) {
        return { y: Number(p.limit_mb), label: t('limit_of') + ' #' + p.id + ': ' + I18N.num(Number(p.limit_mb), 2) +
          ' MB' + (p.valid ? '' : ' (' + t('not_valid_now') + ')') };
      });
    const title = t('usage_chart') + ' · ' + u.month + ' · ' + u.timezone;
    const body = points.length === 0 && hlines.length === 0
      ? h('p', { class: 'na' }, t('no_usage'))
      : CMP.lineChart([{ label: t('month_total'), points: points }], {
        title: title, x0: new Date(u.from), x1: new Date(u.to), hlines: hlines, keepEmpty: true, id: 'usage-chart',
      });
    return h('section', { class: 'panel', id: 'usage-panel', 'data-hours': u.hours.length },
      h('h2', null, t('usage_chart')), body,
      points.length === 0 ? h('p', { class: 'muted' }, t('no_usage')) : null,
      h('p', { class: 'muted' }, t('usage_note')));
  };
})();
