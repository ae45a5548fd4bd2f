// traind's dashboard: one page, four views chosen by the URL's hash.
//   #/              the queue: live job table, filters, cancel / retry / priority, pause / resume
//   #/job/ID        one job: live curves (loss, accuracy, memory, speed), log tail, spec, result
//   #/sweeps        every sweep: what its members differ in, how far they got
//   #/sweep/ID      a sweep's report (the best row marked), speedups, loss and accuracy curves
//   #/compare/1,2   2-8 jobs' curves on one chart
//   #/devices       each device and the memory its running jobs hold now
// Everything comes from /api/v1 (the Trainer service in protobuf's JSON mapping: int64 values are
// strings, enums names). A job's events arrive as Server-Sent Events; EventSource reconnects by
// itself and the server resumes after the Last-Event-ID, so nothing is missed or repeated.
// Text from the server is only ever set as textContent (el() below), never parsed as HTML.
'use strict';

const state = { csrf: '', owner: '', admin: false, dispose: [] };

// --- small helpers ---------------------------------------------------------------------------

// el('td', {class: 'num'}, 'text', childNode...): a DOM element; strings become text nodes.
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
    else if (key === 'class') node.className = value;
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function showError(message) {
  const box = document.getElementById('error');
  box.textContent = message;
  box.hidden = !message;
}

// POST /api/v1/METHOD with a JSON body; the reply's JSON, or an Error carrying the server's message.
async function api(method, body) {
  const response = await fetch('/api/v1/' + method, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': state.csrf },
    body: JSON.stringify(body || {}),
    credentials: 'same-origin',
  });
  const reply = await response.json().catch(() => ({ message: response.statusText }));
  if (response.status === 401) { location.reload(); throw new Error('logged out'); }
  if (!response.ok) throw new Error(reply.message || response.statusText);
  return reply;
}

// Runs an action from a button, showing its error (e.g. "job 7 is RUNNING; ...") if it fails.
async function act(fn) {
  try { showError(''); await fn(); } catch (error) { showError(error.message); }
}

const seconds = (timestamp) => (timestamp ? Date.parse(timestamp) / 1000 : 0);
// "2026-12-05 12:27" in the browser's time zone, '-' when unset.
const when = (timestamp) => (timestamp ? new Date(timestamp).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'short' }) : '-');

function duration(s) {
  if (!isFinite(s) || s < 0) return '';
  if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + ' s';
  if (s < 3600) return Math.floor(s / 60) + ' m ' + Math.round(s % 60) + ' s';
  return Math.floor(s / 3600) + ' h ' + Math.round((s % 3600) / 60) + ' m';
}

function bytes(n) {
  n = Number(n) || 0;
  if (n >= 1 << 30) return (n / (1 << 30)).toFixed(2) + ' GiB';
  if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + ' MiB';
  return (n / 1024).toFixed(0) + ' KiB';
}

// Fraction done (0..1) of a job from its newest step, or null when unknown.
function progress(job) {
  if (job.state === 'SUCCEEDED') return 1;
  const step = job.latestStep;
  if (!step || !step.epochs || !step.batchesPerEpoch) return null;
  const done = (step.epoch - 1) * step.batchesPerEpoch + step.batch + 1;
  return Math.min(1, done / (step.epochs * step.batchesPerEpoch));
}

function elapsed(job) {
  const start = seconds(job.startTime);
  if (!start) return NaN;
  const end = job.endTime ? seconds(job.endTime) : Date.now() / 1000;
  return end - start;
}

// What a job trains: its model, or for a program's job the program (as `trainctl list` says).
function what(spec) { return spec.model || ((spec.script || {}).args || [])[0] || ''; }

function stateBadge(job) { return el('span', { class: 'state ' + job.state }, job.state); }

// Refreshes every `ms` while the view is open.
function every(ms, fn) {
  fn();
  const timer = setInterval(fn, ms);
  state.dispose.push(() => clearInterval(timer));
}

// --- charts ------------------------------------------------------------------------------------

// A uPlot chart that grows as data arrives, redrawn at most four times a second. A zoom (drag to
// select) is kept while it grows; a double click returns to the whole curve.
class LiveChart {
  constructor(container, title, series, options = {}) {
    this.box = el('div', { class: 'card chart', id: options.id });
    this.box.append(el('h3', {}, title));
    container.append(this.box);
    this.columns = [[]].concat(series.map(() => []));
    this.zoomed = false;
    this.pending = false;
    const width = Math.max(320, this.box.clientWidth - 20);
    this.plot = new uPlot({
      width, height: 220,
      scales: { x: { time: !!options.time } },
      axes: options.axes || [{}, { size: 64 }],
      series: [{ label: options.xLabel || 'x' }].concat(series),
      cursor: { drag: { x: true, y: false } },
      hooks: { setSelect: [(u) => { if (u.select.width > 0) this.zoomed = true; }] },
    }, this.columns, this.box);
    this.plot.over.addEventListener('dblclick', () => { this.zoomed = false; });
    // Sized to its card, whenever the card's size changes: a card's width is known only once the
    // grid holds all its charts (the first chart alone spans the row, and sized then it was drawn
    // over its neighbours until the window was resized).
    const resize = () => {
      const width = Math.max(320, this.box.clientWidth - 20);
      if (width !== this.plot.width) this.plot.setSize({ width, height: 220 });
    };
    const observer = new ResizeObserver(resize);
    observer.observe(this.box);
    state.dispose.push(() => { observer.disconnect(); this.plot.destroy(); });
    this.box.dataset.points = '0';
  }

  // Adds one point: x, then one value (or null) per series.
  add(x, ...values) {
    this.columns[0].push(x);
    values.forEach((v, i) => this.columns[i + 1].push(v === undefined ? null : v));
    this.schedule();
  }

  set(columns) { this.columns = columns; this.schedule(); }

