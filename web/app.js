// queuectl serve: the browser page. Vanilla JS (ES2020), no build step. The server's CSP is
// default-src 'self': no inline code, and every text from the API goes in via textContent.
'use strict';

// ---------- State ----------
const S = {
  session: { writes: false, refresh_ms: 2000, csrf_token: '', version: '', backend: '', user: null },
  sessionOk: false,
  loop: null,             // the current view's poll loop: {refresh, busy, again, timer}
  skewMs: 0,              // the server's clock minus this one
  lastOk: 0,              // time of the last successful refresh
  flashKind: null,
  stats: null, top: null, schedules: null,   // the last good data, kept when a poll fails
  expanded: new Set(),    // failure groups opened to their ids
};
const STATUSES = ['ready', 'waiting', 'processing', 'done', 'failed', 'canceled'];
const $ = (sel, root = document) => root.querySelector(sel);

// ---------- DOM and formatting helpers ----------
// h('td', {class: 'num', 'data-field': 'ready'}, 'text', node): attributes through setAttribute,
// onX through addEventListener, children as nodes or text nodes (never parsed as HTML).
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid !== null && kid !== undefined && kid !== false) el.append(kid instanceof Node ? kid : String(kid));
  }
  return el;
}
// Replace el's children, skipping null/false (replaceChildren would print "null").
const fill = (el, ...kids) => el.replaceChildren(...Array.from(h('div', {}, ...kids).childNodes));
const wrap = (table) => h('div', { class: 'table-wrap' }, table);
// A tbody's rows, or one muted row saying `empty` across the table.
const setRows = (tbody, rows, empty) => fill(tbody, rows.length ? rows
  : h('tr', {}, h('td', { colspan: tbody.parentNode.querySelectorAll('thead th').length || 1, class: 'empty' }, empty)));
const thead = (cols) => h('thead', {}, h('tr', {}, cols.map(([, label, cls]) => h('th', { class: cls }, label))));
const fmtNum = (n) => (typeof n === 'number' ? n.toLocaleString('en-US') : n == null ? '-' : String(n));
const text = (v) => (v === null || v === undefined || v === '' ? '-' : typeof v === 'object' ? JSON.stringify(v) : String(v));
const jobHref = (id) => '#/job/' + encodeURIComponent(id);
const jobLink = (id) => h('a', { href: jobHref(id) }, String(id));

// "#/jobs?queue=Q&status=S" and friends.
function jobsHref(queue, status, extra) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(Object.assign({ queue, status }, extra))) if (v) p.set(k, v);
  return '#/jobs' + (p.toString() ? '?' + p.toString() : '');
}
// A count, "≥ 10,000" when stats capped it (listed in at_least).
function fmtCount(row, key) {
  const s = fmtNum(row[key]);
  return Array.isArray(row.at_least) && row.at_least.includes(key) ? '≥ ' + s : s;
}
// Seconds as the CLI prints them: 850ms, 45s, 3m12s, 14m, 2h5m, 30h, 3d4h, 40d.
function human(seconds) {
  const x = Math.abs(Number(seconds));
  if (!Number.isFinite(x)) return '-';
  if (x < 1) return Math.floor(x * 1000) + 'ms';
  const s = Math.floor(x), m = Math.floor(s / 60), hr = Math.floor(s / 3600), d = Math.floor(s / 86400);
  const two = (a, ua, b, ub) => a + ua + (b ? b + ub : '');
  if (s < 120) return s + 's';
  if (m < 10) return two(m, 'm', s % 60, 's');
  if (hr < 1) return m + 'm';
  if (hr < 8) return two(hr, 'h', m % 60, 'm');
  if (hr < 48) return hr + 'h';
  if (d < 8) return two(d, 'd', hr % 24, 'h');
  if (d < 730) return d + 'd';
  return two(Math.floor(d / 365), 'y', d % 365, 'd');
}
// RFC 3339 text to epoch ms (NaN when it is not a time); extra fraction digits dropped.
function parseTime(s) {
  if (typeof s !== 'string' || !/^\d{4}-\d\d-\d\d[T ]\d\d:\d\d/.test(s)) return NaN;
  let t = s.trim().replace(' ', 'T').replace(/(\.\d{3})\d+/, '$1');
  if (!/(Z|[+-]\d\d:?\d\d)$/i.test(t)) t += 'Z';
  return Date.parse(t);
}
const serverNow = () => Date.now() + S.skewMs;
function noteServerNow(s) { const t = parseTime(s); if (!Number.isNaN(t)) S.skewMs = t - Date.now(); }
// "3m12s ago" / "in 40s", seen from the server's clock.
function ago(s) {
  const t = parseTime(s);
  if (Number.isNaN(t)) return '';
  const d = (t - serverNow()) / 1000;
  if (Math.abs(d) < 1) return 'now';
  return d > 0 ? 'in ' + human(d) : human(d) + ' ago';
}
const clock = (ms) => new Date(ms).toLocaleTimeString('en-GB', { hour12: false });
function firstLine(s) {
  if (s === null || s === undefined) return '';
  let line = String(s).split('\n')[0];
  if (line.endsWith('\r')) line = line.slice(0, -1);
  return line;
}
// A write's JSON answer in one line: its scalar fields, zero counts left out.
function summarize(d) {
  if (d === null || typeof d !== 'object') return d === null || d === undefined ? 'done' : String(d);
  const parts = Object.entries(d).filter(([, v]) => v !== null && v !== false && typeof v !== 'object');
  const firstNum = parts.findIndex(([, v]) => typeof v === 'number');
  return parts.filter(([, v], i) => i === firstNum || v !== 0).map(([k, v]) => `${k.replace(/_/g, ' ')}: ${v}`).join(', ') || 'done';
}

