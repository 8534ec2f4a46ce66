// Carriers: each carrier platform (protocol, base URL, budget, enabled) with the health the
// workers publish, an editor whose credential inputs are the chosen protocol's fields (write-
// only: blank on edit, and a blank field keeps its stored value), enable/disable and a
// connection test. Admin keys only see the controls. Under the table, each carrier's call budget
// against its cards' demand (budget.js).
(function () {
  'use strict';
  const h = CMP.h, t = I18N.t;
  // CarrierProtocol::credential_fields, protocol by protocol.
  const FIELDS = {
    'cmp-json': [], onelink: ['appid', 'password'], 'ctcc-5gcmp': ['app_key', 'secret'],
    'control-center': ['username', 'api_key'], '1nce': ['client_id', 'client_secret'],
    emnify: ['application_token'],
  };
  const PROTOCOLS = Object.keys(FIELDS);
  const LIMITS = ['rate_limit_per_sec', 'max_concurrent', 'batch_size', 'timeout_ms'];
  let editing = null; // null: none; {}: a new carrier; a carrier: editing it
  let tested = {}; // carrier id -> the last test answer shown

  const errorsOf = function (x) {
    const list = (x.data && x.data.errors) || [];
    return list.length ? list.map(function (e) { return e.pointer + ': ' + e.message; }).join(' · ') : CMP.problem(x);
  };
  const budget = function (l) {
    return [(l.rate_limit_per_sec ? I18N.num(l.rate_limit_per_sec) + '/s' : '∞/s'),
      (l.max_concurrent ? I18N.num(l.max_concurrent) : '∞') + ' ' + t('in_flight'),
      t('batch') + ' ' + I18N.num(l.batch_size), I18N.num(l.timeout_ms) + ' ms'].join(' · ');
  };
  const health = function (c) {
    const hl = c.health;
    if (!hl) return h('span', { class: 'muted', 'data-health': c.carrier_id }, t(c.enabled ? 'health_unknown' : 'disabled'));
    const cls = hl.state === 'ok' ? 'ok' : (hl.state === 'unknown' || hl.state === 'disabled' ? 'muted' : 'bad');
    return h('div', { 'data-health': c.carrier_id },
      h('span', { class: cls }, t('health_' + hl.state)),
      hl.last_error && hl.state !== 'ok' ? h('div', { class: 'muted' }, (hl.last_error_kind || '') + ': ' + hl.last_error,
        ' (', CMP.time(hl.last_error_at), ')') : null,
      h('div', { class: 'muted' }, t('last_ok') + ' ', CMP.time(hl.last_ok_at)));
  };
  const testResult = function (id) {
    const r = tested[id];
    if (!r) return null;
    return h('div', { class: r.ok ? 'ok' : 'bad', 'data-test-result': id },
      (r.ok ? t('test_ok') : t('test_failed') + ' (' + r.outcome + '): ' + r.message) + ' · ' + I18N.num(r.elapsed_ms) + ' ms');
  };

  function editor(c) {
    const isNew = c.carrier_id === undefined;
    const msg = h('p', { class: 'field-error', id: 'carrier-error' });
    const creds = h('div', { class: 'row', id: 'carrier-credentials' });
    const limit = function (name) {
      const v = c.limits ? c.limits[name] : '';
      return h('label', null, t(name) + ' ', h('input', { name: name, type: 'number', min: 0, value: v, size: 8,
        placeholder: t('default_value') }));
    };
    const protocol = h('select', { name: 'protocol', class: 'f', 'aria-label': 'protocol' }, PROTOCOLS.map(function (p) {
      return h('option', { value: p, selected: (c.protocol || 'onelink') === p }, p);
    }));
    const showCredentials = function () {
      const fields = FIELDS[protocol.value] || [];
      const keep = !isNew && protocol.value === c.protocol;
      const inputs = fields.length === 0 ? [h('span', { class: 'muted' }, t('no_credentials'))]
        : fields.map(function (f) {
          return h('label', null, f + ' ', h('input', { name: 'cred_' + f, type: 'password', autocomplete: 'new-password',
            'data-credential': f, placeholder: keep ? t('unchanged') : '', size: 18 }));
        });
      creds.replaceChildren.apply(creds, [t('credentials') + ':'].concat(inputs));
    };
    protocol.addEventListener('change', showCredentials);
    const form = h('form', { id: 'carrier-form', onsubmit: async function (e) {
      e.preventDefault();
      const fields = FIELDS[protocol.value] || [];
      const credentials = {};
      let any = false;
      fields.forEach(function (f) { const v = form['cred_' + f].value; credentials[f] = v; if (v !== '') any = true; });
      const body = { name: form.name.value.trim(), protocol: protocol.value, base_url: form.base_url.value.trim(),
        enabled: form.enabled.checked };
      // A blank limit takes the protocol's default.
      LIMITS.forEach(function (n) { const v = form[n].value.trim(); if (v !== '') body[n] = Number(v); });
      // Blank on edit with the same protocol: the stored credentials are kept.
      if (isNew || any || protocol.value !== c.protocol) body.credentials = credentials;
      let x;
      if (isNew) {
        body.carrier_id = Number(form.carrier_id.value);
        x = await CMP.api('POST', '/carriers', body);
      } else {
        x = await CMP.api('PUT', '/carriers/' + c.carrier_id, body);
      }
      if (x.status >= 300) { msg.textContent = errorsOf(x); return; }
      editing = null;
      CMP.route();
    } },
    h('div', { class: 'row' },
      isNew ? h('label', null, t('carrier_id') + ' ', h('input', { name: 'carrier_id', type: 'number', min: 1, required: true, size: 6 }))
        : h('span', null, t('carrier_id') + ' #' + c.carrier_id),
      h('label', null, t('name') + ' ', h('input', { name: 'name', value: c.name || '', required: true })),
      h('label', null, t('protocol') + ' ', protocol),
      h('label', null, h('input', { name: 'enabled', type: 'checkbox', checked: c.enabled !== false }), ' ' + t('enabled'))),
    h('div', { class: 'row' },
      h('label', null, t('base_url') + ' ', h('input', { name: 'base_url', value: c.base_url || '', required: true, size: 50 }))),
    creds,
    h('div', { class: 'row' }, t('budget') + ':', LIMITS.map(limit)),
    h('div', { class: 'row' },
      h('button', { class: 'act', type: 'submit', 'data-action': 'carrier-save' }, t('save')),
      h('button', { class: 'act', type: 'button', onclick: function () { editing = null; CMP.route(); } }, t('cancel'))),
    msg);
    showCredentials();
    return CMP.panel(isNew ? t('new_carrier') : t('edit') + ' #' + c.carrier_id, form);
  }

  async function render() {
    const r = await CMP.get('/carriers?page_size=500');
    if (r.status !== 200) return CMP.na(t('carriers'));
    const admin = CMP.can('admin');
    const cols = [
      ['#', function (c) { return String(c.carrier_id); }],
      [t('name'), function (c) { return c.name; }],
      [t('protocol'), function (c) { return c.protocol; }],
      [t('base_url'), function (c) { return h('code', null, c.base_url); }],
      [t('enabled'), function (c) { return h('span', { class: c.enabled ? 'ok' : 'muted', 'data-enabled': c.carrier_id }, t(c.enabled ? 'yes' : 'no')); }],
      [t('health'), health],
      [t('budget'), function (c) { return budget(c.limits); }],
      [t('credentials'), function (c) { return c.credential_fields.length ? c.credential_fields.join(', ') : '–'; }],
    ];
    if (admin) {
      cols.push([t('actions'), function (c) {
        return [
          h('button', { class: 'act', type: 'button', 'data-action': 'carrier-toggle-' + c.carrier_id, onclick: async function () {
            const x = await CMP.api('PATCH', '/carriers/' + c.carrier_id + '/status', { enabled: !c.enabled });
            if (x.status >= 300) CMP.showError(CMP.problem(x)); else CMP.route();
          } }, t(c.enabled ? 'disable' : 'enable')),
          h('button', { class: 'act', type: 'button', 'data-action': 'carrier-edit-' + c.carrier_id,
            onclick: function () { editing = c; CMP.route(); } }, t('edit')),
          h('button', { class: 'act', type: 'button', 'data-action': 'carrier-test-' + c.carrier_id, onclick: async function (e) {
            e.target.disabled = true;
            e.target.textContent = t('testing');
            const x = await CMP.api('POST', '/carriers/' + c.carrier_id + '/test');
            if (x.status !== 200) { CMP.showError(CMP.problem(x)); e.target.disabled = false; return; }
            tested[c.carrier_id] = x.data;
            CMP.route();
          } }, t('test_connection')),
          testResult(c.carrier_id),
        ];
      }]);
    }
    return h('div', null, h('h1', null, t('carriers')),
      admin && !editing ? h('p', null, h('button', { class: 'act', type: 'button', 'data-action': 'carrier-new',
        onclick: function () { editing = {}; CMP.route(); } }, t('new_carrier'))) : null,
      admin && editing ? editor(editing) : null,
      CMP.panel(null, CMP.table(cols, r.data.items)),
      h('p', { class: 'muted' }, t('carriers_note')),
      await CMP.carrierBudget());
  }

  CMP.pages.carriers = { render: render };
})();
