// The carriers' call budgets (GET /carriers/budget, computed every minute by a worker): one
// panel per carrier with calls/s used and allowed, cards per call, the demand, and per task
// type and interval the cards scheduled and the round achievable at the budget against the
// interval, highlighted when the round exceeds it. The carriers page shows it under its table.
(function () {
  'use strict';
  const h = CMP.h, t = I18N.t;
  const rate = function (v) { return v === null || v === undefined ? '∞' : I18N.num(v, 2); };
  const secs = I18N.secs;

  function panel(c) {
    const over = c.enabled && c.round_ratio > 1;
    const used = c.allowed_calls_per_sec ? Math.min(100, 100 * c.used_calls_per_sec / c.allowed_calls_per_sec) : 0;
    const rows = CMP.table([
      [t('task_type'), function (r) { return r.task_type; }],
      [t('cards'), function (r) { return I18N.num(r.cards); }, true],
      [t('cards_per_call'), function (r) { return I18N.num(r.cards_per_call); }, true],
      [t('demand'), function (r) { return rate(r.demand_calls_per_sec) + '/s'; }, true],
      [t('interval'), function (r) { return secs(r.interval_secs); }, true],
      [t('round_time'), function (r) {
        return h('span', { class: r.over ? 'bad' : 'ok', 'data-round': c.carrier_id + ':' + r.task_type + ':' + r.interval_secs,
          'data-over': r.over ? '1' : '0' }, secs(r.round_secs));
      }, true],
    ], c.tasks);
    return CMP.panel('#' + c.carrier_id + ' ' + c.name + ' (' + c.protocol + ')',
      h('div', { class: 'row', 'data-budget': c.carrier_id },
        h('span', { 'data-budget-used': c.carrier_id }, t('budget_used') + ' ' + rate(c.used_calls_per_sec) + ' / ' +
          rate(c.allowed_calls_per_sec) + ' ' + t('calls_per_sec')),
        c.allowed_calls_per_sec ? h('div', { class: 'bar', title: Math.round(used) + '%' }, h('div', { 'width%': used })) : null,
        h('span', null, t('batch') + ' ' + I18N.num(c.batch_size)),
        h('span', { class: over ? 'bad' : null, 'data-budget-demand': c.carrier_id }, t('demand') + ' ' +
          rate(c.demand_calls_per_sec) + ' ' + t('calls_per_sec') + ' · ' + t('round_ratio') + ' ×' + rate(c.round_ratio)),
        c.enabled ? null : h('span', { class: 'muted' }, t('disabled'))),
      rows);
  }

  // The panels, or a note when no worker computed the figures lately.
  CMP.carrierBudget = async function () {
    const r = await CMP.get('/carriers/budget');
    if (r.status !== 200) return CMP.na(t('carrier_budget'));
    const b = r.data;
    if (!b.computed_at) return CMP.panel(t('carrier_budget'), h('p', { class: 'muted', 'data-budget-none': '1' }, t('budget_none')));
    return h('div', { id: 'carrier-budget' }, h('h2', null, t('carrier_budget')),
      h('p', { class: 'muted' }, t('budget_note') + ' ', CMP.time(b.computed_at)),
      b.carriers.map(panel));
  };
})();
