// Browser test of the dashboard in headless Chromium (Debian's /usr/bin/chromium; Playwright
// never downloads a browser). scripts/ui-test.sh starts gateway-sim, cmp-worker and cmp-api on
// a seeded fleet and runs this with:
//   CMP_UI_URL, CMP_UI_ADMIN_KEY, CMP_UI_VIEWER_KEY, CMP_UI_SHOTS (screenshot folder),
//   CMP_UI_WORKER_METRICS (the worker's /metrics: "poll now" must move its manual dequeues),
//   CMP_UI_TIMEZONE (the API's CMP_TIMEZONE; the browser runs in another zone) and
//   CMP_UI_HISTORY_POINTS (when set, the overview charts must draw at least that many minute
//   samples of the worker's history: a fleet that has run a few minutes)
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const base = process.env.CMP_UI_URL;
const adminKey = process.env.CMP_UI_ADMIN_KEY;
const viewerKey = process.env.CMP_UI_VIEWER_KEY;
const shots = process.env.CMP_UI_SHOTS || 'target/ui-screenshots';
if (!base || !adminKey || !viewerKey) {
  console.error('CMP_UI_URL, CMP_UI_ADMIN_KEY and CMP_UI_VIEWER_KEY are required');
  process.exit(2);
}
mkdirSync(shots, { recursive: true });
const zone = process.env.CMP_UI_TIMEZONE || 'Asia/Shanghai';
const browserZone = zone === 'America/Los_Angeles' ? 'Europe/Berlin' : 'America/Los_Angeles';
const historyPoints = Number(process.env.CMP_UI_HISTORY_POINTS || 0);
const watchdog = setTimeout(() => { console.error('ui test: timed out after 270 s'); process.exit(1); }, 270_000);

// The stop reasons and decision codes the engine uses: the card page shows words, never these.
const REASON_WORDS = {
  en: { not_realname: 'not real-name verified', no_package: 'no valid package', traffic_exhausted: 'data used up',
    protect: 'held by a protect period', manual: 'stopped by an operator' },
  'zh-CN': { not_realname: '未实名', no_package: '无有效套餐', traffic_exhausted: '流量用尽', protect: '保护期停机', manual: '人工停机' },
};
const CODES = /not_realname|no_package|traffic_exhausted|already_stopped|already_online|manual_stop|protect_period|change_reason|package_activation|not_called/;

async function api(method, path, key, body) {
  const res = await fetch(base + '/api/admin' + path, {
    method, headers: { Authorization: 'Bearer ' + key, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, data: text ? JSON.parse(text) : null };
}
const en = (n) => new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 }).format(n);
// Cards the worker took from the manual lists so far (cmp_dequeued_total{source="manual"}).
async function manualDequeued() {
  const text = await (await fetch(process.env.CMP_UI_WORKER_METRICS)).text();
  return text.split('\n').filter((l) => l.startsWith('cmp_dequeued_total{') && l.includes('source="manual"'))
    .reduce((sum, l) => sum + Number(l.trim().split(/\s+/).pop()), 0);
}
const step = (name) => console.log('ui test: ' + name);

