// The QueueBox console. Every value from the relay is shown with textContent, never as markup: payloads and
// errors are untrusted input. The token lives in this page's memory only (no cookie, no storage, no URL).
'use strict';
(function () {
  const API = 'api/';
  const SVG = 'http://www.w3.org/2000/svg';
  let token = '';
  let session = null;
  let pending = null; // the replay waiting for confirmation
  let refreshMs = 3000;

  const $ = (id) => document.getElementById(id);

  function text(id, value) {
    $(id).textContent = value === null || value === undefined ? '–' : String(value);
  }

  function say(message, isError) {
    const el = $('message');
    el.textContent = message;
    el.className = isError ? 'error' : '';
  }

  function headers(extra) {
    const h = Object.assign({ 'Accept': 'application/json' }, extra || {});
    if (token) {
      h['Authorization'] = 'Bearer ' + token;
    }
    return h;
  }

  async function getJson(path) {
    const response = await fetch(API + path, { headers: headers(), credentials: 'same-origin', cache: 'no-store' });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) {
      throw new Error(body.error || ('HTTP ' + response.status));
    }
    return body;
  }

  async function postJson(path, payload, retried) {
    if (!session) {
      session = await getJson('session');
    }
    const response = await fetch(API + path, {
      method: 'POST',
      credentials: 'same-origin',
      headers: headers({ 'Content-Type': 'application/json', 'X-CSRF-Token': session.csrfToken }),
      body: JSON.stringify(payload)
    });
    const body = await response.json().catch(() => ({}));
    // Another tab's session replaced the CSRF cookie: take a fresh token once and try again.
    if (response.status === 403 && !retried && String(body.error).indexOf('CSRF') >= 0) {
      session = await getJson('session');
      return postJson(path, payload, true);
    }
    if (!response.ok) {
      throw new Error(body.error || ('HTTP ' + response.status));
    }
    return body;
  }

  function duration(ms) {
    if (ms === null || ms === undefined || Number.isNaN(ms)) {
      return '–';
    }
    if (ms < 1000) {
      return Math.round(ms) + ' ms';
    }
    const s = ms / 1000;
    if (s < 120) {
      return s.toFixed(1) + ' s';
    }
    return Math.round(s / 60) + ' min';
  }

  function bytes(n) {
    if (n === null || n === undefined) {
      return 'unknown';
    }
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    let v = n;
    while (v >= 1024 && i < units.length - 1) {
      v /= 1024;
      i++;
    }
    return (i === 0 ? v : v.toFixed(1)) + ' ' + units[i];
  }

  // A line chart in plain SVG: one polyline per series, scaled to the series' own maximum.
  function chart(id, rangeId, points, series) {
    const svg = $(id);
    while (svg.firstChild) {
      svg.removeChild(svg.firstChild);
    }
    const values = [];
    series.forEach((s) => points.forEach((p) => {
      const v = s.value(p);
      if (v !== null && v >= 0 && Number.isFinite(v)) {
        values.push(v);
      }
    }));
    const max = values.length ? Math.max(...values, 1e-9) : 1;
    const n = Math.max(points.length - 1, 1);
    series.forEach((s) => {
      const coords = [];
      points.forEach((p, i) => {
        const v = s.value(p);
        if (v !== null && v >= 0 && Number.isFinite(v)) {
          coords.push((i / n * 300).toFixed(1) + ',' + (98 - v / max * 94).toFixed(1));
        }
      });
      if (coords.length === 1) {
        coords.push('300,' + coords[0].split(',')[1]);
      }
      const line = document.createElementNS(SVG, 'polyline');
      line.setAttribute('points', coords.join(' '));
      line.setAttribute('fill', 'none');
      line.setAttribute('stroke', s.color);
      line.setAttribute('stroke-width', '2');
      line.setAttribute('vector-effect', 'non-scaling-stroke');
      svg.appendChild(line);
    });
    text(rangeId, points.length ? ('max ' + (Math.round(max * 100) / 100) + ' over ' + points.length + ' points') : 'no points yet');
  }

  async function refreshOverview() {
    const o = await getJson('overview');
    text('backlog-pending', o.backlog.pending);
    text('backlog-leased', o.backlog.leased);
    text('backlog-parked', o.backlog.parked);
    text('backlog-oldest', o.backlog.oldestPendingAgeMs === null ? 'none pending' : duration(o.backlog.oldestPendingAgeMs));
    const points = o.points;
    chart('chart-backlog', 'range-backlog', points, [{ color: '#1f5fbf', value: (p) => p.pending }]);
    chart('chart-age', 'range-age', points, [{ color: '#b26a00', value: (p) => p.oldestPendingAgeMs / 1000 }]);
    chart('chart-rate', 'range-rate', points, [{ color: '#1b7f3b', value: (p) => p.publishedPerSecond }]);
    chart('chart-latency', 'range-latency', points, [
      { color: '#6b3fa0', value: (p) => p.latencyP50Ms },
      { color: '#c2185b', value: (p) => p.latencyMaxMs }
    ]);
  }

  function filterValues() {
    return {
      aggregateType: $('filter-type').value.trim(),
      aggregateId: $('filter-id').value.trim(),
      error: $('filter-error').value.trim()
    };
  }

  function cell(row, value, className) {
    const td = document.createElement('td');
    if (className) {
      td.className = className;
    }
    td.textContent = value === null || value === undefined ? '' : String(value);
    row.appendChild(td);
    return td;
  }

  function button(label, onClick, className) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = label;
    b.className = className;
    b.disabled = !(session && session.replayEnabled);
    b.title = b.disabled ? 'read-only: the relay has no console.adminToken' : '';
    b.addEventListener('click', onClick);
    return b;
  }

  async function refreshParked() {
    const f = filterValues();
    const query = new URLSearchParams();
    Object.keys(f).forEach((k) => {
      if (f[k]) {
        query.set(k, f[k]);
      }
    });
    query.set('limit', '100');
    const list = await getJson('parked?' + query.toString());
    text('parked-count', '(' + list.matched + (list.truncated ? '+' : '') + ')');
    const body = $('parked-body');
    while (body.firstChild) {
      body.removeChild(body.firstChild);
    }
    list.events.forEach((e) => {
      const row = document.createElement('tr');
      row.dataset.eventId = e.eventId;
      cell(row, e.eventId);
      cell(row, e.aggregateType + ' / ' + e.aggregateId);
      cell(row, e.eventType);
      cell(row, e.attempts);
      cell(row, e.lastError, 'error');
      cell(row, e.createdAt);
      const payload = cell(row, '', 'payload');
      const pre = document.createElement('pre');
      pre.textContent = e.payloadPreview + (e.payloadTruncated ? ' … (' + e.payloadBytes + ' bytes in all)' : '');
      payload.appendChild(pre);
      const actions = cell(row, '');
      actions.appendChild(button('Replay event', () => ask({ scope: 'event', eventId: e.eventId }), 'act replay-event'));
      actions.appendChild(document.createTextNode(' '));
      actions.appendChild(button('Replay aggregate', () => ask({ scope: 'aggregate', aggregateType: e.aggregateType, aggregateId: e.aggregateId }), 'replay-aggregate'));
      body.appendChild(row);
    });
    $('replay-matching').disabled = !(session && session.replayEnabled);
  }

  async function refreshCapture() {
    const c = await getJson('capture');
    text('capture-mode', c.mode + (c.enabled ? '' : ' (outbox.capture.enabled false)'));
    text('capture-state', c.state);
    $('capture-state').className = c.healthy ? 'good' : 'bad';
    text('capture-message', c.message);
    text('capture-fault', c.fault ? c.fault + ': ' + c.faultInWords : 'none');
    text('capture-recovery', c.recovery ? c.recovery + ' (' + c.howTo + ')' : '–');
    text('capture-owner', c.owner);
    text('capture-last-event', c.lastEventAgeMs === null ? 'none seen' : duration(c.lastEventAgeMs) + ' ago');
    const wal = c.slot === null ? 'no slot on this database'
      : bytes(c.retainedWalBytes) + ' held by slot ' + c.slot + (c.retainedWalWarnBytes === null ? ''
        : ' (warning at ' + bytes(c.retainedWalWarnBytes) + ')');
    text('capture-wal', wal);
    $('capture-wal').className = c.retainedWalOverThreshold ? 'bad' : '';
  }

  // A replay asks first: the dry run counts what it would change, and the operator confirms that count.
  async function ask(selection) {
    try {
      const dry = await postJson('replay/dry-run', selection);
      pending = selection;
      text('confirm-text', 'Replay ' + (dry.truncated ? 'at least ' : '') + dry.count + ' parked event(s): '
        + dry.selection + '? They become pending and are published again.');
      $('confirm-yes').disabled = dry.count === 0;
      $('confirm').hidden = false;
    } catch (e) {
      say('Dry run refused: ' + e.message, true);
    }
  }

  async function confirmed() {
    const selection = pending;
    pending = null;
    $('confirm').hidden = true;
    try {
      const done = await postJson('replay', selection);
      say(done.replayed + ' event(s) replayed (' + done.selection + ')' + (done.truncated ? '; more may match: repeat' : ''), false);
      await refresh();
    } catch (e) {
      say('Replay refused: ' + e.message, true);
    }
  }

  async function refresh() {
    try {
      await Promise.all([refreshOverview(), refreshParked(), refreshCapture()]);
      if ($('message').className === 'error' && $('message').textContent.startsWith('Cannot read')) {
        say('', false);
      }
    } catch (e) {
      say('Cannot read the console API: ' + e.message, true);
    }
  }

  async function start() {
    $('token-form').addEventListener('submit', (event) => {
      event.preventDefault();
      token = $('token').value.trim();
      $('token').value = '';
      text('token-state', token ? 'token set (kept in this page only)' : 'no token');
      refresh();
    });
    $('filters').addEventListener('submit', (event) => {
      event.preventDefault();
      refreshParked().catch((e) => say('Cannot read parked events: ' + e.message, true));
    });
    $('replay-matching').addEventListener('click', () => ask(Object.assign({ scope: 'filter' }, filterValues())));
    $('confirm-yes').addEventListener('click', confirmed);
    $('confirm-no').addEventListener('click', () => {
      pending = null;
      $('confirm').hidden = true;
    });
    try {
      session = await getJson('session');
      refreshMs = Math.min(Math.max(session.sampleIntervalMs, 2000), 5000);
      if (!session.replayEnabled) {
        say('Read-only: this relay has no console.adminToken, so replay is off.', false);
      }
    } catch (e) {
      say('Cannot open a console session: ' + e.message, true);
    }
    await refresh();
    setInterval(refresh, refreshMs);
  }

  document.addEventListener('DOMContentLoaded', start);
}());