  schedule() {
    if (this.pending) return;
    this.pending = true;
    setTimeout(() => {
      this.pending = false;
      this.plot.setData(this.columns, !this.zoomed);
      this.box.dataset.points = String(this.columns[0].length);
      // uPlot draws x in the order given: a chart whose x went back is drawn wrong (tests read it).
      this.box.dataset.xAscending = String(this.columns[0].every((x, i, xs) => i === 0 || x >= xs[i - 1]));
    }, 250);
  }
}

const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#be185d', '#4d7c0f'];
const line = (label, i, extra = {}) => Object.assign({ label, stroke: PALETTE[i % 8], width: 1.5, spanGaps: true }, extra);

// --- queue -------------------------------------------------------------------------------------

function renderQueue(page) {
  const selected = new Set();
  const filters = { state: '', text: '' };
  const stateSelect = el('select', { 'aria-label': 'state', onchange: (e) => { filters.state = e.target.value; refresh(); } },
    ['', 'QUEUED', 'RUNNING', 'PAUSED', 'SUCCEEDED', 'FAILED', 'CANCELLED'].map((s) => el('option', { value: s }, s || 'all states')));
  const textFilter = el('input', { type: 'search', placeholder: 'model, dataset, device, owner', oninput: (e) => { filters.text = e.target.value.toLowerCase(); draw(); } });
  const queueLabel = el('span', { class: 'muted' });
  const pauseButton = el('button', { type: 'button', id: 'pause' });
  const compareButton = el('button', { type: 'button', disabled: true, onclick: () => { location.hash = '#/compare/' + [...selected].join(','); } }, 'Compare selected');
  const body = el('tbody', { id: 'jobs' });
  page.append(
    el('h1', {}, 'Queue'),
    el('div', { class: 'toolbar' }, stateSelect, textFilter, compareButton, el('span', { class: 'spacer' }), queueLabel, pauseButton),
    el('div', { class: 'table-wrap' }, el('table', {},
      el('thead', {}, el('tr', {}, ['', 'Job', 'State', 'Model', 'Dataset', 'Device', 'Progress', 'Duration', 'Owner', 'Priority', ''].map((h) => el('th', {}, h)))),
      body)));

  let jobs = [];
  let paused = false;
  pauseButton.addEventListener('click', () => act(async () => {
    const reply = await api('SetQueueState', { action: paused ? 'RESUME' : 'PAUSE' });
    paused = !!reply.paused;
    drawQueueState();
  }));
  function drawQueueState() {
    queueLabel.textContent = paused ? 'queue paused: nothing new starts' : 'queue running';
    pauseButton.textContent = paused ? 'Resume queue' : 'Pause queue';
    pauseButton.disabled = !state.admin;
  }

  function row(job) {
    const fraction = progress(job);
    const time = elapsed(job);
    let progressCell = '';
    if (fraction !== null) {
      const eta = job.state === 'RUNNING' && fraction > 0 ? time / fraction * (1 - fraction) : NaN;
      progressCell = [el('span', { class: 'bar' }, el('span', { style: 'width:' + (fraction * 100).toFixed(1) + '%' })),
        (fraction * 100).toFixed(0) + '%', isFinite(eta) ? ' · ETA ' + duration(eta) : ''];
    }
    const actions = [];
    if (job.state === 'QUEUED' || job.state === 'RUNNING') {
      actions.push(el('button', { type: 'button', class: 'danger', 'data-action': 'cancel', onclick: () => act(async () => { await api('CancelJob', { id: job.id }); refresh(); }) }, 'Cancel'));
    } else if (job.state === 'FAILED' || job.state === 'CANCELLED') {
      actions.push(el('button', { type: 'button', 'data-action': 'retry', onclick: () => act(async () => { await api('RetryJob', { id: job.id }); refresh(); }) }, 'Retry'));
    }
    const priority = job.state === 'QUEUED'
      ? el('input', { class: 'priority', type: 'number', value: job.priority, 'aria-label': 'priority of job ' + job.id,
        onchange: (e) => act(async () => { await api('SetJobPriority', { id: job.id, priority: Number(e.target.value) }); refresh(); }) })
      : String(job.priority);
    const box = el('input', { type: 'checkbox', checked: selected.has(job.id), 'aria-label': 'select job ' + job.id,
      onchange: (e) => { e.target.checked ? selected.add(job.id) : selected.delete(job.id); compareButton.disabled = selected.size < 2 || selected.size > 8; } });
    const sweep = job.sweepId !== '0' ? el('a', { href: '#/sweep/' + job.sweepId, class: 'muted' }, ' sweep ' + job.sweepId) : '';
    return el('tr', { 'data-job': job.id },
      el('td', {}, box),
      el('td', {}, el('a', { href: '#/job/' + job.id }, job.id), sweep),
      el('td', {}, stateBadge(job)),
      el('td', {}, what(job.spec)),
      el('td', {}, job.spec.dataset),
      el('td', {}, job.spec.device),
      el('td', {}, progressCell),
      el('td', { class: 'num' }, duration(time)),
      el('td', {}, job.owner),
      el('td', { class: 'num' }, priority),
      el('td', {}, actions));
  }

  function draw() {
    // Leave the table alone while someone types a priority, or the refresh would eat the edit.
    if (document.activeElement && document.activeElement.classList.contains('priority')) return;
    const shown = jobs.filter((job) => !filters.text ||
      [what(job.spec), job.spec.dataset, job.spec.device, job.owner].join(' ').toLowerCase().includes(filters.text));
    body.replaceChildren(...shown.map(row));
    if (shown.length === 0) body.append(el('tr', {}, el('td', { colspan: 11, class: 'muted' }, 'No jobs. Submit one: trainctl submit --model lenet5 --epochs 1')));
  }

  async function refresh() {
    try {
      const request = { pageSize: 200 };
      if (filters.state) request.states = [filters.state];
      const [list, queue] = await Promise.all([api('ListJobs', request), api('SetQueueState', { action: 'GET' })]);
      jobs = list.jobs;
      paused = !!queue.paused;
      drawQueueState();
      draw();
      showError('');
    } catch (error) { showError(error.message); }
  }
  every(2000, refresh);
}

