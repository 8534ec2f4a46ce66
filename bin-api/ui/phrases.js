// The explain answer's sentences rendered from their codes (the answer's `phrases`) in the
// chosen language, with numbers in its locale and dates in the deployment's zone, and every code
// the card page shows (stop reason, decision, trigger, carrier outcome, category, package status)
// as words: an operator never reads an internal code. The server's English `summary` stays for
// API users; unknown codes fall back to it, or to the code itself.
(function () {
  'use strict';
  const WORDS = {
    en: {
      reason: { not_realname: 'not real-name verified', no_package: 'no valid package',
        traffic_exhausted: 'data used up', protect: 'held by a protect period', manual: 'stopped by an operator' },
      trigger: { carddata: 'usage poll', package: 'package poll', realname: 'real-name poll',
        protect: 'protect period ended', package_activation: 'package expiry or activation',
        data_reset: 'monthly data reset', operator: 'operator', asset_polling_control: 'polling switched by an operator',
        carrier_stream: "carrier's usage stream" },
      outcome: { ok: 'carrier applied it', not_called: 'no carrier call needed', pending: 'waiting for the carrier',
        failed: 'carrier did not apply it; card unchanged',
        interrupted: 'interrupted before the answer; decided again on the next evaluation' },
      category: { normal: 'ordinary card', industry: 'industry card (real-name exempt)' },
      package: { pending: 'pending', active: 'active', expired: 'expired', cancelled: 'cancelled' },
      owner: { device: "its device's", card: "the card's own" },
    },
    'zh-CN': {
      reason: { not_realname: '未实名', no_package: '无有效套餐', traffic_exhausted: '流量用尽',
        protect: '保护期停机', manual: '人工停机' },
      trigger: { carddata: '用量轮询', package: '套餐轮询', realname: '实名轮询', protect: '保护期结束',
        package_activation: '套餐到期或生效', data_reset: '月度流量重置', operator: '操作员',
        asset_polling_control: '操作员切换轮询', carrier_stream: '运营商用量推送' },
      outcome: { ok: '运营商已执行', not_called: '无需调用运营商', pending: '等待运营商应答',
        failed: '运营商未执行，卡状态未变', interrupted: '应答前中断，下次评估重新决定' },
      category: { normal: '普通卡', industry: '行业卡（免实名）' },
      package: { pending: '待生效', active: '生效中', expired: '已到期', cancelled: '已取消' },
      owner: { device: '设备', card: '卡片自身' },
    },
  };
  // A code of one kind as words in the chosen language; the code itself when unknown.
  const word = function (kind, code) {
    const table = (WORDS[I18N.lang] || WORDS.en)[kind];
    return (table && table[code]) || code;
  };
  const reason = function (r) { return word('reason', r); };
  const mb = function (v) { return v === undefined ? null : I18N.num(Number(v), 2); };
  const owner = function (p) {
    if (I18N.lang === 'zh-CN') return (p.owner_kind === 'device' ? '设备 ' : '卡 ') + p.owner_id;
    return (p.owner_kind === 'device' ? 'device ' : 'card ') + p.owner_id;
  };
  const limit = function (p) {
    if (p.limit_mb === undefined) return I18N.lang === 'zh-CN' ? '不限量' : 'unlimited';
    return mb(p.limit_mb) + ' MB';
  };

  const EN = {
    state_online: function () { return 'online'; },
    state_stopped: function (p) { return p.reason ? 'stopped: ' + reason(p.reason) : 'stopped'; },
    evidence_not_realname: function () { return 'not real-named and not an industry card'; },
    evidence_no_package: function (p) { return owner(p) + ' has no valid package'; },
    evidence_package_used: function (p) { return 'package ' + p.package + ' used ' + mb(p.used_mb) + ' of ' + limit(p); },
    evidence_satisfied: function (p) { return 'real-name satisfied, ' + p.valid_packages + ' valid package(s) with room'; },
    next_stop: function (p) { return 'the next evaluation stops it (' + reason(p.reason) + ')'; },
    next_start: function () { return 'the next evaluation resumes it'; },
    next_change_reason: function (p) { return 'the next evaluation records the reason: ' + reason(p.reason); },
    next_protect_period: function () { return 'a protect period holds it; automation waits'; },
    next_manual_stop: function () { return 'an operator stopped it; automation never resumes it'; },
    next_nothing: function () { return 'no change is due'; },
    change_stop_protect: function (p) { return "the device's stop protect period ends in " + I18N.secs(p.secs) + '; until then the protect handler keeps the card stopped and automation does nothing'; },
    change_start_protect: function (p) { return "the device's start protect period ends in " + I18N.secs(p.secs) + '; until then the protect handler keeps the card online and automation does nothing'; },
    change_manual_stop: function () { return "stopped by an operator: only an operator's start resumes it"; },
    change_realname_lifts: function () { return 'real-name verification would lift the stop “' + reason('not_realname') + '”'; },
    change_package_lifts_no_package: function (p) { return 'a valid package for ' + owner(p) + ' would lift the stop “' + reason('no_package') + '”'; },
    change_package_lifts_traffic: function (p) {
      return 'a valid package with room for ' + owner(p) + ' would lift the stop “' + reason('traffic_exhausted') + '”' +
        (p.reset_at ? ', as would the monthly reset on ' + I18N.date(p.reset_at) : '');
    },
    change_realname_required: function () { return 'real-name verification would be required'; },
    change_losing_realname: function () { return 'losing real-name verification would stop it (' + reason('not_realname') + ')'; },
    change_last_package_expires: function (p) { return 'with no new package, it stops (' + reason('no_package') + ') when its last valid package expires on ' + I18N.date(p.at); },
    change_package_limit: function (p) { return 'package ' + p.package + ' stops it (' + reason('traffic_exhausted') + ') when used reaches ' + limit(p) + ' (now ' + mb(p.used_mb) + ' MB), unless another valid package has room'; },
    change_no_config: function () { return 'no enabled polling config matches: the card is not polled; a matching config would change that'; },
  };
  const ZH = {
    state_online: function () { return '在线'; },
    state_stopped: function (p) { return p.reason ? '已停机：' + reason(p.reason) : '已停机'; },
    evidence_not_realname: function () { return '未实名且非行业卡'; },
    evidence_no_package: function (p) { return owner(p) + ' 没有有效套餐'; },
    evidence_package_used: function (p) { return '套餐 ' + p.package + ' 已用 ' + mb(p.used_mb) + ' MB，上限 ' + limit(p); },
    evidence_satisfied: function (p) { return '实名已满足，' + p.valid_packages + ' 个有效套餐仍有余量'; },
    next_stop: function (p) { return '下次评估将停机（' + reason(p.reason) + '）'; },
    next_start: function () { return '下次评估将复机'; },
    next_change_reason: function (p) { return '下次评估将把停机原因记为 ' + reason(p.reason); },
    next_protect_period: function () { return '处于保护期，自动化等待中'; },
    next_manual_stop: function () { return '人工停机，自动化不会复机'; },
    next_nothing: function () { return '暂无需要的变更'; },
    change_stop_protect: function (p) { return '设备停机保护期还剩 ' + I18N.secs(p.secs) + '；期间保护任务保持停机，自动化不做处理'; },
    change_start_protect: function (p) { return '设备复机保护期还剩 ' + I18N.secs(p.secs) + '；期间保护任务保持在线，自动化不做处理'; },
    change_manual_stop: function () { return '人工停机：只有操作员复机才能恢复'; },
    change_realname_lifts: function () { return '完成实名认证即可解除“未实名”停机'; },
    change_package_lifts_no_package: function (p) { return '为' + owner(p) + ' 添加有效套餐即可解除“无有效套餐”停机'; },
    change_package_lifts_traffic: function (p) {
      return '为' + owner(p) + ' 添加有余量的有效套餐即可解除“流量用尽”停机' +
        (p.reset_at ? '，或在 ' + I18N.date(p.reset_at) + ' 月度重置时解除' : '');
    },
    change_realname_required: function () { return '需要完成实名认证'; },
    change_losing_realname: function () { return '若失去实名认证将停机（未实名）'; },
    change_last_package_expires: function (p) { return '若无新套餐，最后一个有效套餐于 ' + I18N.date(p.at) + ' 到期后将停机（无有效套餐）'; },
    change_package_limit: function (p) { return '套餐 ' + p.package + ' 用量达到 ' + limit(p) + ' 时将停机（流量用尽，当前 ' + mb(p.used_mb) + ' MB），除非另有有余量的有效套餐'; },
    change_no_config: function () { return '没有匹配的已启用轮询配置：该卡不会被轮询；添加匹配的配置即可改变'; },
  };

  // One phrase ({code, params}) as text; null when the code is unknown to this page.
  function phrase(p) {
    const table = I18N.lang === 'zh-CN' ? ZH : EN;
    const f = p && table[p.code];
    return f ? f(p.params || {}) : null;
  }

  // What the engine would do now (the explain answer's `decision`) as a sentence.
  const DECISION = {
    en: {
      stop: function (r) { return 'stop the card: ' + reason(r); },
      start: function () { return 'resume the card: nothing stands in the way of service'; },
      change_reason: function (r) { return 'keep it stopped and record the reason: ' + reason(r); },
      already_stopped: function () { return 'nothing to do: it is already stopped for the reason that holds'; },
      already_online: function () { return 'nothing to do: it is online and nothing stands in the way of service'; },
      manual_stop: function () { return "nothing to do: an operator stopped it, and only an operator's start resumes it"; },
      protect_period: function () { return "nothing to do: its device's protect period holds it"; },
    },
    'zh-CN': {
      stop: function (r) { return '停机：' + reason(r); },
      start: function () { return '复机：已无阻碍服务的原因'; },
      change_reason: function (r) { return '保持停机，并把停机原因记为：' + reason(r); },
      already_stopped: function () { return '无需处理：已因当前成立的原因停机'; },
      already_online: function () { return '无需处理：在线且无阻碍服务的原因'; },
      manual_stop: function () { return '无需处理：人工停机，只有操作员复机才能恢复'; },
      protect_period: function () { return '无需处理：设备处于保护期'; },
    },
  };
  CMP.decisionText = function (d) {
    const table = DECISION[I18N.lang] || DECISION.en;
    const f = d.action === 'nothing' ? table[d.reason] : table[d.action];
    if (f) return f(d.reason);
    return d.action + (d.reason ? ': ' + d.reason : '');
  };

  CMP.phrase = phrase;
  CMP.word = word;
  // A stop reason as words ('–' for none).
  CMP.reasonName = function (code) { return code ? reason(code) : '–'; };
  // The summary sentence of an explain answer; the server's English one when a code is unknown.
  CMP.explainSummary = function (ex) {
    const ph = ex.phrases;
    if (!ph) return ex.summary;
    const zh = I18N.lang === 'zh-CN';
    const parts = [phrase(ph.state)].concat(ph.evidence.map(phrase), [phrase(ph.next)],
      ph.would_change.length ? [phrase(ph.would_change[0])] : []);
    if (parts.some(function (x) { return x === null; })) return ex.summary;
    const evidence = parts.slice(1, 1 + ph.evidence.length).join(zh ? '、' : ', ');
    const rest = parts.slice(1 + ph.evidence.length);
    return parts[0] + ' — ' + evidence + (zh ? '；' : '; ') + rest.join(zh ? '；' : '; ');
  };
  // The would-change list, item for item; the server's English item when a code is unknown.
  CMP.explainChanges = function (ex) {
    const ph = ex.phrases;
    return ex.would_change.map(function (text, i) {
      const p = ph && ph.would_change[i];
      return (p && phrase(p)) || text;
    });
  };
})();