// ---------- API ----------
// GET (no body) or POST (body) to the API; resolves {data, headers}, rejects with the
// server's {"error"} text (err.status set).
async function api(path, body) {
  const init = { credentials: 'same-origin', headers: { Accept: 'application/json' } };
  if (body !== undefined) {
    init.method = 'POST';
    init.headers['Content-Type'] = 'application/json';
    init.headers['X-CSRF-Token'] = S.session.csrf_token || '';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init).catch((e) => { throw new Error(`${path}: no answer from the server (${e.message})`); });
  const raw = await res.text();
  let data = null;
  try { data = raw ? JSON.parse(raw) : null; } catch (e) { if (res.ok) throw new Error(`${path}: the answer is not JSON`); }
  if (res.ok) return { data, headers: res.headers };
  const err = new Error(data && typeof data.error === 'string' ? data.error : `${res.status} ${res.statusText}`.trim());
  err.status = res.status;
  throw err;
}

async function loadSession() {
  try {
    const { data } = await api('/api/session');
    Object.assign(S.session, data || {});
    const ms = Number(S.session.refresh_ms);
    // serve --refresh takes 200ms to 1h; anything else is no server's.
    S.session.refresh_ms = Number.isFinite(ms) && ms >= 200 && ms <= 3600000 ? ms : 2000;
    S.sessionOk = true;
    clearFlash('session');
  } catch (e) {
    flash(`Could not load the session (the page stays read-only): ${e.message}`, 'session');
  }
  renderMeta();
}

function renderMeta() {
  const s = S.session;
  $('#meta-backend').textContent = s.backend || '-';
  $('#meta-version').textContent = s.version ? 'v' + String(s.version).replace(/^v/, '') : '-';
  const w = $('#meta-writes');
  w.textContent = s.writes ? 'writes on' : 'read-only' + (s.read_only_reason ? ` (${s.read_only_reason})` : '');
  w.className = 'badge ' + (s.writes ? 'warn' : 'ok');
  $('#meta-user').hidden = !s.user;
  $('#meta-user').textContent = s.user ? 'user ' + s.user : '';
}

// ---------- Banner and freshness ----------
// kind: ok (an action worked), error (an action failed), stale (a poll failed), session.
function flash(msg, kind = 'error') {
  const f = $('#flash');
  f.replaceChildren(h('span', { class: 'flash-msg' }, msg),
    h('button', { type: 'button', class: 'flash-close', 'aria-label': 'Dismiss', title: 'Dismiss', onclick: () => clearFlash() }));
  f.className = 'flash flash-' + kind;
  f.hidden = false;
  S.flashKind = kind;
}
function clearFlash(onlyKind) {
  if (onlyKind && S.flashKind !== onlyKind) return;
  $('#flash').hidden = true;
  $('#flash').replaceChildren();
  S.flashKind = null;
}
function fresh() {
  S.lastOk = Date.now();
  $('#last-refresh').textContent = clock(S.lastOk);
  $('#stale-badge').hidden = true;
  $('#view').classList.remove('stale');
  clearFlash('stale');
}
function stale(err) {
  $('#stale-badge').hidden = false;
  $('#view').classList.add('stale');
  const since = S.lastOk ? ` (showing data from ${clock(S.lastOk)})` : '';
  flash(`Refresh failed: ${err.message}${since}`, 'stale');
}

// ---------- Polling: one loop for the current view ----------
function startLoop(refresh) {
  stopLoop();
  S.loop = { refresh, busy: false, again: false, timer: null };
  tick(S.loop);
}
function stopLoop() {
  if (S.loop) clearTimeout(S.loop.timer);
  S.loop = null;
}
// Runs the view's refresh now, then again every refresh_ms while the tab is visible.
async function tick(loop = S.loop) {
  if (!loop || loop !== S.loop) return;
  if (loop.busy) { loop.again = true; return; }
  clearTimeout(loop.timer);
  loop.timer = null;
  if (document.visibilityState === 'hidden') return;   // visibilitychange resumes it
  loop.busy = true;
  try {
    if (!S.sessionOk) {
      await loadSession();
      if (S.sessionOk) { loop.busy = false; route(); return; }   // redraw with the writes flag
    }
    await loop.refresh();
  } catch (e) {
    stale(e);
  } finally {
    loop.busy = false;
  }
  if (loop !== S.loop || document.visibilityState === 'hidden') return;
  const wait = loop.again ? 0 : S.session.refresh_ms;
  loop.again = false;
  loop.timer = setTimeout(() => tick(loop), wait);
}
document.addEventListener('visibilitychange', () => {
  const loop = S.loop;
  if (!loop) return;
  if (document.visibilityState === 'hidden') { clearTimeout(loop.timer); loop.timer = null; }
  else if (!loop.timer && !loop.busy) tick(loop);
});
const refreshButton = () => h('button', { type: 'button', class: 'refresh', onclick: () => tick() }, 'Refresh');
const toolbar = (title, ...more) => h('div', { class: 'toolbar' }, h('h1', {}, title), h('span', { class: 'spacer' }), ...more, refreshButton());

