/* The dashboard page's script: polls the admin port's JSON API and draws it (README, Dashboard). */
/* global uPlot */
(function () {
  'use strict';
  var REFRESH_MS = 3000;
  var TOKEN_KEY = 'svc-cache-purge-token';
  var purgeHeader = 'svc-purge-token';
  var charts = {};

  function $(id) { return document.getElementById(id); }

  function getJson(path) {
    return fetch(path, { cache: 'no-store' }).then(function (response) {
      if (!response.ok) throw new Error(path + ': ' + response.status);
      return response.json();
    });
  }

  function percent(ratio) { return ratio === null ? '–' : (ratio * 100).toFixed(1) + ' %'; }

  function text(node, value) { node.textContent = value; return node; }

  function cell(row, value, className) {
    var td = document.createElement('td');
    if (className) td.className = className;
    text(td, value === null || value === undefined ? '–' : String(value));
    row.appendChild(td);
  }

  function chart(id, series, data, scales) {
    var node = $(id);
    var total = 0;
    for (var s = 1; s < data.length; s++) for (var i = 0; i < data[s].length; i++) total += data[s][i] || 0;
    node.dataset.total = String(total);
    node.dataset.points = String(data[0].length);
    if (charts[id]) { charts[id].setData(data); return; }
    charts[id] = new uPlot({
      width: Math.max(360, Math.min(560, window.innerWidth - 80)),
      height: 200,
      scales: scales || {},
      series: [{}].concat(series),
      axes: [{}, { size: 50 }],
    }, data, node);
  }

  function line(label, stroke, extra) {
    var serie = { label: label, stroke: stroke, width: 1.5, spanGaps: false };
    for (var key in extra || {}) serie[key] = extra[key];
    return serie;
  }

  /** Ratio and latency have gaps (seconds without traffic): points show a second with no neighbour. */
  function dotted(label, stroke, extra) {
    var serie = line(label, stroke, extra);
    serie.points = { show: true, size: 4, fill: stroke };
    return serie;
  }

  function refreshSummary() {
    return getJson('/api/summary').then(function (summary) {
      text($('replica'), summary.replica);
      var ratio = $('hit-ratio');
      text(ratio, percent(summary.lastFiveMinutes.hitRatio));
      ratio.dataset.ratio = summary.lastFiveMinutes.hitRatio === null ? '' : String(summary.lastFiveMinutes.hitRatio);
      var hour = summary.lastHour;
      text($('requests-hour'), String(hour.HIT + hour.MISS + hour.PASS + hour.ERROR));
      var store = summary.store;
      text($('store'), store.up ? 'up, ' + store.roundTripMs.toFixed(1) + ' ms, ' + store.errors + ' errors' : 'DOWN (' + (store.reason || 'no answer') + ')');
      text($('coalesced'), summary.coalescedRequests === null ? 'not reported' : String(summary.coalescedRequests));
      text($('updated'), 'Updated ' + new Date(summary.now).toLocaleTimeString() + ', every ' + REFRESH_MS / 1000 + ' s');
    });
  }

  function refreshTimeseries() {
    return getJson('/api/timeseries').then(function (t) {
      chart('chart-outcomes', [line('HIT', '#12b76a'), line('MISS', '#f79009'), line('PASS', '#2e90fa'), line('ERROR', '#d92d20')],
        [t.time, t.hit, t.miss, t.pass, t.error]);
      chart('chart-ratio', [dotted('hit ratio', '#12b76a')], [t.time, t.hitRatio], { y: { range: [0, 1] } });
      chart('chart-latency', [dotted('MISS p50', '#f79009'), dotted('MISS p99', '#b54708', { dash: [4, 4] }),
        dotted('PASS p50', '#2e90fa'), dotted('PASS p99', '#175cd3', { dash: [4, 4] })],
        [t.time, t.missP50, t.missP99, t.passP50, t.passP99]);
    });
  }

  function refreshOperations() {
    return getJson('/api/operations').then(function (result) {
      var body = $('operations').tBodies[0];
      body.replaceChildren();
      result.operations.forEach(function (op) {
        var row = document.createElement('tr');
        cell(row, op.operationName === '' ? '(anonymous)' : op.operationName);
        cell(row, op.documentHash);
        cell(row, op.overcount > 0 ? op.requests + ' (±' + op.overcount + ')' : op.requests, 'num');
        cell(row, percent(op.hitRatio), 'num');
        cell(row, op.mainPassReason);
        cell(row, op.originLatencyP50Ms, 'num');
        body.appendChild(row);
      });
    });
  }

  function refreshChanges() {
    return getJson('/api/purges').then(function (result) {
      var body = $('changes').tBodies[0];
      body.replaceChildren();
      result.changes.forEach(function (change) {
        var row = document.createElement('tr');
        cell(row, new Date(change.at).toLocaleTimeString());
        cell(row, change.kind);
        cell(row, change.fields.join(', '));
        var more = change.moreTags === 0 ? '' : change.tags.length === 0 ? change.moreTags + ' tags' : ' (+' + change.moreTags + ')';
        cell(row, change.tags.join(', ') + more);
        cell(row, change.removedEntries, 'num');
        cell(row, change.staleEntries, 'num');
        cell(row, change.mode);
        cell(row, change.result);
        cell(row, change.replica);
        body.appendChild(row);
      });
    });
  }

  function refreshConfig() {
    return getJson('/api/config').then(function (view) {
      purgeHeader = view.config.purge.header;
      text($('config'), JSON.stringify(view.config, null, 2));
      var reload = view.lastReload;
      text($('reload'), reload.at ? 'Last reload: ' + reload.at + ', ' + reload.result + (reload.error ? ' (' + reload.error + ')' : '') : 'Not reloaded since start.');
    });
  }

  function refresh() {
    Promise.all([refreshSummary(), refreshTimeseries(), refreshOperations(), refreshChanges()]).then(function () {
      document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || '0') + 1);
    }, function (error) {
      text($('updated'), 'Update failed: ' + error.message);
    });
  }

  function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

  function post(path, body) {
    var headers = { 'content-type': 'application/json' };
    headers[purgeHeader] = token();
    return fetch(path, { method: 'POST', headers: headers, body: JSON.stringify(body) }).then(function (response) {
      return response.text().then(function (bodyText) { return { status: response.status, body: bodyText }; });
    });
  }

  function showAnswer(node, answer) {
    node.classList.toggle('error', answer.status !== 200);
    var shown = answer.body;
    try { shown = JSON.stringify(JSON.parse(answer.body), null, 2); } catch { /* not JSON: shown as sent */ }
    text(node, (answer.status === 401 ? 'Refused: the purge token was not accepted.\n' : 'HTTP ' + answer.status + '\n') + shown);
  }

  function purgeMutation() {
    var kind = $('purge-kind').value;
    var target = $('purge-target').value.trim();
    var soft = $('purge-mode').value === 'soft' ? ['soft: true'] : [];
    function args(given) { var all = given.concat(soft); return all.length === 0 ? '' : '(' + all.join(', ') + ')'; }
    if (kind === 'all') return 'mutation { _purgeAll' + args([]) + ' }';
    if (kind === 'root') return 'mutation { _purgeQuery' + args(['queries: [' + target + ']']) + ' }';
    if (kind === 'type') return 'mutation { _purge' + target + args([]) + ' }';
    // The schemaless form takes every key as a string, whatever the key field's type: an all-digit
    // SKU written as a number was refused by a String field, and `007` is no GraphQL literal at all.
    var key = JSON.stringify($('purge-key').value.trim());
    var ids = $('purge-ids').value.split(',').map(function (id) { return id.trim(); }).filter(Boolean);
    var keyFields = ids.map(function (id) { return '{ name: ' + key + ', value: ' + JSON.stringify(id) + ' }'; });
    return 'mutation { _purgeType' + args(['type: ' + JSON.stringify(target), 'keyFields: [' + keyFields.join(', ') + ']']) + ' }';
  }

  function parsedJson(id) {
    var value = $(id).value.trim();
    return value === '' ? undefined : JSON.parse(value);
  }

  function showTokenState() {
    text($('token-state'), token() ? 'Token set for this tab.' : 'No token: purge and inspect are disabled.');
    $('purge-submit').disabled = !token();
    $('inspect-submit').disabled = !token();
  }

  $('token-form').addEventListener('submit', function (event) {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $('token').value);
    $('token').value = '';
    post('/api/token', {}).then(function (answer) {
      if (answer.status !== 200 || !JSON.parse(answer.body).accepted) {
        sessionStorage.removeItem(TOKEN_KEY);
        showTokenState();
        text($('token-state'), 'Refused: the purge token was not accepted.');
        $('token-state').classList.add('error');
        return;
      }
      $('token-state').classList.remove('error');
      showTokenState();
    });
  });
  $('token-forget').addEventListener('click', function () { sessionStorage.removeItem(TOKEN_KEY); showTokenState(); });

  $('purge-form').addEventListener('submit', function (event) {
    event.preventDefault();
    post('/api/purge', { query: purgeMutation() }).then(function (answer) {
      showAnswer($('purge-result'), answer);
      refreshChanges();
    });
  });

  $('inspect-form').addEventListener('submit', function (event) {
    event.preventDefault();
    var input;
    try {
      input = { query: $('inspect-query').value, variables: parsedJson('inspect-variables'), headers: parsedJson('inspect-headers') };
    } catch (error) {
      showAnswer($('inspect-result'), { status: 400, body: 'Variables and headers must be JSON: ' + error.message });
      return;
    }
    post('/api/inspect', input).then(function (answer) { showAnswer($('inspect-result'), answer); });
  });

  showTokenState();
  refreshConfig().then(refresh, refresh);
  setInterval(refresh, REFRESH_MS);
  setInterval(refreshConfig, REFRESH_MS * 5);
})();
