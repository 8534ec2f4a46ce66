// The shared core: the API client (the session cookie the server set at sign-in; the page
// keeps no key), a tiny element builder, the hash router and the live refresh loop. Pages
// register themselves in CMP.pages.
(function () {
  'use strict';
  const t = I18N.t;
  const CMP = { pages: {}, session: null, paused: false, current: null };

  // Who is signed in (/ui/session: the key's name and role, the deployment's zone and the
  // session's CSRF token, which every write carries); null when nobody is.
  CMP.setSession = function (s) {
    CMP.session = s;
    I18N.setZone(s && s.timezone);
  };

  // Calls an /api/admin route (or a /ui/ one); resolves {status, data}; never throws on an
  // HTTP status. The browser sends the HttpOnly session cookie; no script can read it.
  CMP.api = async function (method, path, body) {
    // A call still running from before a sign-out must not sign the next session out again.
    const session = CMP.session;
    const headers = {};
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (method !== 'GET' && session && session.csrf) headers['X-CSRF-Token'] = session.csrf;
    const res = await fetch(path.startsWith('/ui/') ? path : '/api/admin' + path, {
      method: method, headers: headers, credentials: 'same-origin',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    let data = null;
    const text = await res.text();
    if (text) { try { data = JSON.parse(text); } catch (e) { data = text; } }
    if (res.status === 401 && !path.startsWith('/ui/') && session && CMP.session === session) { CMP.forget(); }
    return { status: res.status, data: data };
  };
  CMP.get = function (path) { return CMP.api('GET', path); };

  // h('div', {class: 'x', onclick: f}, child, ...): children are nodes, strings or arrays.
  CMP.h = function (tag, attrs) {
    const svg = ['svg', 'path', 'line', 'rect', 'text', 'g', 'polyline', 'circle', 'title'].includes(tag);
    const el = svg ? document.createElementNS('http' + '://www.w3.org/2000/svg', tag)
      : document.createElement(tag);
    for (const k in attrs || {}) {
      const v = attrs[k];
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else if (k === 'width%') el.style.width = v + '%';
      else el.setAttribute(k, v === true ? '' : v);
    }
    const add = function (c) {
      if (c === null || c === undefined || c === false) return;
      if (Array.isArray(c)) c.forEach(add);
      else el.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
    };
    for (let i = 2; i < arguments.length; i++) add(arguments[i]);
    return el;
  };
  const h = CMP.h;

  CMP.panel = function (title) {
    const rest = Array.prototype.slice.call(arguments, 1);
    return h('section', { class: 'panel' }, title ? h('h2', null, title) : null, rest);
  };
  CMP.na = function (title) {
    return CMP.panel(title, h('p', { class: 'na', 'data-na': '1' }, t('not_available')));
  };
  CMP.stat = function (label, value, id) {
    return h('div', { class: 'stat' }, h('div', { class: 'v', 'data-stat': id }, value),
      h('div', { class: 'l' }, label));
  };
  // A table: cols = [[header, fn(row) -> cell, numeric?]].
  CMP.table = function (cols, rows) {
    return h('table', null,
      h('thead', null, h('tr', null, cols.map(function (c) {
        return h('th', { class: c[2] ? 'num' : null }, c[0]);
      }))),
      h('tbody', null, rows.length === 0
        ? h('tr', null, h('td', { class: 'muted', colspan: cols.length }, t('none')))
        : rows.map(function (r) {
          return h('tr', null, cols.map(function (c) {
            return h('td', { class: c[2] ? 'num' : null }, c[1](r));
          }));
        })));
  };
  // A date in the chosen locale and the deployment's zone, as <time datetime=ISO>.
  CMP.time = function (iso) {
    return iso ? h('time', { datetime: iso }, I18N.date(iso)) : '–';
  };
  // network_status and real_name_status are 0/1 on the wire.
  CMP.net = function (v) { return t(v === 1 ? 'online' : 'stopped'); };
  CMP.realName = function (v) { return t(v === 1 ? 'verified' : 'not_verified'); };
  CMP.showError = function (msg) {
    const el = document.getElementById('error');
    el.textContent = msg || '';
    el.hidden = !msg;
  };
  CMP.problem = function (r) {
    const d = r.data || {};
    return r.status + ' ' + (d.title || '') + (d.detail ? ': ' + d.detail : '');
  };
  // Roles: what the key may write (the server decides; this only hides controls).
  CMP.can = function (what) {
    const role = CMP.session && CMP.session.role;
    if (role === 'admin') return true;
    return role === 'operator' && what === 'operate';
  };

  // The server no longer knows the session (ended, or its key revoked): back to sign-in.
  CMP.forget = function () {
    if (!CMP.session) return;
    CMP.setSession(null);
    CMP.go('#/login');
  };
  // Signs out: the server ends the session and drops the cookie.
  CMP.logout = async function () {
    await CMP.api('DELETE', '/ui/session');
    CMP.setSession(null);
    CMP.go('#/login');
  };
  // Shows `hash`: the hashchange event renders it, or a render now when it is already shown
  // (one render only, so a form being filled is never replaced under the user).
  CMP.go = function (hash) {
    if (location.hash !== hash) location.hash = hash;
    else CMP.route();
  };

  CMP.route = async function () {
    const hash = location.hash.replace(/^#\/?/, '') || 'overview';
    const parts = hash.split('/');
    let name = parts[0];
    if (!CMP.session) {
      // A reload: the cookie may still hold a session.
      const r = await CMP.get('/ui/session');
      if (r.status === 200) CMP.setSession(r.data);
      else name = 'login';
    }
    const page = CMP.pages[name] || CMP.pages.overview;
    CMP.current = { page: page, args: parts.slice(1) };
    CMP.showError('');
    CMP.renderChrome(name);
    const main = document.getElementById('main');
    main.replaceChildren(h('p', { class: 'muted' }, t('loading')));
    try {
      const node = await page.render(parts.slice(1));
      if (CMP.current && CMP.current.page === page) main.replaceChildren(node);
    } catch (e) {
      CMP.showError(String(e));
    }
  };

  CMP.nav = ['overview', 'queues', 'cards', 'configs', 'carriers', 'alerts', 'concurrency', 'cleanup', 'audit'];
  CMP.renderChrome = function (name) {
    const logged = !!CMP.session;
    document.getElementById('nav').replaceChildren.apply(document.getElementById('nav'),
      logged ? CMP.nav.map(function (n) {
        return h('a', { href: '#/' + n, class: n === name || (n === 'cards' && name === 'card') ? 'on' : null,
          'data-nav': n }, t(n));
      }) : []);
    const who = document.getElementById('who');
    who.textContent = logged ? CMP.session.name + ' (' + CMP.session.role + ')' : '';
    const zone = document.getElementById('zone');
    zone.textContent = logged && I18N.zone ? I18N.zone : '';
    zone.title = t('timezone');
    document.getElementById('logout').hidden = !logged;
    const p = document.getElementById('pause');
    p.hidden = !logged;
    p.textContent = t(CMP.paused ? 'resume' : 'pause');
    p.classList.toggle('paused', CMP.paused);
    document.getElementById('lang').value = I18N.lang;
    I18N.apply(document.getElementById('top'));
    p.textContent = t(CMP.paused ? 'resume' : 'pause');
  };

  // Live refresh: every REFRESH_MS the current page's refresh() (monitoring routes only).
  CMP.REFRESH_MS = 5000;
  CMP.tick = async function () {
    const cur = CMP.current;
    if (CMP.paused || !cur || !cur.page.refresh || document.hidden) return;
    try { await cur.page.refresh(cur.args); } catch (e) { CMP.showError(String(e)); }
  };

  window.CMP = CMP;
})();
