// Configs: the list in matching order, enable/disable, and an editor whose Save stays
// disabled until a dry run of the exact form content has reported what saving would change.
(function () {
  'use strict';
  const h = CMP.h, t = I18N.t;
  const TYPES = ['realname', 'carddata', 'package', 'protect'];
  let editing = null; // null: none; {}: a new config; a config: editing it

  function intervals(c) {
    return TYPES.map(function (ty) {
      const v = c[ty + '_interval_secs'];
      return ty + ' ' + (v ? I18N.num(v) : '–');
    }).join(' · ');
  }

  function body(form) {
    const num = function (n) { const v = form[n].value.trim(); return v === '' ? null : Number(v); };
    const b = { name: form.name.value.trim(), priority: num('priority') || 0, enabled: form.enabled.checked,
      card_condition: form.card_condition.value || null, card_category: form.card_category.value || null,
      carrier_id: num('carrier_id') };
    TYPES.forEach(function (ty) { b[ty + '_interval_secs'] = num(ty); });
    return b;
  }

  function select(name, value, options) {
    return h('select', { name: name, class: 'f', 'aria-label': name }, options.map(function (o) {
      return h('option', { value: o, selected: (value || '') === o }, o || '*');
    }));
  }

  function editor(c) {
    const result = h('div', { id: 'dry-result' }, h('p', { class: 'muted' }, t('dry_first')));
    const save = h('button', { class: 'act', type: 'button', disabled: true, 'data-action': 'save' }, t('save'));
    let tried = null;
    const form = h('form', { id: 'config-form', oninput: function () { save.disabled = true; } },
      h('div', { class: 'row' },
        h('label', null, t('name') + ' ', h('input', { name: 'name', value: c.name || '', required: true })),
        h('label', null, t('priority') + ' ', h('input', { name: 'priority', type: 'number', value: c.priority || 0 })),
        h('label', null, h('input', { name: 'enabled', type: 'checkbox', checked: c.enabled !== false }), ' ' + t('enabled'))),
      h('div', { class: 'row' },
        h('label', null, t('condition') + ' ', select('card_condition', c.card_condition,
          ['', 'not_realname', 'realname', 'online', 'stopped'])),
        h('label', null, t('category') + ' ', select('card_category', c.card_category, ['', 'normal', 'industry'])),
        h('label', null, t('carrier') + ' ', h('input', { name: 'carrier_id', type: 'number', value: c.carrier_id || '' }))),
      h('div', { class: 'row' }, t('intervals') + ':', TYPES.map(function (ty) {
        return h('label', null, ty + ' ', h('input', { name: ty, type: 'number', min: 1, value: c[ty + '_interval_secs'] || '' }));
      })));
    const dry = h('button', { class: 'act', type: 'button', 'data-action': 'dry-run', onclick: async function () {
      tried = body(form);
      const r = await CMP.api('POST', '/polling-configs/dry-run', { id: c.id, config: tried });
      if (r.status !== 200) { result.replaceChildren(h('p', { class: 'bad' }, CMP.problem(r))); return; }
      const d = r.data;
      result.replaceChildren(h('div', { class: 'grid' },
        CMP.stat(t('dry_polled'), I18N.num(d.polled_cards), 'dry_polled'),
        CMP.stat(t('dry_match'), I18N.num(d.would_match), 'dry_match'),
        CMP.stat(t('dry_interval'), I18N.num(d.would_change_interval), 'dry_interval'),
        CMP.stat(t('dry_queues'), I18N.num(d.would_change_queues), 'dry_queues'),
        CMP.stat(t('dry_new'), I18N.num(d.newly_matched), 'dry_new'),
        CMP.stat(t('dry_unmatched'), I18N.num(d.newly_unmatched), 'dry_unmatched')));
      save.disabled = false;
    } }, t('dry_run'));
    save.addEventListener('click', async function () {
      const r = c.id ? await CMP.api('PUT', '/polling-configs/' + c.id, tried)
        : await CMP.api('POST', '/polling-configs', tried);
      if (r.status >= 300) { result.replaceChildren(h('p', { class: 'bad' }, CMP.problem(r))); return; }
      editing = null;
      CMP.route();
    });
    const cancel = h('button', { class: 'act', type: 'button', onclick: function () { editing = null; CMP.route(); } }, t('cancel'));
    return CMP.panel(c.id ? t('edit') + ' #' + c.id : t('new_config'), form, h('div', { class: 'row' }, dry, save, cancel), result);
  }

  async function render() {
    const r = await CMP.get('/polling-configs?page_size=100');
    if (r.status !== 200) return CMP.na(t('configs'));
    const admin = CMP.can('admin');
    const toggle = function (c) {
      return h('button', { class: 'act', type: 'button', 'data-action': 'toggle-' + c.id, onclick: async function () {
        const x = await CMP.api('PATCH', '/polling-configs/' + c.id + '/status', { enabled: !c.enabled });
        if (x.status >= 300) CMP.showError(CMP.problem(x)); else CMP.route();
      } }, t(c.enabled ? 'disable' : 'enable'));
    };
    const cols = [
      ['#', function (c) { return String(c.id); }],
      [t('name'), function (c) { return c.name; }],
      [t('priority'), function (c) { return I18N.num(c.priority); }, true],
      [t('enabled'), function (c) { return h('span', { class: c.enabled ? 'ok' : 'muted' }, t(c.enabled ? 'yes' : 'no')); }],
      [t('condition'), function (c) { return [c.card_condition || '*', c.card_category || '*', c.carrier_id || '*'].join(' · '); }],
      [t('intervals'), intervals],
    ];
    if (admin) {
      cols.push([t('actions'), function (c) {
        return [toggle(c), h('button', { class: 'act', type: 'button', 'data-action': 'edit-' + c.id,
          onclick: function () { editing = c; CMP.route(); } }, t('edit'))];
      }]);
    }
    return h('div', null, h('h1', null, t('configs')),
      admin && !editing ? h('p', null, h('button', { class: 'act', type: 'button', 'data-action': 'new-config',
        onclick: function () { editing = {}; CMP.route(); } }, t('new_config'))) : null,
      admin && editing ? editor(editing) : null,
      CMP.panel(null, CMP.table(cols, r.data.items)));
  }

  CMP.pages.configs = { render: render };
})();