// ---------- Writes ----------
// POST a write (after a confirm for bulk ones), show the outcome in #flash, reload the view.
async function act(btn, label, path, body, confirmText) {
  if (confirmText && !window.confirm(confirmText)) return;
  if (btn) btn.disabled = true;
  try {
    const { data } = await api(path, body);
    flash(`${label}: ${summarize(data)}`, 'ok');
  } catch (e) {
    flash(`${label} failed: ${e.message}`, 'error');
    if (e.status === 403) S.sessionOk = false;   // a stale CSRF token or writes turned off
  } finally {
    if (btn) btn.disabled = false;
  }
  tick();
}
// A button for a write; none at all when writes are off (no data-action anywhere).
function actionButton(action, label, onclick, attrs) {
  if (!S.session.writes) return null;
  const btn = h('button', Object.assign({ type: 'button', 'data-action': action }, attrs || {}), label);
  btn.addEventListener('click', () => onclick(btn));
  return btn;
}
// An error's first line as a filter the server takes: not empty, no control character.
const sendable = (text) => !!text && !/[\x00-\x1f\x7f]/.test(text);
// Every failed job of `queues` whose error contains `text` back to ready (`retry --queue Q
// --error TEXT`, one queue after the other), all of them, not only the 500 shown.
async function retryByError(btn, text, queues) {
  if (!window.confirm(`Retry every failed job of ${queues.join(', ')} whose error contains "${text}"?`)) return;
  btn.disabled = true;
  let retried = 0;
  try {
    for (const queue of queues) retried += (await api('/api/retry', { queue, error: text })).data.retried || 0;
    flash(`retried ${retried} job(s) with "${text}"`, 'ok');
  } catch (e) {
    flash(`retry of "${text}" failed after ${retried} job(s): ${e.message}`, 'error');
    if (e.status === 403) S.sessionOk = false;
  } finally {
    btn.disabled = false;
  }
  tick();
}
// Dead letters of queue `dlq` back where they failed: a dry run first, to count them.
async function moveDeadLetters(btn, dlq) {
  try {
    const { data } = await api('/api/move', { from: dlq, dry_run: true });
    const n = data && typeof data.would_move === 'number' ? data.would_move : null;
    if (n === 0) { flash(`No dead letters in ${dlq}`, 'ok'); return; }
    await act(btn, `move ${dlq}`, '/api/move', { from: dlq },
      `Move ${n === null ? 'every' : n} dead letter(s) from ${dlq} back to the queues they failed in?`);
  } catch (e) {
    flash(`move ${dlq} failed: ${e.message}`, 'error');
  }
}

// Queue names for the inputs' <datalist>, from the last stats (fetched once if none yet).
async function queueNames() {
  if (!S.stats) {
    try { S.stats = (await api('/api/stats')).data; } catch (e) { return; }
  }
  const list = $('#queue-names');
  if (list.children.length) return;
  for (const q of S.stats || []) list.append(h('option', { value: q.queue }));
}

// ---------- Router ----------
const VIEWS = { overview: viewOverview, jobs: viewJobs, job: viewJob, workers: viewWorkers, failures: viewFailures, groups: viewGroups };

function parseRoute() {
  const raw = location.hash.replace(/^#\/?/, '');
  const q = raw.indexOf('?');
  const path = q < 0 ? raw : raw.slice(0, q);
  const parts = path.split('/').filter(Boolean).map((p) => { try { return decodeURIComponent(p); } catch (e) { return p; } });
  return { name: parts[0] || 'overview', arg: parts[1] || null, params: new URLSearchParams(q < 0 ? '' : raw.slice(q + 1)) };
}
function route() {
  const r = parseRoute();
  const view = VIEWS[r.name] || viewUnknown;
  stopLoop();
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('active', a.dataset.nav === r.name || (r.name === 'job' && a.dataset.nav === 'jobs'));
  }
  const root = $('#view');
  root.replaceChildren();
  root.classList.remove('stale');
  const refresh = view(root, r);   // draws the view's frame, returns its refresh
  if (refresh) startLoop(refresh);
}
function viewUnknown(root) {
  root.append(h('p', { class: 'empty' }, 'No such page. ', h('a', { href: '#/' }, 'Back to the overview')));
}

// ---------- Overview ----------
const OVERVIEW_COLS = [['queue', 'Queue'], ['ready', 'Ready', 'num'], ['scheduled', 'Sched', 'num'],
  ['waiting', 'Waiting', 'num'], ['processing', 'Proc', 'num'], ['expired_leases', 'Expired', 'num'],
  ['done', 'Done', 'num'], ['failed', 'Failed', 'num'], ['canceled', 'Canceled', 'num'],
  ['oldest', 'Oldest ready', 'num'], ['throughput', 'Done/min', 'num'], ['flags', 'Flags']];

function viewOverview(root) {
  const cols = OVERVIEW_COLS.concat(S.session.writes ? [['actions', '']] : []);
  const tbody = h('tbody');
  const totals = h('div', { class: 'totals' });
  const late = h('section', { class: 'late', hidden: true });
  const scheds = h('section', { class: 'schedules', hidden: true });
  root.append(toolbar('Queues'), totals, wrap(h('table', { id: 'overview' }, thead(cols), tbody)), late, scheds);
  let n = 0;
  return async () => {
    const calls = [api('/api/stats'), api('/api/top')];
    if (n++ % 10 === 0) calls.push(api('/api/schedules'));   // schedules change rarely
    const [st, tp, sc] = await Promise.allSettled(calls);
    if (st.status === 'fulfilled') S.stats = st.value.data || [];
    if (tp.status === 'fulfilled') { S.top = tp.value.data || {}; noteServerNow(S.top.now); }
    if (sc && sc.status === 'fulfilled') S.schedules = sc.value.data || [];
    drawQueues(tbody, totals);
    drawLate(late);
    drawSchedules(scheds, sc && sc.status === 'rejected' ? sc.reason : null);
    const bad = [st, tp].find((r) => r.status === 'rejected');
    if (bad) throw bad.reason;
    fresh();
  };
}