// --- one job -----------------------------------------------------------------------------------

function renderJob(page, id) {
  const title = el('h1', {}, 'Job ' + id);
  const actions = el('div', { class: 'toolbar' });
  const facts = el('dl', { class: 'kv card' });
  const charts = el('div', { class: 'charts' });
  const logBox = el('pre', { class: 'log', id: 'log' });
  const specBox = el('pre', { id: 'spec' });
  const failure = el('div', { id: 'failure', class: 'failure', hidden: true });
  const resultFacts = el('dl', { class: 'kv card', id: 'result-facts' });
  const resultBox = el('pre', { id: 'result', class: 'wrap' });
  const artifactList = el('ul', { id: 'artifacts' });
  page.append(title, failure, actions, facts, el('h2', {}, 'Curves'), charts,
    el('div', { class: 'grid2' },
      el('div', {}, el('h2', {}, 'Log'), logBox),
      el('div', {}, el('h2', {}, 'Result'), resultFacts, el('details', {}, el('summary', {}, 'As JSON'), resultBox),
        el('h2', {}, 'Artifacts'), artifactList)),
    el('h2', {}, 'Spec'), specBox);

  const lossChart = new LiveChart(charts, 'Loss (by step; epoch means at epoch ends)',
    [line('batch loss', 0, { width: 1 }), line('train (epoch)', 1, { points: { show: true } }), line('validation (epoch)', 2, { points: { show: true } })],
    { id: 'loss-chart', xLabel: 'step' });
  const accuracyChart = new LiveChart(charts, 'Accuracy by epoch',
    [line('train', 1, { points: { show: true } }), line('validation', 2, { points: { show: true } })], { id: 'accuracy-chart', xLabel: 'epoch' });
  const memoryChart = new LiveChart(charts, 'Device memory (MiB): current and driver allocated, by seconds of training',
    [line('current', 3), line('driver', 4)], { id: 'memory-chart', xLabel: 's' });
  const speedChart = new LiveChart(charts, 'Speed: samples/s and step time (ms), by seconds of training',
    [line('samples/s', 0), line('step ms', 5, { scale: 'ms' })],
    { id: 'speed-chart', xLabel: 's', axes: [{}, { size: 64 }, { scale: 'ms', side: 1, size: 50, grid: { show: false } }] });

  const logLines = [];
  function log(text) {
    logLines.push(text);
    if (logLines.length > 500) logLines.shift();
    scheduleLog();
  }
  let logPending = false;
  function scheduleLog() {
    if (logPending) return;
    logPending = true;
    setTimeout(() => {
      logPending = false;
      const atBottom = logBox.scrollTop + logBox.clientHeight >= logBox.scrollHeight - 4;
      logBox.textContent = logLines.join('\n');
      if (atBottom) logBox.scrollTop = logBox.scrollHeight;
    }, 250);
  }

  // The job as GetJob gave it when the page opened and when its stream ended; in between, its
  // state, times and artifacts follow the events (a request per event and tab would cost traind
  // more than the events themselves with many tabs open).
  let job = null;
  async function loadJob() {
    try {
      job = await api('GetJob', { id });
    } catch (error) { showError(error.message); return; }
    render();
  }
  function render() {
    title.replaceChildren('Job ' + job.id + ' ', stateBadge(job));
    const spec = job.spec;
    // A program's job: what it runs, not a model; its epochs and batch size are its own.
    // A sweep member's {placeholders} and their values, as `trainctl show` prints them.
    const params = Object.entries((spec.script || {}).params || {}).map(([name, value]) => '  {' + name + '}=' + value).join('');
    const runs = spec.script ? [['program', [spec.script.interpreter || 'python3'].concat(spec.script.args || []).join(' ') + params]]
      : [['model', spec.model], ['dataset', spec.dataset], ['epochs', spec.epochs], ['batch size', spec.batchSize]];
    facts.replaceChildren(...[
      ...runs, ['device', spec.device], ['owner', job.owner],
      ['priority', job.priority], ['duration', duration(elapsed(job))],
      ['sweep', job.sweepId !== '0' ? el('a', { href: '#/sweep/' + job.sweepId }, job.sweepId) : '-'],
    ].flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v === undefined ? '' : v)]));
    const buttons = [];
    if (job.state === 'QUEUED' || job.state === 'RUNNING') {
      buttons.push(el('button', { type: 'button', class: 'danger', id: 'cancel', onclick: () => act(async () => { job = await api('CancelJob', { id }); render(); }) }, 'Cancel'));
    }
    if (job.state === 'FAILED' || job.state === 'CANCELLED') {
      buttons.push(el('button', { type: 'button', id: 'retry', onclick: () => act(async () => { const next = await api('RetryJob', { id }); location.hash = '#/job/' + next.id; }) }, 'Retry'));
    }
    buttons.push(el('a', { href: '/api/v1/jobs/' + id + '/export?format=csv', download: true }, 'Export CSV'),
      el('a', { href: '/api/v1/jobs/' + id + '/export?format=jsonl', download: true }, 'JSON lines'));
    actions.replaceChildren(...buttons);
    specBox.textContent = JSON.stringify(job.spec, null, 2);
    resultBox.textContent = JSON.stringify(job.result, null, 2);
    renderResult();
    artifactList.replaceChildren(...(job.result.artifacts || []).map((a) =>
      // A program's file is named by its path in its output directory: each part is encoded.
      el('li', {}, el('a', { href: '/api/v1/jobs/' + id + '/artifacts/' + a.name.split('/').map(encodeURIComponent).join('/'), download: true }, a.name),
        ' ' + bytes(a.sizeBytes) + (a.epoch ? ', epoch ' + a.epoch : '') + ', sha256 ' + a.sha256.slice(0, 12) + '…')));
    if ((job.result.artifacts || []).length === 0) artifactList.append(el('li', { class: 'muted' }, 'none yet'));
  }

  // What the job measured, in words; what it did not measure is not shown (a program reports only
  // what it prints). A failed job's error is a banner at the top, whole and wrapped.
  function renderResult() {
    const r = job.result || {};
    const percent = (x) => (x * 100).toFixed(2) + '%';
    const rows = [];
    if (job.state === 'SUCCEEDED' && !spec().benchmark && r.testAccuracy !== undefined) rows.push(['test accuracy', percent(r.testAccuracy)]);
    if (r.bestEpoch) rows.push(['best validation', percent(r.bestValidationAccuracy || 0) + ' (epoch ' + r.bestEpoch + ')']);
    if (r.stopped) rows.push(['stopped', 'after epoch ' + r.stopped.epoch + ': ' + r.stopped.reason]);
    if (r.totalSeconds) rows.push(['time', duration(r.trainSeconds) + ' training, ' + duration(r.totalSeconds) + ' in all']);
    if (Number(r.peakDriverAllocatedBytes)) rows.push(['peak memory', bytes(r.peakCurrentAllocatedBytes) + ' allocated, ' + bytes(r.peakDriverAllocatedBytes) + ' by the driver']);
    else if (Number(r.peakCurrentAllocatedBytes)) rows.push(['peak memory', bytes(r.peakCurrentAllocatedBytes) + ' resident']);
    if (r.bench) rows.push(['benchmark', JSON.stringify(r.bench)]);
    resultFacts.replaceChildren(...(rows.length ? rows : [['', job.state === 'RUNNING' || job.state === 'QUEUED' ? 'not finished' : 'nothing measured']])
      .flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
    failure.hidden = !(job.state === 'FAILED' && r.error);
    failure.replaceChildren(el('strong', {}, 'Job ' + job.id + ' failed'), el('pre', { class: 'wrap' }, r.error || ''));
  }
  function spec() { return job.spec || {}; }

  let batchesPerEpoch = 0;
  let stepsDrawn = 0;
  let firstStep = 0;  // time of the first step: x of the memory and speed charts counts from it
  // A program's own metrics (traind.report(grad_norm=...)): one chart, made when the first of
  // them arrives, a series for each name that event has (at most eight).
  let ownChart = null;
  let ownNames = [];
  function addOwn(x, metrics) {
    if (!metrics || Object.keys(metrics).length === 0) return;
    if (!ownChart) {
      ownNames = Object.keys(metrics).sort().slice(0, 8);
      ownChart = new LiveChart(charts, 'The program\'s own metrics', ownNames.map((name, i) => line(name, i, { points: { show: true } })),
        { id: 'own-chart', xLabel: 'step' });
    }
    ownChart.add(x, ...ownNames.map((name) => (name in metrics ? Number(metrics[name]) : null)));
  }

  function onEvent(event) {
    const time = seconds(event.time);
    if (event.step) {
      if (!firstStep) firstStep = time;
      const s = event.step;
      batchesPerEpoch = s.batchesPerEpoch;
      stepsDrawn += 1;
      // A step that does not know its epoch's batch count (a program printing
      // {'loss': 0.3, 'epoch': 1.5}) has for batch its place in its epoch: it is drawn at its
      // place in the job instead, so that x keeps rising.
      const x = s.batchesPerEpoch ? (s.epoch - 1) * s.batchesPerEpoch + s.batch + 1 : stepsDrawn;
      lossChart.add(x, s.loss, null, null);
      addOwn(x, s.metrics);
      // What a program did not report is absent from the event: no point, not a 0.
      const mib = (value) => (value === undefined ? null : Number(value) / 1048576);
      memoryChart.add(time - firstStep, mib(s.currentAllocatedBytes), mib(s.driverAllocatedBytes));
      speedChart.add(time - firstStep, s.samplesPerSecond === undefined ? null : s.samplesPerSecond,
        s.stepSeconds === undefined ? null : s.stepSeconds * 1000);
    } else if (event.epochSummary) {
      const e = event.epochSummary;
      const x = batchesPerEpoch ? e.epoch * batchesPerEpoch : stepsDrawn || e.epoch;
      const given = (value, evaluated = true) => (evaluated && value !== undefined ? value : null);
      lossChart.add(x, null, given(e.trainLoss), given(e.validationLoss, e.evaluated));
      accuracyChart.add(e.epoch, given(e.trainAccuracy), given(e.validationAccuracy, e.evaluated));
      addOwn(x, e.metrics);
      log(['epoch ' + e.epoch + (e.epochs ? '/' + e.epochs : '') + ':',
        [e.trainLoss !== undefined ? 'train loss ' + e.trainLoss.toFixed(4) : '',
          e.trainAccuracy !== undefined ? 'accuracy ' + (e.trainAccuracy * 100).toFixed(2) + '%' : '',
          e.evaluated && e.validationAccuracy !== undefined ? 'validation ' + (e.validationAccuracy * 100).toFixed(2) + '%' : '',
          e.epochSecondsNoEval ? e.epochSecondsNoEval.toFixed(2) + ' s' : ''].filter((x) => x).join(', ')].join(' '));
    } else if (event.log) {
      log((event.log.severity !== 'INFO' ? event.log.severity + ': ' : '') + event.log.text);
    } else if (event.stateChange) {
      log('state: ' + event.stateChange.state + (event.stateChange.reason ? ' (' + event.stateChange.reason + ')' : ''));
      if (job) {
        job.state = event.stateChange.state;
        if (job.state === 'RUNNING' && !job.startTime) job.startTime = event.time;  // the first start
        if (['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(job.state)) job.endTime = event.time;
        render();
      }
    } else if (event.finalResult) {
      const f = event.finalResult;
      log((f.testAccuracy !== undefined ? 'test accuracy ' + (f.testAccuracy * 100).toFixed(2) + '%, ' : '') + f.totalSeconds.toFixed(1) + ' s in all');
    } else if (event.bench) {
      log('bench: ' + JSON.stringify(event.bench));
    } else if (event.artifact) {
      log('kept ' + event.artifact.name + ' (' + bytes(event.artifact.sizeBytes) + ')');
      if (job) {
        const kept = (job.result.artifacts || []).filter((a) => a.name !== event.artifact.name);
        job.result.artifacts = kept.concat([event.artifact]);
        render();
      }
    }
  }

  loadJob();
  // The stream is open only while the tab is visible: a browser allows 6 connections per host for
  // all its tabs, so hidden tabs each holding one would leave none for the tab in front. A tab
  // shown again resumes after the last event it has (from_seq), so its curves have no gap.
  let source = null;
  let lastSeq = 0;
  let ended = false;
  function openStream() {
    if (source || ended) return;
    source = new EventSource('/api/v1/jobs/' + id + '/events?from_seq=' + (lastSeq + 1));
    source.onmessage = (message) => {
      const event = JSON.parse(message.data);
      lastSeq = Number(event.seq);
      onEvent(event);
    };
    // EventSource retries by itself after a dropped connection (resuming after the last event it
    // saw); a refused one (429: too many streams for this token, 503: for the server) it gives up.
    source.onerror = () => {
      if (source && source.readyState === EventSource.CLOSED) showError('the live event stream was refused or lost; reload to try again');
    };
    source.addEventListener('end', (message) => {
      ended = true;
      closeStream();
      const status = JSON.parse(message.data);
      if (status.code !== 'OK') showError(status.message);
      loadJob();
    });
  }
  function closeStream() {
    if (source) source.close();
    source = null;
  }
  const onVisibility = () => (document.hidden ? closeStream() : openStream());
  document.addEventListener('visibilitychange', onVisibility);
  openStream();
  const timer = setInterval(() => { if (job && job.state === 'RUNNING') facts.querySelector('dd:nth-of-type(8)').textContent = duration(elapsed(job)); }, 1000);
  state.dispose.push(() => { closeStream(); document.removeEventListener('visibilitychange', onVisibility); clearInterval(timer); });
}

// --- sweeps and comparisons --------------------------------------------------------------------

async function renderSweep(page, id) {
  page.append(el('h1', {}, 'Sweep ' + id));
  let report;
  try { report = await api('GetSweepReport', { id }); } catch (error) { showError(error.message); return; }
  page.append(el('p', { class: 'muted' }, [report.name, report.jobsFinished + ' of ' + report.jobsTotal + ' jobs finished',
    report.noSpeedupReason ? 'no speedup: ' + report.noSpeedupReason : 'speedup against ' + (report.baseline || report.baselineDevice || 'none')].filter((x) => x).join(' · ')),
  el('a', { href: '/api/v1/sweeps/' + id + '/export?format=csv', download: true }, 'Export every member\'s metrics (CSV)'));
  const fastest = Math.max(1, ...report.rows.map((r) => r.speedup || 0));
  const percent = (x) => (x * 100).toFixed(2) + '%';
  // What no run measured (a program that printed no test accuracy) is '-', never 0.
  const rows = report.rows.map((r) => el('tr', { class: r.best ? 'best' : undefined },
    el('td', {}, r.best ? el('span', { class: 'badge', title: 'best by ' + report.bestBy }, 'best') : '', ' ', r.config), el('td', {}, r.device),
    el('td', { class: 'num' }, r.batchSize ? r.batchSize : '-'),
    el('td', { class: 'num' }, r.runs + (r.succeeded !== r.runs ? ' (' + r.succeeded + ' ok)' : '')),
    el('td', { class: 'num' }, r.epochSecondsMedian ? r.epochSecondsMedian.toFixed(2) : '-'),
    el('td', { class: 'num' }, r.samplesPerSecond ? r.samplesPerSecond.toFixed(0) : '-'),
    el('td', { class: 'num' }, r.tested ? percent(r.testAccuracy) : '-'),
    el('td', { class: 'num' }, r.validated ? percent(r.bestValidationAccuracy) : '-'),
    el('td', { class: 'num' }, r.finalLoss ? r.finalLoss.toFixed(4) : '-'),
    el('td', {}, r.speedup ? [el('span', { class: 'speedbar', style: 'width:' + (80 * r.speedup / fastest).toFixed(0) + 'px' }), r.speedup.toFixed(2) + 'x'] : '-'),
    el('td', {}, Number(r.peakDriverAllocatedBytes) ? bytes(r.peakDriverAllocatedBytes) : Number(r.peakCurrentAllocatedBytes) ? bytes(r.peakCurrentAllocatedBytes) + ' RSS' : '-'),
    el('td', {}, r.jobIds.map((j) => el('a', { href: '#/job/' + j }, j + ' '))),
    el('td', { class: 'muted' }, (r.flags || []).join('; '))));
  const winner = report.rows.find((r) => r.best);
  page.append(el('h2', {}, 'Report'),
    winner ? el('p', { id: 'best' }, 'Best by ' + report.bestBy + ': ', el('strong', {}, [winner.config, winner.device].filter((x) => x).join(' on ')),
      ' (' + (report.bestBy === 'final loss' ? winner.finalLoss.toFixed(4) : percent(report.bestBy === 'test accuracy' ? winner.testAccuracy : winner.bestValidationAccuracy)) + ')') : '',
    el('div', { class: 'table-wrap' }, el('table', { id: 'report' },
      el('thead', {}, el('tr', {}, ['Config', 'Device', 'Batch', 'Runs', 'Epoch s', 'Samples/s', 'Test acc.', 'Best val.', 'Final loss', 'Speedup', 'Peak memory', 'Jobs', 'Flags'].map((h) => el('th', {}, h)))),
      el('tbody', {}, rows))),
    report.rowsNotShown ? el('p', { class: 'muted', id: 'rows-not-shown' }, report.rowsNotShown +
      ' more rows not shown (a report is kept under 3 MiB): trainctl export --sweep ' + id + ' has every job') : '');
  if (report.search) renderSearch(page, report.search);
  // The runs table fills its place when its call returns; the curves do not wait for it.
  const runs = el('div', { id: 'runs-box' });
  page.append(runs);
  renderRuns(runs, id);
  const charts = el('div', { class: 'charts' });
  page.append(el('h2', {}, 'Curves (first successful run of each row)'), charts);
  const label = (r) => [r.config, r.device].filter((x) => x).join(' ');
  const curves = report.rows.filter((r) => (r.lossCurve || []).length > 0);
  const chart = new LiveChart(charts, 'Training loss by epoch', curves.map((r, i) => line(label(r), i)), { id: 'sweep-chart', xLabel: 'epoch' });
  chart.set(uPlot.join(curves.map((r) => [r.lossCurve.map((p) => p.epoch), r.lossCurve.map((p) => p.loss)])));
  // Validation accuracy by epoch, from each row's first run's own events: a sweep over learning
  // rates is judged by it, and a program printing once an epoch has one loss point per epoch.
  const validated = report.rows.filter((r) => r.validated && r.jobIds.length > 0);
  if (validated.length === 0) return;
  const accuracy = new LiveChart(charts, 'Validation accuracy by epoch', validated.map((r, i) => line(label(r), i, { points: { show: true } })), { id: 'sweep-accuracy', xLabel: 'epoch' });
  try {
    const tables = await Promise.all(validated.map(async (r) => {
      const epochs = (await exportRows(r.jobIds[0])).filter((x) => x.kind === 'epoch' && x.validation_accuracy !== undefined);
      return [epochs.map((x) => x.epoch), epochs.map((x) => x.validation_accuracy)];
    }));
    accuracy.set(uPlot.join(tables));
  } catch (error) { showError(error.message); }
}

// A search's part of its sweep page (SweepReport.search): how far it got, its best trial, the
// compute it spent against training every trial to the end, each trial's draw and result, the
// search curve (the best metric so far against the device-time spent) and each parameter against
// the metric.
function renderSearch(page, search) {
  const trials = search.trials || [];
  const metricText = (v) => v === undefined || v === null || Number.isNaN(Number(v)) ? '-'
    : search.metric === 'validation_accuracy' ? (100 * v).toFixed(2) + '%' : Number(v).toPrecision(4);
  const params = (t) => Object.entries(t.params || {}).sort().map(([k, v]) => k + '=' + v).join(' ');
  const best = trials.find((t) => (t.trial || 0) === search.bestTrial);
  const epochs = (n, after) => (Number(n) === 1 ? ' epoch' : ' epochs') + after;
  const spent = Number(search.epochsSpent || 0), full = Number(search.epochsFull || 0);
  page.append(el('h2', {}, 'Search'),
    el('p', { id: 'search-summary', class: 'muted' }, [search.method + ' search by ' + search.metric,
      (trials.length + (search.trialsNotShown || 0)) + ' of ' + search.trialsPlanned + ' trials' +
      (search.trialsNotShown ? ' (' + search.trialsNotShown + ' not listed: the furthest and best are)' : ''),
      search.done ? 'done' : 'going on',
      ((search.rungs || []).length === 1 ? 'one rung, at ' : 'rungs at ') + (search.rungs || []).join(', ') +
        epochs(Math.max(...(search.rungs || [0])), '')].join(' · ')),
    best ? el('p', { id: 'search-best' }, 'Best: ', el('strong', {}, 'trial ' + best.trial), ' (',
      el('a', { href: '#/job/' + best.jobId }, 'job ' + best.jobId), ') ' + metricText(best.metric) +
      ' after ' + best.epochs + epochs(best.epochs, ':') + ' ' + params(best)) : '',
    full ? el('p', { id: 'search-compute' }, spent + ' epochs trained, ' + (100 * spent / full).toFixed(0) +
      '% of the ' + full + ' that training every trial started to the end takes (' + (full - spent) + ' saved)') : '',
    search.deviceSecondsBudget ? el('p', { id: 'search-budget' }, 'Budget: ' +
      duration(Number(search.deviceSeconds || 0)) + ' of ' + duration(Number(search.deviceSecondsBudget)) +
      ' of device-time spent (' + (100 * Number(search.deviceSeconds || 0) /
      Number(search.deviceSecondsBudget)).toFixed(0) + '%)') : '',
    search.packing ? el('p', { id: 'search-packing', class: 'muted' }, 'Packing: ' + search.packing) : '');
  const rows = trials.map((t) => el('tr', { class: (t.trial || 0) === search.bestTrial ? 'best' : undefined },
    el('td', { class: 'num' }, String(t.trial || 0)), el('td', {}, el('a', { href: '#/job/' + t.jobId }, t.jobId)),
    el('td', {}, t.status), el('td', { class: 'num' }, String(t.epochs || 0)),
    el('td', { class: 'num' }, metricText(t.rung >= 0 ? t.metric : undefined)),
    // Two decimals below 10 s: a trial stopped after one short epoch is not "0.0".
    el('td', { class: 'num' }, (t.deviceSeconds || 0).toFixed((t.deviceSeconds || 0) < 10 ? 2 : 1)),
    el('td', {}, params(t))));
  page.append(el('div', { class: 'table-wrap' }, el('table', { id: 'search-trials' },
    el('thead', {}, el('tr', {}, ['Trial', 'Job', 'Status', 'Epochs', search.metric, 'Device s', 'Drawn'].map((h) => el('th', {}, h)))),
    el('tbody', {}, rows))));
  const charts = el('div', { class: 'charts' });
  page.append(charts);
  // The search curve: trials in the order proposed, their device-time added up.
  const better = (a, b) => (search.maximize ? a > b : a < b);
  let seconds = 0, bestSoFar = null;
  const xs = [], ys = [];
  for (const t of trials) {
    seconds += t.deviceSeconds || 0;
    if (t.rung >= 0 && !Number.isNaN(Number(t.metric)) && (bestSoFar === null || better(t.metric, bestSoFar))) bestSoFar = t.metric;
    xs.push(seconds);
    ys.push(bestSoFar);
  }
  const curve = new LiveChart(charts, 'Best ' + search.metric + ' against device-time (s)', [line('best so far', 0, { points: { show: true } })], { id: 'search-curve', xLabel: 'device s' });
  curve.set([xs, ys]);
  // Each numeric parameter against the metric (a trial's, at the rung it reached).
  const fields = [...new Set(trials.flatMap((t) => Object.keys(t.params || {})))].sort();
  fields.forEach((field, i) => {
    const points = trials.filter((t) => t.rung >= 0 && !Number.isNaN(Number((t.params || {})[field])))
      .map((t) => [Number(t.params[field]), t.metric]).sort((a, b) => a[0] - b[0]);
    if (points.length === 0) return;
    const chart = new LiveChart(charts, field + ' against ' + search.metric,
      [line(search.metric, i + 1, { width: 0, points: { show: true, size: 7 } })], { id: 'search-param-' + field.replace(/[^a-z0-9_]/gi, '_'), xLabel: field });
    chart.set([points.map((p) => p[0]), points.map((p) => p[1])]);
  });
}

// Every member of a sweep, one row each: the values it differs in, its state and what it measured;
// a click on a heading sorts by that column (again: the other way).
async function renderRuns(page, id) {
  let jobs;
  try { jobs = (await api('ListJobs', { sweepId: id, pageSize: 1000 })).jobs || []; } catch (error) { showError(error.message); return; }
  // The fields whose values differ among the members: a program's {params} and the spec's own.
  const values = (job) => Object.assign({}, ...Object.entries(job.spec).filter(([, v]) => typeof v !== 'object').map(([k, v]) => ({ [k]: String(v) })),
    ...Object.entries((job.spec.script || {}).params || {}).map(([k, v]) => ({ ['param.' + k]: String(v) })));
  const all = jobs.map(values);
  const keys = [...new Set(all.flatMap(Object.keys))].filter((k) => k !== 'name' && new Set(all.map((v) => v[k])).size > 1).sort();
  const measured = (job) => job.state === 'SUCCEEDED';
  const columns = [
    ['Job', (job) => Number(job.id), (job) => el('a', { href: '#/job/' + job.id }, job.id)],
    ['State', (job) => job.state, stateBadge],
    ...keys.map((k) => [k, (job, i) => { const n = Number(all[i][k]); return isNaN(n) ? all[i][k] : n; }, (job, i) => all[i][k] === undefined ? '-' : all[i][k]]),
    ['Test acc.', (job) => (measured(job) && job.result.testAccuracy !== undefined ? job.result.testAccuracy : -1),
      (job) => (measured(job) && job.result.testAccuracy !== undefined ? (job.result.testAccuracy * 100).toFixed(2) + '%' : '-')],
    ['Best val.', (job) => job.result.bestEpoch ? job.result.bestValidationAccuracy || 0 : -1,
      (job) => job.result.bestEpoch ? ((job.result.bestValidationAccuracy || 0) * 100).toFixed(2) + '%' : '-'],
    // A program's own metrics (traind.report(grad_norm=...)): each member's latest value.
    ...[...new Set(jobs.flatMap((job) => Object.keys((job.latestStep || {}).metrics || {})))].sort().slice(0, 8).map((name) => {
      const value = (job) => ((job.latestStep || {}).metrics || {})[name];
      return [name, (job) => (value(job) === undefined ? -Infinity : Number(value(job))), (job) => (value(job) === undefined ? '-' : Number(value(job)).toPrecision(4))];
    }),
    ['Time', (job) => elapsed(job) || 0, (job) => duration(elapsed(job)) || '-'],
  ];
  const body = el('tbody', {});
  let order = { column: 0, ascending: true };
  const draw = () => {
    const rows = jobs.map((job, i) => ({ job, i })).sort((a, b) => {
      const [x, y] = [columns[order.column][1](a.job, a.i), columns[order.column][1](b.job, b.i)];
      return (x < y ? -1 : x > y ? 1 : 0) * (order.ascending ? 1 : -1);
    });
    body.replaceChildren(...rows.map(({ job, i }) => el('tr', { 'data-job': job.id }, columns.map(([, , cell]) => el('td', {}, cell(job, i))))));
  };
  const head = el('tr', {}, columns.map(([title], c) => el('th', { class: 'sortable', 'data-column': title,
    onclick: () => { order = { column: c, ascending: order.column === c ? !order.ascending : c < 2 + keys.length }; draw(); } }, title)));
  draw();
  page.append(el('h2', {}, 'Runs'), el('div', { class: 'table-wrap' }, el('table', { id: 'runs' }, el('thead', {}, head), body)));
}

// The sweeps, newest first: the morning after, which one to open.
function renderSweeps(page) {
  const body = el('tbody', { id: 'sweeps' });
  page.append(el('h1', {}, 'Sweeps'), el('div', { class: 'table-wrap' }, el('table', {},
    el('thead', {}, el('tr', {}, ['Sweep', 'Name', 'Created', 'What', 'Jobs', 'States', 'Varies'].map((h) => el('th', {}, h)))), body)));
  every(5000, async () => {
    try {
      const list = await api('ListSweeps', { pageSize: 200 });
      const states = (s) => [['succeeded', s.succeeded], ['failed', s.failed], ['cancelled', s.cancelled], ['running', s.running], ['queued', s.queued]]
        .filter(([, n]) => n).map(([name, n]) => n + ' ' + name).join(', ');
      body.replaceChildren(...(list.sweeps || []).map((s) => el('tr', { 'data-sweep': s.id },
        el('td', {}, el('a', { href: '#/sweep/' + s.id }, s.id)), el('td', {}, s.name || '-'),
        el('td', {}, when(s.createTime)), el('td', {}, s.what), el('td', { class: 'num' }, s.jobs),
        el('td', {}, states(s) || '-'), el('td', { class: 'muted' }, s.varies))));
      showError('');
    } catch (error) { showError(error.message); }
  });
}

// Rows of /api/v1/jobs/ID/export?format=jsonl (common/metric_rows.h).
async function exportRows(id) {
  const response = await fetch('/api/v1/jobs/' + id + '/export?format=jsonl', { credentials: 'same-origin' });
  if (!response.ok) throw new Error((await response.json().catch(() => ({}))).message || response.statusText);
  return (await response.text()).split('\n').filter((l) => l).map((l) => JSON.parse(l));
}

async function renderCompare(page, ids) {
  page.append(el('h1', {}, 'Compare jobs ' + ids.join(', ')));
  if (ids.length < 2 || ids.length > 8) { showError('compare 2 to 8 jobs (got ' + ids.length + ')'); return; }
  let all;
  try { all = await Promise.all(ids.map(exportRows)); } catch (error) { showError(error.message); return; }
  const charts = el('div', { class: 'charts' });
  page.append(charts);
  // x in epochs (fractional within an epoch) so jobs of different batch sizes line up.
  const stepTables = all.map((rows) => {
    const steps = rows.filter((r) => r.kind === 'step');
    const perEpoch = {};
    for (const r of steps) perEpoch[r.epoch] = Math.max(perEpoch[r.epoch] || 0, r.batch + 1);
    return [steps.map((r) => r.epoch - 1 + (r.batch + 1) / perEpoch[r.epoch]), steps.map((r) => r.loss)];
  });
  new LiveChart(charts, 'Batch loss by epoch', ids.map((id, i) => line('job ' + id, i)), { id: 'compare-loss', xLabel: 'epoch' })
    .set(uPlot.join(stepTables));
  const epochTables = all.map((rows) => {
    const epochs = rows.filter((r) => r.kind === 'epoch' && r.validation_accuracy !== undefined);
    return [epochs.map((r) => r.epoch), epochs.map((r) => r.validation_accuracy)];
  });
  new LiveChart(charts, 'Validation accuracy by epoch', ids.map((id, i) => line('job ' + id, i, { points: { show: true } })), { id: 'compare-accuracy', xLabel: 'epoch' })
    .set(uPlot.join(epochTables));
}

// --- devices -----------------------------------------------------------------------------------

function renderDevices(page) {
  const body = el('tbody', { id: 'devices' });
  page.append(el('h1', {}, 'Devices'), el('div', { class: 'table-wrap' }, el('table', {},
    el('thead', {}, el('tr', {}, ['Device', 'Description', 'Total memory', 'In use now (current)', 'Driver allocated', 'Running jobs'].map((h) => el('th', {}, h)))), body)));
  every(2000, async () => {
    try {
      const [devices, running] = await Promise.all([api('ListDevices'), api('ListJobs', { states: ['RUNNING'], pageSize: 1000 })]);
      // A job asking for "cuda" runs on cuda:0; memory is summed over the device's running jobs.
      const onDevice = (name) => running.jobs.filter((j) => j.spec.device === name || (name === 'cuda:0' && j.spec.device === 'cuda'));
      body.replaceChildren(...devices.devices.map((d) => {
        const jobs = onDevice(d.name);
        const sum = (key) => jobs.reduce((total, j) => total + Number((j.latestStep || {})[key] || 0), 0);
        return el('tr', { 'data-device': d.name },
          el('td', {}, d.name), el('td', {}, d.description),
          el('td', { class: 'num' }, Number(d.totalMemoryBytes) ? bytes(d.totalMemoryBytes) : ''),
          el('td', { class: 'num' }, bytes(sum('currentAllocatedBytes'))),
          el('td', { class: 'num' }, bytes(sum('driverAllocatedBytes'))),
          el('td', {}, jobs.map((j) => el('a', { href: '#/job/' + j.id }, j.id + ' '))));
      }));
      showError('');
    } catch (error) { showError(error.message); }
  });
}

// --- routing -----------------------------------------------------------------------------------

function route() {
  for (const dispose of state.dispose.splice(0)) dispose();
  showError('');
  const page = document.getElementById('page');
  page.replaceChildren();
  const hash = location.hash || '#/';
  let match;
  document.querySelectorAll('header nav a').forEach((a) => a.classList.toggle('active', a.getAttribute('href') === hash));
  if ((match = hash.match(/^#\/job\/(\d+)$/))) renderJob(page, match[1]);
  else if ((match = hash.match(/^#\/sweep\/(\d+)$/))) renderSweep(page, match[1]);
  else if (hash === '#/sweeps') renderSweeps(page);
  else if ((match = hash.match(/^#\/compare\/([\d,]+)$/))) renderCompare(page, match[1].split(',').filter((x) => x));
  else if (hash === '#/devices') renderDevices(page);
  else renderQueue(page);
}

async function start() {
  const response = await fetch('/api/v1/session', { credentials: 'same-origin' });
  if (response.status === 401) { location.reload(); return; }  // logged out: the login form
  if (!response.ok) { showError('traind answered ' + response.status + '; reload to try again'); return; }
  const session = await response.json();
  Object.assign(state, { csrf: session.csrfToken, owner: session.owner, admin: session.admin });
  document.getElementById('who').textContent = session.owner + (session.admin ? ' (admin)' : '');
  document.getElementById('logout').addEventListener('click', () => act(async () => {
    await fetch('/logout', { method: 'POST', headers: { 'X-CSRF-Token': state.csrf }, credentials: 'same-origin' });
    location.href = '/';
  }));
  window.addEventListener('hashchange', route);
  route();
}

start();