const profile = mkdtempSync(join(tmpdir(), 'cmp-ui-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CMP_UI_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  locale: 'en-US',
  timezoneId: browserZone,
  viewport: { width: 1360, height: 900 },
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
context.setDefaultTimeout(15_000);
const page = context.pages()[0] || await context.newPage();
const external = [];
page.on('request', (r) => { if (!r.url().startsWith(base)) external.push(r.url()); });
const errors = [];
page.on('pageerror', (e) => errors.push(String(e)));
const shot = (name) => page.screenshot({ path: join(shots, name + '.png'), fullPage: true });
const go = async (hash, selector) => {
  await page.evaluate((h) => { location.hash = h; }, hash);
  await page.waitForSelector(selector);
};

let failed = false;
try {
  step('log in as admin');
  await page.goto(base + '/');
  await page.evaluate(() => localStorage.setItem('cmp.lang', 'en'));
  await page.reload();
  await page.waitForSelector('#key');
  await shot('login');
  await page.fill('#key', adminKey);
  await page.click('#login');
  await page.waitForSelector('[data-stat="cards"]');
  assert.match(await page.textContent('#who'), /admin/);

  step('the sign-in is an HttpOnly, SameSite=Strict cookie; no key in the page\'s storage');
  const cookies = await context.cookies(base);
  const sessionCookie = cookies.find((c) => c.name === 'cmp_session');
  assert.ok(sessionCookie, `a session cookie: ${JSON.stringify(cookies.map((c) => c.name))}`);
  assert.equal(sessionCookie.httpOnly, true);
  assert.equal(sessionCookie.sameSite, 'Strict');
  const stored = await page.evaluate(() => JSON.stringify([Object.entries(sessionStorage), Object.entries(localStorage)]));
  assert.ok(!stored.includes(adminKey), 'the key is not in sessionStorage or localStorage');
  assert.equal(await page.evaluate(() => document.cookie.includes('cmp_session')), false, 'no script reads the cookie');
  // A reload keeps the session; the key is not asked again.
  await page.reload();
  await page.waitForSelector('[data-stat="cards"]');
  // A write without the session's CSRF token is refused, whatever the role.
  const noToken = await page.evaluate(async () => (await fetch('/api/admin/polling-manual-trigger/single', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ card_id: 1 }) })).status);
  assert.equal(noToken, 403);
  // The static assets carry ETags: an unchanged one costs a 304.
  const revalidated = await page.evaluate(async () => {
    const first = await fetch('/ui/core.js', { cache: 'no-store' });
    const tag = first.headers.get('etag');
    const again = await fetch('/ui/core.js', { cache: 'no-store', headers: { 'If-None-Match': tag } });
    return [Boolean(tag), again.status];
  });
  assert.deepEqual(revalidated, [true, 304]);

  step('dates are shown in CMP_TIMEZONE, not in the browser\'s zone');
  assert.equal(await page.textContent('#zone'), zone);
  assert.equal(await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone), browserZone);
  const stamp = page.locator('#refreshed time');
  const iso = await stamp.getAttribute('datetime');
  const [inZone, inBrowser] = await page.evaluate(([t, z]) => [z, undefined].map((timeZone) =>
    new Intl.DateTimeFormat('en', { dateStyle: 'medium', timeStyle: 'medium', timeZone }).format(new Date(t))), [iso, zone]);
  assert.notEqual(inZone, inBrowser);
  assert.equal(await stamp.textContent(), inZone);

  step('the overview charts draw the history the worker samples');
  await page.waitForSelector('[data-chart="polls"]');
  for (const id of ['polls', 'gateway', 'backlog', 'oldest']) assert.equal(await page.locator(`[data-chart="${id}"]`).count(), 1);
  if (historyPoints > 0) {
    const hist = await api('GET', '/polling-stats/history?scope=carddata&range=1h', adminKey);
    assert.ok(hist.data.points.length >= historyPoints, `${hist.data.points.length} minute samples, want ${historyPoints}`);
    assert.ok(hist.data.points.some((p) => p.polls > 0), 'some minute has polls');
    const drawn = await page.getAttribute('#chart-polls polyline[data-series="carddata"]', 'data-points');
    assert.ok(Number(drawn) >= historyPoints, `carddata line of ${drawn} points`);
    const gw = await page.getAttribute('#chart-gateway polyline', 'data-points');
    assert.ok(Number(gw) >= historyPoints, `gateway line of ${gw} points`);
  }

  step('the overview shows the numbers the API returns');
  const stats = await api('GET', '/polling-stats', adminKey);
  if (stats.status === 200) {
    assert.equal(await page.textContent('[data-stat="cards"]'), en(stats.data.cards.cards));
    assert.equal(await page.textContent('[data-stat="polling_enabled"]'), en(stats.data.cards.polling_enabled));
  } else {
    assert.equal(stats.status, 404);
    const cards = await api('GET', '/cards?page_size=1', adminKey);
    assert.equal(await page.textContent('[data-stat="cards"]'), en(cards.data.total));
    await page.waitForSelector('[data-na]');
  }
  await shot('overview');

  await go('#/queues', 'h1');
  await page.waitForSelector('section.panel');
  await shot('queues');

  step('search an ICCID and open the card');
  // A card stopped for traffic_exhausted if there is one (the explain sentence names a package
  // over its limit, the chart has a line), else a stopped card with usage, else any.
  const listed = (await api('GET', '/cards?page_size=500', adminKey)).data.items;
  const used = (c) => Number(c.data_usage_mb) > 0;
  const card = listed.find((c) => c.stop_reason === 'traffic_exhausted') ||
    listed.find((c) => c.network_status === 0 && used(c)) || listed.find((c) => c.network_status === 0) ||
    listed.find(used) || listed[0];
  await go('#/cards', '#card-search');
  await page.fill('input[name="iccid"]', card.iccid.slice(0, card.iccid.length - 2));
  await page.click('#card-search button[type="submit"]');
  await page.click(`a[data-iccid="${card.iccid}"]`);
  // The worker may change the card meanwhile: compare with an explain answer read just after.
  let summary = '', state = '';
  for (let i = 0; i < 3; i++) {
    await page.waitForSelector('#summary');
    summary = await page.textContent('#summary');
    const ex = (await api('GET', `/cards/${card.id}/explain`, adminKey)).data.decision;
    state = ex.network_status === 0 ? (ex.stop_reason ? 'stopped: ' + REASON_WORDS.en[ex.stop_reason] : 'stopped') : 'online';
    if (summary.startsWith(state)) break;
    await page.reload();
  }
  assert.ok(summary.startsWith(state), `summary "${summary}" names "${state}"`);
  // Why, in words: the decision line and the whole page carry no internal code.
  const why = await page.textContent('#decision');
  assert.ok(why.length > 0 && !CODES.test(why), `the decision "${why}" is in words`);
  const pageText = await page.textContent('main');
  assert.ok(!CODES.test(pageText), `the card page shows an internal code: ${pageText.match(CODES)}`);

  step('the card page charts the month\'s usage against the packages\' limits');
  await page.waitForSelector('#usage-panel');
  const usage = await api('GET', `/cards/${card.id}/usage`, adminKey);
  assert.equal(usage.status, 200);
  const hours = Number(await page.getAttribute('#usage-panel', 'data-hours'));
  // A record of a new hour may land between the page's read and ours.
  assert.ok(hours === usage.data.hours.length || hours === usage.data.hours.length - 1, `${hours} hours drawn of ${usage.data.hours.length}`);
  if (hours > 0) {
    assert.equal(await page.getAttribute('#usage-chart polyline', 'data-points'), String(hours));
    const explained = (await api('GET', `/cards/${card.id}/explain`, adminKey)).data;
    const limits = explained.packages.filter((p) => p.status === 'active' && p.limit_mb !== null).length;
    assert.equal(await page.locator('#usage-chart line[data-limit]').count(), limits);
  }
  await shot('card');

  step('in 中文 the explain sentence is rendered from its codes');
  await page.selectOption('#lang', 'zh-CN');
  let zh = '', zhState = '';
  for (let i = 0; i < 3; i++) {
    await page.waitForFunction(() => document.querySelector('[data-nav="overview"]').textContent === '总览');
    await page.waitForSelector('#summary');
    zh = await page.textContent('#summary');
    const d = (await api('GET', `/cards/${card.id}/explain`, adminKey)).data.decision;
    zhState = d.network_status === 0 ? '已停机' + (d.stop_reason ? '：' : '') : '在线';
    if (zh.startsWith(zhState) && (!d.stop_reason || zh.includes(REASON_WORDS['zh-CN'][d.stop_reason]))) break;
    await page.reload();
  }
  assert.ok(zh.startsWith(zhState), `zh summary "${zh}" starts with "${zhState}"`);
  assert.ok(!/evaluation|package|stopped|online/.test(zh), `zh summary "${zh}" has English words`);
  assert.ok(/[\u4e00-\u9fff]/.test(await page.textContent('#would-change')), 'the would-change list is in Chinese');
  const zhWhy = await page.textContent('#decision');
  assert.ok(/[\u4e00-\u9fff]/.test(zhWhy) && !CODES.test(zhWhy), `the decision "${zhWhy}" is in Chinese words`);
  await shot('card-zh');
  await page.selectOption('#lang', 'en');
  await page.waitForFunction(() => document.querySelector('[data-nav="overview"]').textContent === 'Overview');

  step('poll now as admin moves the manual trigger log and the worker polls the card');
  const before = await api('GET', '/polling-manual-trigger/logs?page_size=1', adminKey);
  const dequeuedBefore = process.env.CMP_UI_WORKER_METRICS ? await manualDequeued() : 0;
  await page.click('[data-action="poll"]');
  await page.waitForSelector('#action-result.ok');
  const after = await api('GET', '/polling-manual-trigger/logs?page_size=1', adminKey);
  assert.equal(after.data.total, before.data.total + 1);
  assert.equal(after.data.items[0].scope.card_id ?? card.id, card.id);
  if (process.env.CMP_UI_WORKER_METRICS) {
    const want = dequeuedBefore + after.data.items[0].task_types.length;
    let now = dequeuedBefore;
    for (let i = 0; i < 60 && now < want; i++) {
      await new Promise((r) => setTimeout(r, 250));
      now = await manualDequeued();
    }
    assert.ok(now >= want, `the worker took ${now - dequeuedBefore} manual entries, want ${want - dequeuedBefore}`);
  }

  step('a config dry run reports the counts of the API');
  await go('#/configs', 'h1');
  const configs = await api('GET', '/polling-configs?page_size=100', adminKey);
  if (configs.data.items.length > 0) {
    const c = configs.data.items[0];
    await page.click(`[data-action="edit-${c.id}"]`);
    await page.fill('#config-form input[name="priority"]', String(c.priority + 1));
    assert.ok(await page.isDisabled('[data-action="save"]'), 'save waits for a dry run');
    await page.click('[data-action="dry-run"]');
    await page.waitForSelector('[data-stat="dry_match"]');
    const body = { ...c, priority: c.priority + 1 };
    for (const k of ['id', 'created_at', 'updated_at']) delete body[k];
    const dry = await api('POST', '/polling-configs/dry-run', adminKey, { id: c.id, config: body });
    assert.equal(dry.status, 200);
    assert.equal(await page.textContent('[data-stat="dry_match"]'), en(dry.data.would_match));
    assert.equal(await page.textContent('[data-stat="dry_interval"]'), en(dry.data.would_change_interval));
    assert.ok(!(await page.isDisabled('[data-action="save"]')), 'save allowed after the dry run');
  }
  await shot('configs');

  step('an admin creates, edits, disables and deletes an alert rule');
  await go('#/alerts', '[data-action="rule-new"]');
  await page.click('[data-action="rule-new"]');
  await page.fill('#rule-form input[name="name"]', 'ui backlog');
  await page.selectOption('#rule-form select[name="metric"]', 'due_backlog');
  await page.selectOption('#rule-form select[name="task_type"]', 'carddata');
  await page.fill('#rule-form input[name="threshold"]', '-1');
  await page.click('[data-action="rule-save"]');
  await page.waitForFunction(() => document.getElementById('rule-error').textContent.includes('/threshold'));
  await page.fill('#rule-form input[name="threshold"]', '1000');
  await page.click('[data-action="rule-save"]');
  await page.waitForSelector('#rule-secret');
  const rule = (await api('GET', '/polling-alert-rules?page_size=100', adminKey)).data.items.find((r) => r.name === 'ui backlog');
  assert.ok(rule, 'the rule was created');
  assert.deepEqual([rule.metric, rule.task_type, rule.operator, rule.threshold, rule.enabled],
    ['due_backlog', 'carddata', '>', 1000, true]);
  await page.click(`[data-action="rule-edit-${rule.id}"]`);
  await page.fill('#rule-form input[name="threshold"]', '2500');
  await page.click('[data-action="rule-save"]');
  await page.waitForFunction((id) => document.querySelector(`[data-threshold="${id}"]`)?.textContent === '> 2500', rule.id);
  assert.equal((await api('GET', `/polling-alert-rules/${rule.id}`, adminKey)).data.threshold, 2500);
  await page.click(`[data-action="rule-toggle-${rule.id}"]`);
  await page.waitForFunction((id) => document.querySelector(`[data-enabled="${id}"]`)?.textContent === 'no', rule.id);
  const toggled = (await api('GET', `/polling-alert-rules/${rule.id}`, adminKey)).data;
  assert.deepEqual([toggled.enabled, toggled.threshold, toggled.task_type], [false, 2500, 'carddata']);
  await shot('alerts');
  page.once('dialog', (d) => d.accept());
  await page.click(`[data-action="rule-delete-${rule.id}"]`);
  await page.waitForFunction((id) => !document.querySelector(`[data-rule="${id}"]`), rule.id);
  assert.equal((await api('GET', `/polling-alert-rules/${rule.id}`, adminKey)).status, 404);

  step('an admin creates a carrier, keeps its credentials on edit, tests it and disables it');
  await go('#/carriers', '[data-action="carrier-new"]');
  await page.click('[data-action="carrier-new"]');
  await page.fill('#carrier-form input[name="carrier_id"]', '9901');
  await page.fill('#carrier-form input[name="name"]', 'ui onelink');
  await page.selectOption('#carrier-form select[name="protocol"]', 'onelink');
  await page.fill('#carrier-form input[name="base_url"]', 'http://127.0.0.1:9');
  assert.equal(await page.locator('#carrier-form [data-credential]').count(), 2, 'appid and password');
  await page.fill('#carrier-form input[name="cred_appid"]', 'ui-app');
  await page.fill('#carrier-form input[name="cred_password"]', 'S3cr3t-ui-PW');
  await page.click('[data-action="carrier-save"]');
  await page.waitForSelector('[data-action="carrier-edit-9901"]');
  assert.ok(!(await page.content()).includes('S3cr3t-ui-PW'), 'the password is never shown');
  await page.click('[data-action="carrier-edit-9901"]');
  assert.equal(await page.inputValue('#carrier-form input[name="cred_password"]'), '', 'blank on edit');
  await page.fill('#carrier-form input[name="name"]', 'ui onelink 2');
  await page.click('[data-action="carrier-save"]');
  await page.waitForSelector('[data-action="carrier-test-9901"]');
  const carrier = (await api('GET', '/carriers/9901', adminKey)).data;
  assert.deepEqual([carrier.name, carrier.credential_fields], ['ui onelink 2', ['appid', 'password']]);
  await page.click('[data-action="carrier-test-9901"]');
  await page.waitForSelector('[data-test-result="9901"].bad');
  await page.click('[data-action="carrier-toggle-9901"]');
  await page.waitForFunction(() => document.querySelector('[data-enabled="9901"]')?.textContent === 'no');
  // The carriers' budget panels (or the note that no worker computed them yet) under the table.
  await page.waitForSelector('#carrier-budget, [data-budget-none]');
  await shot('carriers');

  for (const p of ['concurrency', 'cleanup', 'audit']) {
    await go('#/' + p, 'h1');
    await page.waitForLoadState('networkidle');
    await shot(p);
  }

  step('switching to 中文 translates the page');
  await go('#/overview', '[data-stat="cards"]');
  await page.selectOption('#lang', 'zh-CN');
  await page.waitForFunction(() => document.querySelector('[data-nav="overview"]').textContent === '总览');
  assert.equal(await page.textContent('[data-nav="cards"]'), '卡片');
  assert.equal(await page.textContent('#logout'), '退出');
  await page.waitForSelector('h1');
  assert.equal(await page.textContent('h1'), '总览');
  await shot('overview-zh');
  await page.selectOption('#lang', 'en');

  step('a viewer sees no write control, and a forged write gets 403');
  await page.click('#logout');
  await page.fill('#key', viewerKey);
  await page.click('#login');
  await page.waitForSelector('[data-stat="cards"]');
  assert.match(await page.textContent('#who'), /viewer/);
  await go('#/card/' + card.id, '#summary');
  assert.equal(await page.locator('[data-action]').count(), 0, 'no write control on the card page');
  await shot('card-viewer');
  await go('#/configs', 'table');
  assert.equal(await page.locator('[data-action]').count(), 0, 'no write control on configs');
  await go('#/alerts', 'table');
  assert.equal(await page.locator('[data-action]').count(), 0, 'no write control on alerts');
  await go('#/carriers', 'table');
  assert.equal(await page.locator('[data-action]').count(), 0, 'no write control on carriers');
  // The viewer's own session, with its CSRF token: still 403 for the role.
  const csrf = await page.evaluate(async () => (await (await fetch('/ui/session')).json()).csrf);
  const forged = await page.evaluate(async ([id, token]) => {
    const r = await fetch('/api/admin/polling-manual-trigger/single', { method: 'POST',
      headers: { 'X-CSRF-Token': token, 'Content-Type': 'application/json' },
      body: JSON.stringify({ card_id: id }) });
    return r.status;
  }, [card.id, csrf]);
  assert.equal(forged, 403);

  step('signing out ends the session on the server');
  const cookie = (await context.cookies(base)).find((c) => c.name === 'cmp_session');
  await page.click('#logout');
  await page.waitForSelector('#key');
  assert.equal((await context.cookies(base)).some((c) => c.name === 'cmp_session' && c.value), false, 'the cookie is dropped');
  // The old cookie replayed by hand is refused: the server forgot the session.
  const replayed = await fetch(base + '/api/admin/cards?page_size=1', { headers: { Cookie: 'cmp_session=' + cookie.value } });
  assert.equal(replayed.status, 401);

  assert.deepEqual(external, [], 'no request left the server');
  assert.deepEqual(errors, [], 'no script error');
  step('all passed; screenshots in ' + shots);
} catch (e) {
  failed = true;
  console.error('ui test: FAILED:', e);
  await shot('failure').catch(() => {});
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
  clearTimeout(watchdog);
}
process.exit(failed ? 1 : 0);