function queueFlags(q) {
  const f = [];
  if (q.paused) f.push('paused');
  if (q.strict_groups) f.push('strict');
  if (q.max_processing !== null && q.max_processing !== undefined) f.push('max=' + q.max_processing);
  if (q.rate) f.push('rate=' + q.rate + (q.rate_per_key ? '/key' : ''));
  if (q.dead_letter) f.push('dlq=' + q.dead_letter);
  if (q.retain) f.push('retain=' + q.retain);
  if (q.keep_done === false) f.push('keep-done=off');
  return f.length ? f.join(', ') : '-';
}

function drawQueues(tbody, totals) {
  const stats = Array.isArray(S.stats) ? S.stats : [];
  const top = new Map(((S.top && S.top.queues) || []).map((t) => [t.queue, t]));
  const cell = (field, value, cls) => h('td', { 'data-field': field, class: cls }, value);
  const num = (q, field, warnIf) => cell(field, fmtCount(q, field), 'num' + (q[field] === 0 ? ' zero' : warnIf && q[field] > 0 ? ' ' + warnIf : ''));
  const sum = { ready: 0, processing: 0, expired_leases: 0, failed: 0, throughput: 0 };
  const rows = stats.map((q) => {
    const t = top.get(q.queue);
    const tput = t ? t.done_last_minute : S.top ? 0 : null;   // top leaves out idle queues
    for (const k of ['ready', 'processing', 'expired_leases', 'failed']) sum[k] += Number(q[k]) || 0;
    sum.throughput += Number(tput) || 0;
    const oldest = q.oldest_ready_age_seconds;
    return h('tr', { 'data-queue': q.queue, class: q.paused ? 'paused' : null },
      h('td', { 'data-field': 'queue' }, h('a', { href: jobsHref(q.queue) }, q.queue)),
      num(q, 'ready'), num(q, 'scheduled'), num(q, 'waiting'), num(q, 'processing'),
      num(q, 'expired_leases', 'warn'), num(q, 'done'),
      cell('failed', h('a', { href: jobsHref(q.queue, 'failed') }, fmtCount(q, 'failed')), 'num' + (q.failed > 0 ? ' bad' : ' zero')),
      num(q, 'canceled'),
      cell('oldest', oldest === null || oldest === undefined ? '-' : human(oldest), 'num' + (oldest > 300 ? ' warn' : '')),
      cell('throughput', tput === null ? '-' : fmtNum(tput), 'num'),
      cell('flags', queueFlags(q), q.paused ? 'warn' : null),
      S.session.writes ? h('td', { class: 'actions' }, q.paused
        ? actionButton('resume', 'Resume', (b) => act(b, `resume ${q.queue}`, '/api/resume', { queue: q.queue }), { 'data-queue': q.queue, class: 'small' })
        : actionButton('pause', 'Pause', (b) => act(b, `pause ${q.queue}`, '/api/pause', { queue: q.queue }), { 'data-queue': q.queue, class: 'small' })) : null);
  });
  setRows(tbody, rows, 'No queues yet.');
  const card = (label, value, bad) => h('div', { class: 'card' + (bad ? ' bad' : '') }, h('b', {}, fmtNum(value)), h('span', {}, label));
  totals.replaceChildren(card('ready', sum.ready), card('processing', sum.processing),
    card('expired leases', sum.expired_leases, sum.expired_leases > 0), card('failed', sum.failed, sum.failed > 0),
    card('done last minute', sum.throughput), card('workers', ((S.top && S.top.workers) || []).length));
}

function drawLate(section) {
  const late = (S.top && S.top.late_schedules) || [];
  section.hidden = !late.length;
  if (!late.length) return;
  section.replaceChildren(h('h2', { class: 'warn' }, 'Late schedules'), wrap(h('table', { id: 'late-schedules' },
    thead([['name', 'Schedule'], ['queue', 'Queue'], ['late', 'Late by', 'num']]),
    h('tbody', {}, late.map((l) => h('tr', { 'data-schedule': l.name },
      h('td', {}, l.name), h('td', {}, h('a', { href: jobsHref(l.queue) }, l.queue)),
      h('td', { class: 'num warn' }, human(l.late_seconds))))))));
}

function drawSchedules(section, err) {
  const list = Array.isArray(S.schedules) ? S.schedules : [];
  section.hidden = !list.length && !err;
  if (section.hidden) return;
  const rows = list.map((s) => {
    const state = s.paused ? 'paused' : s.late ? 'LATE' : 'ok';
    const last = s.last_run_at ? [ago(s.last_run_at) || s.last_run_at,
      s.last_job_id ? [', job ', jobLink(s.last_job_id), ' ', s.last_job_status || 'purged'] : null] : '-';
    return h('tr', { 'data-schedule': s.name },
      h('td', {}, s.name), h('td', { class: 'mono' }, text(s.schedule)), h('td', {}, text(s.tz)),
      h('td', {}, h('a', { href: jobsHref(s.queue) }, s.queue)),
      h('td', { title: s.next_run_at || '' }, text(s.next_run_local || s.next_run_at), h('span', { class: 'rel' }, ago(s.next_run_at))),
      h('td', {}, last),
      h('td', { class: state === 'LATE' ? 'bad' : state === 'paused' ? 'warn' : null }, state));
  });
  fill(section, h('h2', {}, 'Schedules'),
    err ? h('p', { class: 'note bad' }, `Schedules not refreshed: ${err.message}`) : null,
    list.length ? wrap(h('table', { id: 'schedules' }, thead([['name', 'Name'], ['schedule', 'Schedule'], ['tz', 'TZ'],
      ['queue', 'Queue'], ['next', 'Next run'], ['last', 'Last run'], ['state', 'State']]), h('tbody', {}, rows))) : null);
}

