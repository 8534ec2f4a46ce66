// Cards: search by ICCID prefix, MSISDN, card id or device; the card page with the explain
// answer (sentence and evidence, rendered from its codes in the chosen language), the month's
// usage chart against the packages' limits, next due per task type, packages against their
// limits, the state-change timeline and the actions the key's role allows.
(function () {
  'use strict';
  const h = CMP.h, t = I18N.t;
  let last = { iccid: '', msisdn: '', card_id: '', device_id: '' };
  let results = null;

  async function search(form) {
    last = { iccid: form.iccid.value.trim(), msisdn: form.msisdn.value.trim(),
      card_id: form.card_id.value.trim(), device_id: form.device_id.value.trim() };
    if (last.card_id) { location.hash = '#/card/' + encodeURIComponent(last.card_id); return; }
    const q = new URLSearchParams({ page_size: '50' });
    ['iccid', 'msisdn', 'device_id'].forEach(function (k) { if (last[k]) q.set(k, last[k]); });
    const r = await CMP.get('/cards?' + q.toString());
    if (r.status !== 200) { CMP.showError(CMP.problem(r)); return; }
    results = r.data;
    CMP.route();
  }

  function list() {
    const field = function (name, label) {
      return h('input', { name: name, placeholder: label, 'aria-label': label, value: last[name] });
    };
    const form = h('form', { class: 'row', id: 'card-search',
      onsubmit: function (e) { e.preventDefault(); search(form); } },
    field('iccid', t('iccid_prefix')), field('msisdn', t('msisdn')), field('card_id', t('card_id')),
    field('device_id', t('device_id')), h('button', { class: 'act', type: 'submit' }, t('search')));
    const out = h('div', null, h('h1', null, t('cards')), CMP.panel(null, form));
    if (results) {
      out.appendChild(CMP.panel(I18N.num(results.total) + ' ' + t('results'), CMP.table([
        ['#', function (c) { return h('a', { href: '#/card/' + c.id }, String(c.id)); }],
        [t('iccid'), function (c) { return h('a', { href: '#/card/' + c.id, 'data-iccid': c.iccid }, c.iccid); }],
        [t('msisdn'), function (c) { return c.msisdn || '–'; }],
        [t('network_status'), function (c) { return CMP.net(c.network_status); }],
        [t('stop_reason'), function (c) { return CMP.reasonName(c.stop_reason); }],
        [t('device_id'), function (c) { return c.device_id || '–'; }],
        [t('enable_polling'), function (c) { return t(c.enable_polling ? 'yes' : 'no'); }],
      ], results.items)));
    }
    return out;
  }

  function packages(ex) {
    const rows = ex.packages.map(function (p) {
      const used = Number(p.used_mb), lim = p.limit_mb === null ? null : Number(p.limit_mb);
      const bar = h('div', { class: 'bar' }, h('div', { 'width%': lim ? Math.min(100, (100 * used) / lim).toFixed(1) : 0 }));
      if (p.exhausted) bar.firstChild.style.background = '#c0362c';
      return h('tr', null, h('td', null, '#' + p.id + ' ' + CMP.word('package', p.status) + (p.valid ? ' · ' + t('valid') : '')),
        h('td', { class: 'num' }, I18N.num(used, 2) + ' / ' + (lim === null ? t('unlimited') : I18N.num(lim, 2)) + ' MB'),
        h('td', null, bar), h('td', null, p.exhausted ? h('span', { class: 'bad' }, t('exhausted')) : ''),
        h('td', { class: 'muted' }, p.next_reset_at ? I18N.date(p.next_reset_at) : ''));
    });
    return CMP.panel(t('packages') + ' (' + CMP.word('owner', ex.package_owner.kind) + ')',
      rows.length ? h('table', null, h('tbody', null, rows)) : h('p', { class: 'muted' }, t('none')));
  }

  function evidence(ex) {
    const d = ex.decision, rn = ex.real_name, pr = ex.protect;
    const kv = function (k, v) { return h('tr', null, h('th', null, k), h('td', null, v)); };
    return CMP.panel(t('evidence'), h('table', null, h('tbody', null,
      kv(t('network_status'), CMP.net(d.network_status) + (d.stop_reason ? ' (' + CMP.reasonName(d.stop_reason) + ')' : '')),
      kv(t('explain'), h('span', { id: 'decision', 'data-decision': d.action }, CMP.decisionText(d))),
      kv(t('real_name'), CMP.realName(rn.real_name_status) + ' · ' + CMP.word('category', rn.card_category) + ' · ' + t(rn.satisfied ? 'yes' : 'no')),
      kv(t('protect'), pr.device_id ? '#' + pr.device_id + ' stop ' + (pr.stop_ttl_secs === null ? '–' : I18N.secs(pr.stop_ttl_secs)) +
        ' · start ' + (pr.start_ttl_secs === null ? '–' : I18N.secs(pr.start_ttl_secs)) : '–'),
      kv(t('matched_config'), ex.config ? '#' + ex.config.id + ' ' + ex.config.name : t('none')))));
  }

  function actions(ex, id) {
    if (!CMP.can('operate')) return CMP.panel(t('actions'), h('p', { class: 'muted' }, t('viewer_note')));
    const msg = h('span', { class: 'muted', id: 'action-result' });
    const act = function (label, testid, method, path, body, danger) {
      return h('button', { class: 'act' + (danger ? ' danger' : ''), type: 'button', 'data-action': testid,
        onclick: async function () {
          const r = await CMP.api(method, path, body);
          if (r.status >= 300) { msg.textContent = CMP.problem(r); msg.className = 'bad'; return; }
          await CMP.route();
          const m = document.getElementById('action-result');
          if (m) { m.textContent = t('done') + ': ' + label + (r.data && r.data.log_id ? ' #' + r.data.log_id : ''); m.className = 'ok'; }
        } }, label);
    };
    const c = ex.card;
    return CMP.panel(t('actions'), h('div', { class: 'row' },
      act(t('poll_now'), 'poll', 'POST', '/polling-manual-trigger/single', { card_id: id }),
      c.network_status === 1
        ? act(t('stop'), 'stop', 'POST', '/cards/' + id + '/stop', undefined, true)
        : act(t('start'), 'start', 'POST', '/cards/' + id + '/start'),
      act(t(c.enable_polling ? 'disable_polling' : 'enable_polling'), 'polling', 'PATCH',
        '/assets/card/' + id + '/polling-status', { enable_polling: !c.enable_polling }), msg));
  }

  async function card(args) {
    const id = Number(args[0]);
    const [ex, log] = await Promise.all([CMP.get('/cards/' + id + '/explain'),
      CMP.get('/cards/' + id + '/state-log?page_size=50')]);
    if (ex.status !== 200) return CMP.panel(t('card') + ' ' + args[0], h('p', { class: 'bad' }, CMP.problem(ex)));
    const e = ex.data, c = e.card;
    const changes = log.status === 200 ? log.data.items : e.recent_changes;
    const usage = await CMP.usagePanel(id, e);
    return h('div', null,
      h('h1', null, t('card') + ' #' + c.id + ' · ' + c.iccid),
      h('p', { class: 'summary', id: 'summary', title: e.summary }, CMP.explainSummary(e)),
      h('p', { class: 'muted' }, t('msisdn') + ' ' + (c.msisdn || '–') + ' · ' + t('carrier') + ' ' + c.carrier_id +
        ' · ' + t('device_id') + ' ' + (c.device_id || '–') + ' · ' + t('usage_month') + ' ' +
        I18N.num(Number(c.data_usage_mb), 2) + ' MB · ', CMP.time(e.evaluated_at)),
      actions(e, id),
      h('div', { class: 'cols' }, evidence(e), packages(e)),
      usage,
      h('div', { class: 'cols' },
        CMP.panel(t('next_due'), CMP.table([
          [t('task_type'), function (n) { return n.task_type; }],
          [t('next_due'), function (n) { return n.next_check_at ? CMP.time(n.next_check_at) : t('not_queued'); }],
          [t('scheduled'), function (n) { return t(n.scheduled ? 'yes' : 'no') + (n.manual ? ' · ' + t('manual') : ''); }],
        ], e.next_due)),
        CMP.panel(t('would_change'), h('ul', { id: 'would-change' }, CMP.explainChanges(e).map(function (w) { return h('li', null, w); })))),
      CMP.panel(t('timeline'), changes.length === 0 ? h('p', { class: 'muted' }, t('none')) : CMP.table([
        [t('when'), function (l) { return CMP.time(l.created_at); }],
        [t('status'), function (l) { return CMP.net(l.from_status) + ' → ' + CMP.net(l.to_status); }],
        [t('stop_reason'), function (l) { return CMP.reasonName(l.stop_reason); }],
        [t('trigger'), function (l) { return CMP.word('trigger', l.trigger); }],
        [t('outcome'), function (l) { return typeof l.gateway_outcome === 'string' ? CMP.word('outcome', l.gateway_outcome) : JSON.stringify(l.gateway_outcome); }],
      ], changes)));
  }

  CMP.pages.cards = { render: async function () { return list(); } };
  CMP.pages.card = { render: card };
})();
