// The login page and the start: chrome events, hash routing, the refresh timer.
(function () {
  'use strict';
  const h = CMP.h, t = I18N.t;

  CMP.pages.login = {
    render: async function () {
      const msg = h('p', { class: 'bad', id: 'login-error' });
      const input = h('input', { type: 'password', name: 'key', id: 'key', autocomplete: 'off',
        placeholder: t('api_key'), 'aria-label': t('api_key') });
      const form = h('form', { onsubmit: async function (e) {
        e.preventDefault();
        // The key goes to the server once, for a session cookie; the page keeps no copy.
        const key = input.value.trim();
        input.value = '';
        const r = await CMP.api('POST', '/ui/session', { key: key });
        if (r.status !== 200) { msg.textContent = t('login_bad'); return; }
        CMP.setSession(r.data);
        CMP.go('#/overview');
      } }, input, h('button', { class: 'act', type: 'submit', id: 'login' }, t('login')), msg);
      return h('div', { class: 'panel login' }, h('h1', null, t('login_title')), form);
    },
  };

  document.getElementById('lang').addEventListener('change', function (e) {
    I18N.set(e.target.value);
    CMP.route();
  });
  document.getElementById('pause').addEventListener('click', function () {
    CMP.paused = !CMP.paused;
    CMP.renderChrome(CMP.current ? (location.hash.replace(/^#\/?/, '').split('/')[0] || 'overview') : 'login');
  });
  document.getElementById('logout').addEventListener('click', CMP.logout);
  window.addEventListener('hashchange', CMP.route);
  setInterval(CMP.tick, CMP.REFRESH_MS);
  CMP.route();
})();