// ---------- Jobs list ----------
function viewJobs(root, r) {
  const p = r.params, queue = p.get('queue') || '', status = p.get('status') || '', newest = p.get('newest_first') === '1';
  const groupKey = p.get('group_key') || '', errorText = p.get('error') || '';
  // An id range: ids above `after` and below `before`. Paging moves the bound on the side
  // it pages from (after, oldest first; before, newest first) and keeps the other.
  const after = p.get('after') || '', before = p.get('before') || '';
  const cursor = newest ? before : after;
  const filters = { newest_first: newest ? '1' : '', group_key: groupKey, error: errorText };
  const fixedBound = newest ? { after } : { before };
  const statusSel = h('select', { id: 'filter-status', name: 'status' }, h('option', { value: '' }, 'any status'),
    STATUSES.concat(status && !STATUSES.includes(status) ? [status] : []).map((s) => h('option', { value: s, selected: s === status }, s)));
  const queueIn = h('input', { id: 'filter-queue', name: 'queue', value: queue, list: 'queue-names', placeholder: 'all queues', autocomplete: 'off' });
  const newestIn = h('input', { type: 'checkbox', id: 'filter-newest', checked: newest });
  const groupIn = h('input', { id: 'filter-group', name: 'group_key', value: groupKey, placeholder: 'exactly', autocomplete: 'off' });
  const errorIn = h('input', { id: 'filter-error', name: 'error', value: errorText, placeholder: 'contains (case-sensitive)', autocomplete: 'off' });
  const afterIn = h('input', { id: 'filter-after', name: 'after', value: after, placeholder: 'id', inputmode: 'numeric', size: 10, autocomplete: 'off' });
  const beforeIn = h('input', { id: 'filter-before', name: 'before', value: before, placeholder: 'id', inputmode: 'numeric', size: 10, autocomplete: 'off' });
  const form = h('form', { class: 'filters' },
    h('label', {}, 'Queue', queueIn), h('label', {}, 'Status', statusSel),
    h('label', {}, 'Group key', groupIn), h('label', {}, 'Error text', errorIn),
    h('label', {}, 'Ids above', afterIn), h('label', {}, 'below', beforeIn),
    h('label', { class: 'check' }, newestIn, 'newest first'), h('button', { type: 'submit' }, 'Apply'));
  // Writes on, one queue named, a status cancel takes (or none: ready, waiting, failed), no id
  // range (`cancel` takes none; a page after the first has one): cancel every job the
  // filter names, on the server, a batch at a time (`cancel --queue`).
  const cancelable = ['', 'ready', 'waiting', 'failed'].includes(status) && !after && !before;
  const cancelAll = queue && cancelable ? actionButton('cancel-matching', 'Cancel all matching', (b) => {
    const body = { queue };
    if (status) body.status = status;
    if (groupKey) body.group_key = groupKey;
    if (errorText) body.error = errorText;
    act(b, `cancel matching jobs of ${queue}`, '/api/cancel', body,
      `Cancel every ${status || 'ready, waiting or failed'} job of ${queue}` +
      (groupKey ? ` in group ${groupKey}` : '') + (errorText ? ` whose error contains "${errorText}"` : '') +
      ', not only this page?');
  }, { class: 'danger' }) : null;
  const note = h('p', { class: 'note' });
  const tbody = h('tbody');
  const nextBtn = h('button', { type: 'button', disabled: true }, 'Next page');
  const pager = h('div', { class: 'toolbar' },
    cursor ? h('a', { href: jobsHref(queue, status, Object.assign({}, filters, fixedBound)) }, 'First page') : null, nextBtn, cancelAll);
  root.append(toolbar('Jobs'), form, note, wrap(h('table', { id: 'jobs' },
    thead([['id', 'ID', 'num'], ['queue', 'Queue'], ['status', 'Status'], ['attempts', 'Attempts', 'num'],
      ['run_at', 'Run at'], ['group_key', 'Group'], ['last_error', 'Last error']]), tbody)), pager);

  let rows = [], next = null;
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const to = jobsHref(queueIn.value.trim(), statusSel.value, { newest_first: newestIn.checked ? '1' : '',
      group_key: groupIn.value.trim(), error: errorIn.value, after: afterIn.value.trim(), before: beforeIn.value.trim() });
    if (location.hash === to) tick(); else location.hash = to;
  });
  nextBtn.addEventListener('click', () => {
    if (next) location.hash = jobsHref(queue, status, Object.assign({}, filters, fixedBound, newest ? { before: next } : { after: next }));
  });
  const draw = () => {
    setRows(tbody, rows.map((j) => h('tr', { 'data-job-id': j.id },
      h('td', { 'data-field': 'id', class: 'num' }, jobLink(j.id)),
      h('td', { 'data-field': 'queue' }, h('a', { href: jobsHref(j.queue, status) }, j.queue)),
      h('td', { 'data-field': 'status', class: 'st st-' + j.status }, j.status),
      h('td', { 'data-field': 'attempts', class: 'num' }, `${j.attempts}`),
      h('td', { 'data-field': 'run_at', title: ago(j.run_at) }, text(j.run_at)),
      h('td', { 'data-field': 'group_key' }, j.group_key || ''),
      h('td', { 'data-field': 'last_error', class: 'err', title: firstLine(j.last_error) }, firstLine(j.last_error)))),
      'No jobs.');
    note.textContent = `${rows.length} job(s) on this page${next ? ', more follow' : ''}.`;
    nextBtn.disabled = !next;
  };

  queueNames();
  return async () => {
    const q = new URLSearchParams({ limit: '100' });
    for (const [k, v] of [['queue', queue], ['status', status], ['newest_first', newest ? '1' : ''],
      ['group_key', groupKey], ['error', errorText], ['after', after], ['before', before]]) if (v) q.set(k, v);
    const res = await api('/api/jobs?' + q.toString());
    rows = Array.isArray(res.data) ? res.data : [];
    next = res.headers.get('X-Queuectl-Next');
    draw();
    fresh();
  };
}

