// Alerts: the rules (created, edited, enabled or disabled and deleted by admin keys through
// /polling-alert-rules; other keys see no control), the firings and their history.
(function () {
  'use strict';
  const h = CMP.h, t = I18N.t;
  const METRICS = ['due_backlog', 'oldest_due_age', 'failure_rate', 'gateway_error_rate',
    'gateway_throttle_rate', 'stops_per_minute', 'queue_depth', 'initializer_failed', 'carrier_round_ratio'];
  const TYPES = ['', 'realname', 'carddata', 'package', 'protect'];
  const REASONS = ['', 'not_realname', 'no_package', 'traffic_exhausted', 'protect', 'manual'];
  const OPERATORS = ['>', '>=', '<', '<='];
  let editing = null; // null: none; {}: a new rule; a rule: editing it
  let secret = null; // the webhook secret of the rule just created (shown once)

  const select = function (name, value, options) {
    return h('select', { name: name, class: 'f', 'aria-label': name }, options.map(function (o) {
      return h('option', { value: o, selected: (value || '') === o }, o || '–');
    }));
  };
  // A threshold as typed: a JSON number when it reads as one, else the text, for the API to
  // refuse with its own message.
  const figure = function (text) {
    const v = text.trim();
    return v !== '' && Number.isFinite(Number(v)) ? Number(v) : v;
  };
  // The editable part of a rule (the API's AlertRuleInput).
  const input = function (r) {
    return { name: r.name, metric: r.metric, task_type: r.task_type || null, stop_reason: r.stop_reason || null,
      operator: r.operator, threshold: r.threshold, window_secs: r.window_secs, enabled: r.enabled,
      webhook_url: r.webhook_url || null, cooldown_secs: r.cooldown_secs };
  };
  const errorsOf = function (x) {
    const list = (x.data && x.data.errors) || [];
    return list.length ? list.map(function (e) { return e.pointer + ': ' + e.message; }).join(' · ') : CMP.problem(x);
  };

  function editor(r) {
    const msg = h('p', { class: 'field-error', id: 'rule-error' });
    const form = h('form', { id: 'rule-form', class: 'rule', onsubmit: async function (e) {
      e.preventDefault();
      const body = { name: form.name.value.trim(), metric: form.metric.value, task_type: form.task_type.value || null,
        stop_reason: form.stop_reason.value || null, operator: form.operator.value,
        threshold: figure(form.threshold.value), window_secs: Number(form.window_secs.value),
        cooldown_secs: Number(form.cooldown_secs.value), enabled: form.enabled.checked,
        webhook_url: form.webhook_url.value.trim() || null };
      const x = r.id ? await CMP.api('PUT', '/polling-alert-rules/' + r.id, body)
        : await CMP.api('POST', '/polling-alert-rules', body);
      if (x.status >= 300) { msg.textContent = errorsOf(x); return; }
      secret = r.id ? null : { id: x.data.id, value: x.data.webhook_secret };
      editing = null;
      CMP.route();
    } },
    h('div', { class: 'row' },
      h('label', null, t('name'), h('input', { name: 'name', value: r.name || '', required: true })),
      h('label', null, t('metric'), select('metric', r.metric || 'due_backlog', METRICS)),
      h('label', null, t('task_type'), select('task_type', r.task_type, TYPES)),
      h('label', null, t('stop_reason'), select('stop_reason', r.stop_reason, REASONS))),
    h('div', { class: 'row' },
      h('label', null, t('operator'), select('operator', r.operator || '>', OPERATORS)),
      h('label', null, t('threshold'), h('input', { name: 'threshold', value: r.threshold === undefined ? '' : r.threshold, required: true, size: 8 })),
      h('label', null, t('window'), h('input', { name: 'window_secs', type: 'number', value: r.window_secs || 300 })),
      h('label', null, t('cooldown'), h('input', { name: 'cooldown_secs', type: 'number', value: r.cooldown_secs === undefined ? 600 : r.cooldown_secs })),
      h('label', null, h('input', { name: 'enabled', type: 'checkbox', checked: r.enabled !== false }), t('enabled'))),
    h('div', { class: 'row' },
      h('label', null, t('webhook'), h('input', { name: 'webhook_url', value: r.webhook_url || '', size: 50 }))),
    h('div', { class: 'row' },
      h('button', { class: 'act', type: 'submit', 'data-action': 'rule-save' }, t('save')),
      h('button', { class: 'act', type: 'button', 'data-action': 'rule-cancel',
        onclick: function () { editing = null; CMP.route(); } }, t('cancel'))), msg);
    return CMP.panel(r.id ? t('edit') + ' #' + r.id : t('new_rule'), form);
  }

  function controls(r) {
    const act = function (label, action, f, danger) {
      return h('button', { class: 'act' + (danger ? ' danger' : ''), type: 'button', 'data-action': action + '-' + r.id,
        onclick: f }, label);
    };
    return [
      act(t('edit'), 'rule-edit', function () { editing = r; secret = null; CMP.route(); }),
      act(t(r.enabled ? 'disable' : 'enable'), 'rule-toggle', async function () {
        const body = input(r);
        body.enabled = !r.enabled;
        const x = await CMP.api('PUT', '/polling-alert-rules/' + r.id, body);
        if (x.status >= 300) CMP.showError(errorsOf(x)); else CMP.route();
      }),
      act(t('delete'), 'rule-delete', async function () {
        if (!window.confirm(t('confirm_delete'))) return;
        const x = await CMP.api('DELETE', '/polling-alert-rules/' + r.id);
        if (x.status >= 300) CMP.showError(CMP.problem(x)); else CMP.route();
      }, true),
    ];
  }

  async function alerts() {
    const [rules, hist] = await Promise.all([CMP.get('/polling-alert-rules?page_size=100'),
      CMP.get('/polling-alert-history?page_size=100')]);
    const out = h('div', null, h('h1', null, t('alerts')));
    if (rules.status !== 200) { out.appendChild(CMP.na(t('alerts'))); return out; }
    const admin = CMP.can('admin');
    const names = {};
    rules.data.items.forEach(function (r) { names[r.id] = r.name; });
    if (admin && secret) {
      out.appendChild(CMP.panel(null, h('p', { id: 'rule-secret' }, t('saved') + ' #' + secret.id + ' · ' +
        t('secret_once') + ' ', h('span', { class: 'secret' }, secret.value))));
    }
    if (admin && editing) out.appendChild(editor(editing));
    const cols = [
      ['#', function (r) { return String(r.id); }],
      [t('name'), function (r) { return h('span', { 'data-rule': r.id }, r.name); }],
      [t('metric'), function (r) { return r.metric + (r.task_type ? ' · ' + r.task_type : '') + (r.stop_reason ? ' · ' + r.stop_reason : ''); }],
      [t('threshold'), function (r) { return h('span', { 'data-threshold': r.id }, r.operator + ' ' + r.threshold); }],
      [t('window'), function (r) { return I18N.num(r.window_secs); }, true],
      [t('enabled'), function (r) { return h('span', { 'data-enabled': r.id }, t(r.enabled ? 'yes' : 'no')); }],
    ];
    if (admin) cols.push(['', controls]);
    const newRule = admin && !editing ? h('button', { class: 'act', type: 'button', 'data-action': 'rule-new',
      onclick: function () { editing = {}; secret = null; CMP.route(); } }, t('new_rule')) : null;
    out.appendChild(CMP.panel(t('rules'), newRule, CMP.table(cols, rules.data.items)));
    if (hist.status === 200) {
      out.appendChild(CMP.panel(t('history'), CMP.table([
        [t('name'), function (a) { return names[a.rule_id] || '#' + a.rule_id; }],
        [t('value'), function (a) { return a.value; }, true],
        [t('fired_at'), function (a) { return I18N.date(a.fired_at); }],
        [t('resolved_at'), function (a) { return a.resolved_at ? I18N.date(a.resolved_at) : h('span', { class: 'bad' }, t('firing')); }],
        [t('notified'), function (a) { return t(a.notified ? 'yes' : 'no') + (a.notify_error ? ' · ' + a.notify_error : ''); }],
      ], hist.data.items)));
    }
    return out;
  }

  CMP.pages.alerts = {
    render: alerts,
    // A form being filled is never replaced under the user.
    refresh: async function () {
      if (editing) return;
      const node = await alerts();
      if (CMP.current && CMP.current.page === CMP.pages.alerts && !editing) {
        document.getElementById('main').replaceChildren(node);
      }
    },
  };
})();
