// Browser test of the dashboard in headless Chromium (Debian's /usr/bin/chromium; Playwright
// never downloads a browser). scripts/ui-test.sh starts gateway-sim, cmp-worker and cmp-api on
// a seeded fleet and runs this with:
//   CMP_UI_URL, CMP_UI_ADMIN_KEY, CMP_UI_VIEWER_KEY, CMP_UI_SHOTS (screenshot folder) and
//   CMP_UI_WORKER_METRICS (the worker's /metrics: "poll now" must move its manual dequeues)
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
const watchdog = setTimeout(() => { console.error('ui test: timed out after 240 s'); process.exit(1); }, 240_000);

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
  let pick = await api('GET', '/cards?network_status=0&page_size=1', adminKey);
  if (pick.data.items.length === 0) pick = await api('GET', '/cards?page_size=1', adminKey);
  const card = pick.data.items[0];
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
    state = ex.network_status === 0 ? (ex.stop_reason ? 'stopped: ' + ex.stop_reason : 'stopped') : 'online';
    if (summary.startsWith(state)) break;
    await page.reload();
  }
  assert.ok(summary.startsWith(state), `summary "${summary}" names "${state}"`);
  await shot('card');

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
  for (const p of ['alerts', 'concurrency', 'cleanup', 'audit']) {
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
  const forged = await page.evaluate(async (id) => {
    const r = await fetch('/api/admin/polling-manual-trigger/single', { method: 'POST',
      headers: { Authorization: 'Bearer ' + sessionStorage.getItem('cmp.key'), 'Content-Type': 'application/json' },
      body: JSON.stringify({ card_id: id }) });
    return r.status;
  }, card.id);
  assert.equal(forged, 403);

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