// ---------- Job page ----------
function viewJob(root, r) {
  const id = r.arg || '';
  if (!/^\d+$/.test(id)) { root.append(h('p', { class: 'empty' }, `"${id}" is not a job id.`)); return null; }
  const sec = h('section', { id: 'job-detail', 'data-job-id': id });
  root.append(toolbar('Job ' + id), sec);
  return async () => {
    let job;
    try {
      job = (await api('/api/jobs/' + id)).data;
    } catch (e) {
      if (e.status !== 404) throw e;
      sec.replaceChildren(h('p', { class: 'empty' }, e.message));
      flash(e.message, 'error');
      return fresh();
    }
    // Not while the reader selects text (copying a payload): a redraw would drop it.
    const sel = window.getSelection();
    if (!(sel && !sel.isCollapsed && sec.contains(sel.anchorNode))) drawJob(sec, job || {});
    fresh();
  };
}

const JSON_FIELDS = new Set(['payload', 'result', 'checkpoint']);

function drawJob(sec, j) {
  const id = j.id;
  // One field: <dt>name</dt><dd><span data-field=name>value</span> extra</dd>.
  const field = (name, valueNode, extra) => [h('dt', {}, name), h('dd', {}, valueNode || h('span', { 'data-field': name }, text(j[name])), extra)];
  const timeField = (name) => field(name, null, j[name] ? h('span', { class: 'rel' },
    name === 'run_at' && j.status === 'waiting' ? '(waiting for other jobs)' : ago(j[name])) : null);
  const group = (title, ...items) => h('section', { class: 'kv-group' }, h('h2', {}, title), h('dl', { class: 'kv' }, ...items));
  const pre = (name, cls) => h('div', { class: 'kv-group' }, h('h2', {}, name),
    h('pre', { 'data-field': name, class: cls }, j[name] === null || j[name] === undefined ? '-'
      : JSON_FIELDS.has(name) ? JSON.stringify(j[name], null, 2) : String(j[name])));

  // Lease: time left, from the server's clock.
  let left = null;
  const until = parseTime(j.lock_until);
  if (!Number.isNaN(until)) {
    const s = (until - serverNow()) / 1000;
    left = h('span', { class: s < 0 ? 'bad' : null, 'data-field': 'seconds_left' }, s < 0 ? `expired ${human(s)} ago` : `${human(s)} left`);
  } else if (j.status === 'processing') {
    left = h('span', { class: 'warn', 'data-field': 'seconds_left' }, 'no lease');
  }

  const actions = [];
  if (['failed', 'canceled'].includes(j.status)) {
    actions.push(actionButton('retry', 'Retry', (b) => act(b, `retry job ${id}`, '/api/retry', { ids: [id] })));
  }
  if (['ready', 'waiting', 'processing'].includes(j.status)) {
    actions.push(actionButton('cancel', j.status === 'processing' ? 'Cancel (force)' : 'Cancel',
      (b) => act(b, `cancel job ${id}`, '/api/cancel', { ids: [id], force: j.status === 'processing' }), { class: 'danger' }));
  }
  const pct = typeof j.progress === 'number' ? j.progress : null;
  // The error first (under the actions) when there is one or the job failed: on-call reads it first.
  const errorFirst = j.status === 'failed' || (j.last_error !== null && j.last_error !== undefined);

  fill(sec,
    actions.some(Boolean) ? h('div', { class: 'actions' }, actions) : null,
    errorFirst ? pre('last_error', 'error-text') : null,
    h('div', { class: 'detail-grid' },
      group('Job',
        field('id'), field('queue', h('a', { href: jobsHref(j.queue), 'data-field': 'queue' }, text(j.queue))),
        field('status', h('span', { 'data-field': 'status', class: 'st st-' + j.status }, text(j.status))),
        field('priority'),
        field('attempts', [h('span', { 'data-field': 'attempts' }, text(j.attempts)), ' / ', h('span', { 'data-field': 'max_attempts' }, text(j.max_attempts))]),
        field('group_key'),
        field('dedupe_key'),
        field('dead_from', j.dead_from ? h('a', { href: jobsHref(j.dead_from), 'data-field': 'dead_from', title: 'jobs of the original queue' }, j.dead_from) : null)),
      group('Times', ...['run_at', 'created_at', 'updated_at', 'finished_at'].map(timeField)),
      group('Lease', field('locked_by'), field('lock_token'), timeField('locked_at'), timeField('lock_until'),
        left ? [h('dt', {}, 'time left'), h('dd', {}, left)] : null),
      group('Progress and tracing',
        field('progress', h('span', { 'data-field': 'progress' }, pct === null ? '-' : String(pct)),
          pct === null ? null : [h('span', { class: 'rel' }, '%'), h('progress', { max: 100, value: Math.max(0, Math.min(100, pct)) })]),
        field('progress_note'), field('trace_parent'), field('trace_state'))),
    pre('payload'), pre('result'), pre('checkpoint'), errorFirst ? null : pre('last_error', 'error-text'));
}

