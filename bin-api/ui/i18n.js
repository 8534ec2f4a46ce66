// Translations (en, zh-CN) and locale-aware formatting with Intl. Dates are shown in the
// deployment's zone (CMP_TIMEZONE, told by /ui/session), never the browser's.
(function () {
  'use strict';
  const en = {
    brand: 'CMP polling', pause: 'Pause', resume: 'Resume', logout: 'Log out',
    overview: 'Overview', queues: 'Queues', cards: 'Cards', configs: 'Configs', alerts: 'Alerts',
    concurrency: 'Concurrency', cleanup: 'Cleanup', audit: 'Audit',
    login_title: 'Sign in with an API key', api_key: 'API key', login: 'Sign in',
    login_bad: 'The key was refused.', not_available: 'Not available on this server',
    loading: 'Loading…', none: 'None', yes: 'yes', no: 'no', role: 'role',
    fleet: 'Fleet', total_cards: 'Cards', polling_enabled: 'Polling enabled', online: 'Online',
    stopped: 'Stopped', stopped_by: 'Stopped by reason', source: 'Source',
    task_type: 'Task type', polls_per_sec: 'Polls/s', failure_rate: 'Failure rate',
    due_backlog: 'Due backlog', oldest_due: 'Oldest due age', decisive: 'Decisive next', depth: 'Depth', due: 'Due',
    initializer: 'Initializer', processed: 'processed', firing_alerts: 'Firing alerts',
    history: 'History', range_1h: '1 h', range_24h: '24 h', range_30d: '30 d', range_13mo: '13 months',
    polls: 'Polls', failures: 'Failures', gateway_errors: 'Gateway errors',
    gateway_throttles: 'Gateway throttles', no_history: 'No history yet',
    fleet_from_cards: 'Monitoring routes are not available; card count from the card list.',
    shard: 'Shard', heat_legend: 'Cell: due / depth', manual_lists: 'Manual lists', waiting: 'Waiting',
    search: 'Search', iccid_prefix: 'ICCID prefix', msisdn: 'MSISDN', card_id: 'Card id',
    device_id: 'Device id', results: 'results', iccid: 'ICCID', status: 'Status',
    network_status: 'Network', stop_reason: 'Stop reason', carrier: 'Carrier', category: 'Category',
    real_name: 'Real name', card: 'Card', explain: 'Why', evidence: 'Evidence',
    packages: 'Packages', used: 'used', limit: 'limit', unlimited: 'unlimited', valid: 'valid',
    exhausted: 'exhausted', protect: 'Protect', next_due: 'Next due', scheduled: 'Scheduled',
    manual: 'manual', not_queued: 'not queued', would_change: 'What would change it',
    timeline: 'State changes', trigger: 'Trigger', outcome: 'Gateway', when: 'When',
    actions: 'Actions', poll_now: 'Poll now', stop: 'Stop', start: 'Start',
    enable_polling: 'Enable polling', disable_polling: 'Disable polling', done: 'Done',
    matched_config: 'Matched config', usage_month: 'Usage this month', trigger_logs: 'Manual trigger log',
    name: 'Name', priority: 'Priority', enabled: 'Enabled', condition: 'Card condition',
    intervals: 'Intervals (s)', edit: 'Edit', enable: 'Enable', disable: 'Disable', save: 'Save',
    cancel: 'Cancel', dry_run: 'Dry run', new_config: 'New config',
    dry_polled: 'Polled cards', dry_match: 'Would match', dry_interval: 'Would change interval',
    dry_queues: 'Would change queues', dry_new: 'Newly matched', dry_unmatched: 'Newly unmatched',
    dry_first: 'Run the dry run before saving.', rules: 'Rules', metric: 'Metric', threshold: 'Threshold',
    window: 'Window (s)', fired_at: 'Fired', resolved_at: 'Resolved', value: 'Value', notified: 'Notified',
    firing: 'firing', current: 'Current', max: 'Max', default_max: 'Default', set: 'Set',
    table: 'Table', retention_days: 'Retention (days)', preview: 'Preview', rows: 'Rows',
    run_cleanup: 'Run cleanup', progress: 'Progress', logs: 'Logs', started: 'Started',
    finished: 'Finished', rows_deleted: 'Rows deleted', who: 'Who', method: 'Method', route: 'Route',
    path: 'Path', target: 'Target', admin_only: 'Admin keys only', refreshed: 'Updated',
    count: 'Count', scope: 'Scope', verified: 'verified', not_verified: 'not verified', viewer_note: 'Read-only key: write controls are hidden.',
    timezone: 'Time zone', usage_chart: 'Usage this month', month_total: 'Month total (MB)',
    limit_of: 'limit of package', usage_note: 'Hourly, from the usage records; package limits in virtual MB.',
    no_usage: 'No usage recorded this month', new_rule: 'New rule', delete: 'Delete',
    confirm_delete: 'Delete this rule and its history?', cooldown: 'Cooldown (s)', webhook: 'Webhook URL',
    operator: 'Operator', not_valid_now: 'not valid now', secret_once: 'Webhook secret (shown once):', saved: 'Saved', task_any: 'any',
    gateway_calls: 'Gateway calls', polls_by_type: 'Polls and failures by task type',
    backlog_by_type: 'Due backlog by task type', gateway_chart: 'Gateway calls, errors and throttles',
    oldest_chart: 'Oldest due age (s) by task type', per_minute: 'per minute', per_hour: 'per hour',
    per_day: 'per day', all_types: 'all types',
    carriers: 'Carriers', protocol: 'Protocol', base_url: 'Base URL', health: 'Health', budget: 'Budget',
    credentials: 'Credentials', carrier_id: 'Carrier id', new_carrier: 'New carrier',
    test_connection: 'Test connection', testing: 'Testing…', test_ok: 'Connected',
    test_failed: 'Failed', in_flight: 'in flight', batch: 'batch', last_ok: 'Last OK',
    health_unknown: 'no report yet', health_ok: 'ok', health_failing: 'failing',
    health_auth_failed: 'credentials refused', health_disabled: 'disabled', disabled: 'disabled',
    rate_limit_per_sec: 'Calls/s', max_concurrent: 'In flight', batch_size: 'Batch size',
    timeout_ms: 'Timeout (ms)', default_value: 'default', no_credentials: 'none for this protocol',
    unchanged: 'unchanged',
    carrier_budget: 'Carrier budgets', budget_used: 'Used', calls_per_sec: 'calls/s', cards_per_call: 'Cards/call',
    demand: 'Demand', interval: 'Interval', round_time: 'Round at this budget', round_ratio: 'round/interval',
    budget_note: 'Per carrier: calls/s used by all nodes over 5 min and allowed by its bucket; what its scheduled cards ask (cards ÷ (interval × cards per call)); the round each interval takes at this budget (red: longer than the interval). Computed by a worker every minute, last at',
    budget_none: 'No worker has computed the carriers\' budgets in the last 10 minutes.',
    carriers_note: 'Credentials are write-only: they are never shown; leave a field blank to keep it. Health is what the workers last reported.',
  };
  const zh = {
    brand: 'CMP 轮询', pause: '暂停', resume: '继续', logout: '退出',
    overview: '总览', queues: '队列', cards: '卡片', configs: '轮询配置', alerts: '告警',
    concurrency: '并发', cleanup: '数据清理', audit: '审计',
    login_title: '使用 API 密钥登录', api_key: 'API 密钥', login: '登录',
    login_bad: '密钥被拒绝。', not_available: '此服务器不提供该功能',
    loading: '加载中…', none: '无', yes: '是', no: '否', role: '角色',
    fleet: '卡群', total_cards: '卡片数', polling_enabled: '已开启轮询', online: '在线',
    stopped: '已停机', stopped_by: '按原因停机', source: '来源',
    task_type: '任务类型', polls_per_sec: '每秒轮询', failure_rate: '失败率',
    due_backlog: '到期积压', oldest_due: '最久到期时长', decisive: '待决轮询', depth: '深度', due: '到期',
    initializer: '初始化', processed: '已处理', firing_alerts: '触发中的告警',
    history: '历史', range_1h: '1 小时', range_24h: '24 小时', range_30d: '30 天', range_13mo: '13 个月',
    polls: '轮询', failures: '失败', gateway_errors: '网关错误',
    gateway_throttles: '网关限流', no_history: '暂无历史数据',
    fleet_from_cards: '监控接口不可用；卡片数来自卡片列表。',
    shard: '分片', heat_legend: '单元格：到期 / 深度', manual_lists: '手动列表', waiting: '等待',
    search: '搜索', iccid_prefix: 'ICCID 前缀', msisdn: 'MSISDN', card_id: '卡片 ID',
    device_id: '设备 ID', results: '条结果', iccid: 'ICCID', status: '状态',
    network_status: '网络状态', stop_reason: '停机原因', carrier: '运营商', category: '类别',
    real_name: '实名', card: '卡片', explain: '原因', evidence: '依据',
    packages: '套餐', used: '已用', limit: '上限', unlimited: '不限', valid: '有效',
    exhausted: '已用尽', protect: '保护期', next_due: '下次到期', scheduled: '已排程',
    manual: '手动', not_queued: '未入队', would_change: '什么会改变它',
    timeline: '状态变更', trigger: '触发', outcome: '网关', when: '时间',
    actions: '操作', poll_now: '立即轮询', stop: '停机', start: '复机',
    enable_polling: '开启轮询', disable_polling: '关闭轮询', done: '完成',
    matched_config: '匹配的配置', usage_month: '本月用量', trigger_logs: '手动触发日志',
    name: '名称', priority: '优先级', enabled: '启用', condition: '卡片条件',
    intervals: '间隔（秒）', edit: '编辑', enable: '启用', disable: '停用', save: '保存',
    cancel: '取消', dry_run: '试运行', new_config: '新建配置',
    dry_polled: '轮询中的卡', dry_match: '将匹配', dry_interval: '间隔将改变',
    dry_queues: '队列将改变', dry_new: '新匹配', dry_unmatched: '将不再匹配',
    dry_first: '保存前请先试运行。', rules: '规则', metric: '指标', threshold: '阈值',
    window: '窗口（秒）', fired_at: '触发时间', resolved_at: '恢复时间', value: '值', notified: '已通知',
    firing: '触发中', current: '当前', max: '上限', default_max: '默认', set: '设置',
    table: '表', retention_days: '保留（天）', preview: '预览', rows: '行数',
    run_cleanup: '执行清理', progress: '进度', logs: '日志', started: '开始',
    finished: '结束', rows_deleted: '删除行数', who: '操作人', method: '方法', route: '路由',
    path: '路径', target: '对象', admin_only: '仅管理员密钥', refreshed: '更新于',
    count: '数量', scope: '范围', verified: '已实名', not_verified: '未实名', viewer_note: '只读密钥：已隐藏写操作。',
    timezone: '时区', usage_chart: '本月用量', month_total: '当月累计（MB）',
    limit_of: '套餐上限', usage_note: '按小时汇总用量记录；套餐上限为虚拟流量（MB）。',
    no_usage: '本月暂无用量记录', new_rule: '新建规则', delete: '删除',
    confirm_delete: '删除该规则及其历史？', cooldown: '冷却（秒）', webhook: 'Webhook 地址',
    operator: '比较', not_valid_now: '当前无效', secret_once: 'Webhook 密钥（仅显示一次）：', saved: '已保存', task_any: '全部',
    gateway_calls: '网关调用', polls_by_type: '各任务类型轮询与失败',
    backlog_by_type: '各任务类型到期积压', gateway_chart: '网关调用、错误与限流',
    oldest_chart: '各任务类型最久到期时长（秒）', per_minute: '每分钟', per_hour: '每小时',
    per_day: '每天', all_types: '全部类型',
    carriers: '运营商平台', protocol: '协议', base_url: '接口地址', health: '健康状态', budget: '调用预算',
    credentials: '凭据', carrier_id: '运营商 ID', new_carrier: '新建运营商',
    test_connection: '测试连接', testing: '测试中…', test_ok: '连接成功',
    test_failed: '失败', in_flight: '并发', batch: '批量', last_ok: '最近成功',
    health_unknown: '暂无报告', health_ok: '正常', health_failing: '异常',
    health_auth_failed: '凭据被拒绝', health_disabled: '已停用', disabled: '已停用',
    rate_limit_per_sec: '每秒调用', max_concurrent: '最大并发', batch_size: '批量大小',
    timeout_ms: '超时（毫秒）', default_value: '默认', no_credentials: '该协议无需凭据',
    unchanged: '不修改',
    carrier_budget: '运营商调用预算', budget_used: '已用', calls_per_sec: '次/秒', cards_per_call: '每次调用卡数',
    demand: '需求', interval: '间隔', round_time: '此预算下一轮耗时', round_ratio: '轮次/间隔',
    budget_note: '每个运营商：所有节点近 5 分钟每秒调用数与令牌桶允许的每秒调用数；已排程卡片所需（卡数 ÷（间隔 × 每次调用卡数））；此预算下每个间隔一轮所需时间（红色：超过间隔）。由工作节点每分钟计算，最近一次：',
    budget_none: '最近 10 分钟内没有工作节点计算运营商预算。',
    carriers_note: '凭据只写不读：从不显示；留空即保留原值。健康状态为各工作节点最近的报告。',
  };
  const dicts = { en: en, 'zh-CN': zh };
  const pick = function () {
    const saved = localStorage.getItem('cmp.lang');
    if (saved && dicts[saved]) return saved;
    return (navigator.language || 'en').toLowerCase().startsWith('zh') ? 'zh-CN' : 'en';
  };
  let lang = pick();
  // The deployment's zone (CMP_TIMEZONE); undefined until the session names it.
  let zone;
  const I18N = {
    get lang() { return lang; },
    get zone() { return zone; },
    setZone(z) {
      try { new Intl.DateTimeFormat('en', { timeZone: z }); zone = z; } catch (e) { zone = undefined; }
    },
    // An Intl.DateTimeFormat in the chosen locale and the deployment's zone.
    dateFormat(opts) { return new Intl.DateTimeFormat(lang, Object.assign({ timeZone: zone }, opts)); },
    set(l) { if (dicts[l]) { lang = l; localStorage.setItem('cmp.lang', l); } },
    t(key) { return dicts[lang][key] || en[key] || key; },
    num(n, digits) {
      if (n === null || n === undefined || Number.isNaN(Number(n))) return '–';
      return new Intl.NumberFormat(lang, { maximumFractionDigits: digits === undefined ? 0 : digits })
        .format(Number(n));
    },
    pct(x) {
      return new Intl.NumberFormat(lang, { style: 'percent', maximumFractionDigits: 2 }).format(x || 0);
    },
    date(iso) {
      if (!iso) return '–';
      return I18N.dateFormat({ dateStyle: 'medium', timeStyle: 'medium' }).format(new Date(iso));
    },
    secs(s) {
      s = Number(s) || 0;
      if (s < 120) return I18N.num(s) + ' s';
      if (s < 7200) return I18N.num(s / 60, 1) + ' min';
      if (s < 172800) return I18N.num(s / 3600, 1) + ' h';
      return I18N.num(s / 86400, 1) + ' d';
    },
    // Translates the static elements carrying data-t.
    apply(root) {
      document.documentElement.lang = lang;
      (root || document).querySelectorAll('[data-t]').forEach(function (el) {
        el.textContent = I18N.t(el.getAttribute('data-t'));
      });
    },
  };
  window.I18N = I18N;
})();