// ---------- Workers ----------
// One row per lease (tr[data-worker]); the worker's totals (from /api/top) on its first row.
function viewWorkers(root) {
  const tbody = h('tbody');
  root.append(toolbar('Workers'), wrap(h('table', { id: 'workers' }, thead([['worker', 'Worker'], ['leases', 'Leases', 'num'], ['id', 'Job', 'num'],
    ['queue', 'Queue'], ['locked_at', 'Locked'], ['seconds_left', 'Time left', 'num'], ['expired', 'Expired']]), tbody)));
  return async () => {
    const [tp, ls] = await Promise.all([api('/api/top'), api('/api/leases?limit=1000')]);
    const top = tp.data || {};
    noteServerNow(top.now);
    const byWorker = new Map();   // '' for leases without a worker name
    for (const w of top.workers || []) byWorker.set(w.worker || '', { total: w, jobs: [] });
    for (const l of Array.isArray(ls.data) ? ls.data : []) {
      const k = l.locked_by || '';
      if (!byWorker.has(k)) byWorker.set(k, { total: null, jobs: [] });
      byWorker.get(k).jobs.push(l);
    }
    const rows = [];
    for (const [k, w] of byWorker) {
      const leases = w.total ? w.total.leases : w.jobs.length, expired = w.total ? w.total.expired : w.jobs.filter((l) => l.expired).length;
      const total = `${fmtNum(leases)}${expired ? ` (${fmtNum(expired)} expired)` : ''}`;
      (w.jobs.length ? w.jobs : [null]).forEach((l, i) => {   // null: a worker whose leases were not loaded
        const secs = l && l.seconds_left;
        const left = !l ? '' : l.unleased ? 'no lease' : typeof secs !== 'number' ? '-' : (secs < 0 ? '-' : '') + human(secs);
        rows.push(h('tr', { 'data-worker': k, class: l && l.expired ? 'expired' : null },
          h('td', { 'data-field': 'worker' }, k || '(no worker)'),
          h('td', { 'data-field': 'leases', class: 'num' + (expired ? ' bad' : '') }, i ? '' : total),
          h('td', { 'data-field': 'id', class: 'num' }, l ? jobLink(l.id) : ''),
          h('td', { 'data-field': 'queue' }, l ? h('a', { href: jobsHref(l.queue) }, l.queue) : ''),
          h('td', { 'data-field': 'locked_at', title: l ? text(l.locked_at) : null }, l ? ago(l.locked_at) || text(l.locked_at) : ''),
          h('td', { 'data-field': 'seconds_left', class: 'num' + (l && (l.expired || l.unleased) ? ' bad' : '') }, left),
          h('td', { 'data-field': 'expired', class: l && l.expired ? 'bad' : null }, l ? (l.expired ? 'yes' : 'no') : '')));
      });
    }
    setRows(tbody, rows, 'No worker holds a lease.');
    fresh();
  };
}

// ---------- Failures ----------
function viewFailures(root) {
  const queues = h('section'), tbody = h('tbody'), note = h('p', { class: 'note' });
  root.append(toolbar('Failures'), queues, h('h2', {}, 'By error'), note,
    wrap(h('table', { id: 'failures' }, thead([['error', 'Error (first line)'], ['count', 'Count', 'num'],
      ['queues', 'Queues'], ['newest', 'Newest', 'num'], ['ids', '']]), tbody)));
  const LIMIT = 500;
  let jobs = [];
  const draw = () => {
    const groups = new Map();
    for (const j of jobs) {
      const key = firstLine(j.error);  // /api/top's failures: newest first, by the failed index
      if (!groups.has(key)) groups.set(key, { count: 0, queues: new Set(), ids: [], newest: j.id });
      const g = groups.get(key);
      g.count++; g.queues.add(j.queue); g.ids.push(j.id);
      if (j.id > g.newest) g.newest = j.id;
    }
    const rows = [];
    for (const [key, g] of [...groups].sort((a, b) => b[1].count - a[1].count || b[1].newest - a[1].newest)) {
      const open = S.expanded.has(key);
      const toggle = h('button', { type: 'button', class: 'small toggle', 'aria-expanded': open ? 'true' : 'false' }, open ? 'hide ids' : 'ids');
      toggle.addEventListener('click', () => { if (open) S.expanded.delete(key); else S.expanded.add(key); draw(); });
      const qs = [...g.queues].sort();
      rows.push(h('tr', { 'data-error-group': key },
        h('td', { 'data-field': 'error', class: 'err', title: key }, key || '(no error text)'),
        h('td', { 'data-field': 'count', class: 'num' }, fmtNum(g.count)),
        // Each queue's failed jobs with this error (the server's --error; a first line
        // with a control character in it cannot be sent, so those list them all).
        h('td', { 'data-field': 'queues' }, qs.map((q, i) => [i ? ', ' : '',
          h('a', { href: jobsHref(q, 'failed', sendable(key) ? { error: key } : {}) }, q)])),
        h('td', { 'data-field': 'newest', class: 'num' }, jobLink(g.newest)),
        h('td', {}, toggle, ' ', sendable(key) ? actionButton('retry-error', 'Retry all', (b) => retryByError(b, key, qs)) : null)));
      if (open) rows.push(h('tr', { class: 'ids-row' }, h('td', { colspan: 5 }, g.ids.map((i) => [jobLink(i), ' ']))));
    }
    setRows(tbody, rows, 'No failed jobs.');
    note.textContent = jobs.length >= LIMIT
      ? `Grouped from the newest ${LIMIT} failed jobs only; the per-queue counts above are complete.`
      : `${fmtNum(jobs.length)} failed job(s), newest first.`;
    drawFailureQueues(queues);
  };
  return async () => {
    const [jr, sr] = await Promise.allSettled([api(`/api/top?failures=${LIMIT}`), api('/api/stats')]);
    if (jr.status === 'fulfilled') jobs = jr.value.data && Array.isArray(jr.value.data.failures) ? jr.value.data.failures : [];
    if (sr.status === 'fulfilled') S.stats = sr.value.data || [];
    draw();
    const bad = [jr, sr].find((x) => x.status === 'rejected');
    if (bad) throw bad.reason;
    fresh();
  };
}

// Per queue: failed count, dead-letter queue, and (writes on) the bulk actions.
function drawFailureQueues(section) {
  const list = (Array.isArray(S.stats) ? S.stats : []).filter((q) => q.failed > 0 || q.dead_letter);
  if (!list.length) { section.replaceChildren(); return; }
  const w = S.session.writes;
  section.replaceChildren(h('h2', {}, 'By queue'), wrap(h('table', { id: 'failure-queues' },
    thead([['queue', 'Queue'], ['failed', 'Failed', 'num'], ['dlq', 'Dead letters go to']].concat(w ? [['actions', '']] : [])),
    h('tbody', {}, list.map((q) => h('tr', { 'data-queue': q.queue },
      h('td', {}, h('a', { href: jobsHref(q.queue, 'failed') }, q.queue)),
      h('td', { class: 'num' + (q.failed > 0 ? ' bad' : ' zero') }, fmtCount(q, 'failed')),
      h('td', {}, q.dead_letter ? h('a', { href: jobsHref(q.dead_letter) }, q.dead_letter) : '-'),
      w ? h('td', { class: 'actions' },
        q.failed > 0 ? actionButton('retry-queue', 'Retry all failed', (b) => act(b, `retry failed of ${q.queue}`, '/api/retry', { queue: q.queue },
          `Retry every failed job of queue ${q.queue} (${fmtCount(q, 'failed')})?`), { 'data-queue': q.queue, class: 'small' }) : null,
        q.dead_letter ? actionButton('move', 'Move dead letters', (b) => moveDeadLetters(b, q.dead_letter), { 'data-queue': q.dead_letter, class: 'small' }) : null)
        : null))))));
}

// ---------- Groups ----------
function viewGroups(root, r) {
  const queue = r.params.get('queue') || '', blocked = r.params.get('blocked') === '1';
  const queueIn = h('input', { id: 'groups-queue', name: 'queue', value: queue, list: 'queue-names', placeholder: 'queue', required: true, autocomplete: 'off' });
  const blockedIn = h('input', { type: 'checkbox', id: 'groups-blocked', checked: blocked });
  const form = h('form', { class: 'filters' }, h('label', {}, 'Queue', queueIn),
    h('label', { class: 'check' }, blockedIn, 'blocked only'), h('button', { type: 'submit' }, 'Show'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const p = new URLSearchParams({ queue: queueIn.value.trim() });
    if (blockedIn.checked) p.set('blocked', '1');
    const to = '#/groups?' + p.toString();
    if (location.hash === to) tick(); else location.hash = to;
  });
  const body = h('div');
  root.append(toolbar('Ordered groups'), form, body);
  queueNames();
  if (!queue) { body.append(h('p', { class: 'empty' }, 'Pick a queue to see its busy and blocked groups.')); return null; }
  return async () => {
    const p = new URLSearchParams({ queue });
    if (blocked) p.set('blocked', '1');
    const { data } = await api('/api/groups?' + p.toString());
    const rows = Array.isArray(data) ? data : [];
    // Columns: every key of the CLI's objects, in the order first seen.
    const keys = [];
    for (const g of rows) for (const k of Object.keys(g || {})) if (!keys.includes(k)) keys.push(k);
    const cellOf = (k, v) => {
      if ((k === 'head_id' || k === 'id') && v !== null && v !== undefined) return h('td', { 'data-field': k, class: 'num' }, jobLink(v));
      if (k === 'last_error') return h('td', { 'data-field': k, class: 'err', title: text(v) }, v ? firstLine(v) : '-');
      if (k.endsWith('_seconds') && typeof v === 'number') return h('td', { 'data-field': k, class: 'num', title: `${v}s` }, human(v));
      return h('td', { 'data-field': k, class: typeof v === 'number' ? 'num' : k === 'state' && v === 'blocked' ? 'bad' : null }, text(v));
    };
    body.replaceChildren(rows.length
      ? wrap(h('table', { id: 'groups' }, thead(keys.map((k) => [k, k.replace(/_/g, ' ')])),
        h('tbody', {}, rows.map((g) => h('tr', { 'data-group': text(g.group_key) }, keys.map((k) => cellOf(k, g[k])))))))
      : h('p', { class: 'empty', id: 'groups-empty' }, `No ${blocked ? 'blocked' : 'busy or blocked'} groups in ${queue}.`));
    fresh();
  };
}

// ---------- Start ----------
window.addEventListener('hashchange', () => { clearFlash(); route(); });
loadSession().then(route);
