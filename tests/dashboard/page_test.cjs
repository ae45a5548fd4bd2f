// The dashboard in a real browser: headless Chromium (Debian's) driven by puppeteer-core against
// a real traind (tests/dashboard/with_dashboard.sh), real jobs submitted with trainctl.
//   node page_test.cjs NODE_MODULES [SCREENSHOT_DIR]
// Checks: a page without the token gets 401; a job page's charts fit their cards at 1024-1920 px
// on first load; the login form, typed into and clicked, logs in once
// the one-time link is spent (and says why when it does not); the queue lists a submitted job; on the job page the
// loss curve's point count grows while the job runs; Cancel on the page cancels it; the sweep page
// renders its report, the compare page both members, the devices page the CPU; a sweep of a user's
// Python program (trainctl sweep -- python3 ...) shows its report, its members' curves and the file
// it wrote as a downloadable artifact; no JavaScript error or failed request is logged. With SCREENSHOT_DIR, saves the queue, job and
// sweep pages there (docs/img/ holds the ones in the docs). Exit 77 (skip) without Chromium.
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const [modules, screenshots] = process.argv.slice(2);
const puppeteer = require(path.resolve(modules, 'puppeteer-core'));
const base = process.env.TRAIND_DASHBOARD_URL;
const login = process.env.TRAIND_DASHBOARD_LOGIN_URL;
const chromium = process.env.CHROMIUM || '/usr/bin/chromium';

function trainctl(...args) {
  return execFileSync('trainctl', args, { encoding: 'utf8' }).trim();
}
function jobState(id) {
  return JSON.parse(trainctl('--output', 'json', 'show', id)).state;
}
async function until(what, predicate, seconds = 90) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await predicate();
    if (value) return value;
    if (Date.now() > deadline) throw new Error('timed out waiting for ' + what);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
function check(condition, message) {
  if (!condition) throw new Error('FAILED: ' + message);
  console.log('ok: ' + message);
}

let errors = [];  // the page's JavaScript errors, console errors and failed requests

async function main() {
  if (!fs.existsSync(chromium)) {
    console.log('SKIP: no Chromium at ' + chromium + ' (deploy/install-deps.sh installs chromium)');
    process.exit(77);
  }
  let browser;
  try {
    browser = await puppeteer.launch({
      executablePath: chromium,
      headless: true,
      // Chromium's sandbox needs user namespaces, which root in a container or chroot lacks.
      args: (process.getuid() === 0 ? ['--no-sandbox'] : []).concat(['--disable-gpu', '--disable-dev-shm-usage']),
    });
  } catch (error) {
    console.log('SKIP: Chromium does not start here: ' + error.message.split('\n')[0]);
    process.exit(77);
  }
  try {
    // A browser without the login token: 401 (the login form).
    const stranger = await (await browser.createBrowserContext()).newPage();
    const refused = await stranger.goto(base + '/');
    check(refused.status() === 401, 'a page without the token gets 401');
    await stranger.close();

    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    errors = [];
    page.on('pageerror', (error) => errors.push('page error: ' + error.message));
    page.on('console', (message) => { if (message.type() === 'error') errors.push('console: ' + message.text()); });
    page.on('response', (response) => { if (response.status() >= 400) errors.push('HTTP ' + response.status() + ' ' + response.url()); });
    const landed = await page.goto(login);
    check(landed.status() === 200 && page.url() === base + '/', 'the one-time link logs in and lands on the queue');

    // Runs until the page cancels it, however fast the machine: 200 epochs of 25,600 images
    // (3 epochs once ended before Cancel was clicked on a fast machine).
    const running = trainctl('submit', '--model', 'mlp', '--dataset', 'fashion-mnist', '--device', 'cpu',
      '--epochs', '200', '--limit-train', '25600', '--batch-size', '64', '--log-every', '5');
    await page.waitForSelector(`tr[data-job="${running}"]`, { timeout: 15000 });
    check(true, 'the queue table lists submitted job ' + running);
    await until('job ' + running + ' to run', () => jobState(running) === 'RUNNING');
    await page.waitForFunction((id) => {
      const row = document.querySelector(`tr[data-job="${id}"]`);
      return row && row.textContent.includes('ETA');
    }, { timeout: 30000 }, running);
    if (screenshots) await page.screenshot({ path: path.join(screenshots, 'dashboard-queue.png') });

    await page.goto(base + '/#/job/' + running);
    const points = () => page.$eval('#loss-chart', (box) => Number(box.dataset.points));
    const first = await until('the first loss points', async () => { const n = await points(); return n > 0 && n; }, 60);
    const later = await until('more loss points', async () => { const n = await points(); return n > first && n; }, 60);
    check(later > first && jobState(running) === 'RUNNING',
      `the loss curve grows while the job runs (${first} -> ${later} points)`);
    await until('memory and speed points', async () =>
      (await page.$eval('#memory-chart', (b) => Number(b.dataset.points))) > 1 &&
      (await page.$eval('#speed-chart', (b) => Number(b.dataset.points))) > 1 &&
      (await page.$eval('#accuracy-chart', (b) => Number(b.dataset.points))) > 0, 60);
    if (screenshots) await page.screenshot({ path: path.join(screenshots, 'dashboard-job.png'), fullPage: true });

    await page.click('#cancel');
    await until('job ' + running + ' to end cancelled', () => jobState(running) === 'CANCELLED', 60);
    check(true, 'Cancel on the job page cancelled job ' + running);
    await page.waitForFunction(() => document.querySelector('h1 .state.CANCELLED'), { timeout: 15000 });

    // A small sweep for its page: two batch sizes, two short epochs each.
    const sweep = trainctl('sweep', '--model', 'mlp', '--dataset', 'fashion-mnist', '--device', 'cpu',
      '--epochs', '2', '--limit-train', '6400', '--limit-test', '500', '--log-every', '5',
      '--batch-size', '64,128');
    await until('the sweep to finish', () => {
      const jobs = JSON.parse(trainctl('--output', 'json', 'list')).jobs || [];
      const mine = jobs.filter((j) => j.sweepId === sweep);
      return mine.length === 2 && mine.every((j) => j.state === 'SUCCEEDED');
    }, 180);
    await page.goto(base + '/#/sweep/' + sweep);
    await page.waitForSelector('#report tbody tr', { timeout: 15000 }).catch(async (error) => {
      throw new Error(error.message + '; the page says: ' + await banner(page));
    });
    const rows = await page.$$eval('#report tbody tr', (r) => r.length);
    check(rows === 2, 'the sweep page shows its report (' + rows + ' rows)');
    await page.waitForFunction(() => Number(document.querySelector('#sweep-chart').dataset.points) > 0, { timeout: 15000 });
    if (screenshots) await page.screenshot({ path: path.join(screenshots, 'dashboard-sweep.png'), fullPage: true });

    // The sweep's two members on one chart.
    const members = (JSON.parse(trainctl('--output', 'json', 'list')).jobs || [])
      .filter((j) => j.sweepId === sweep).map((j) => j.id);
    await page.goto(base + '/#/compare/' + members.join(','));
    await page.waitForFunction(() => {
      const chart = document.querySelector('#compare-loss');
      return chart && Number(chart.dataset.points) > 0;
    }, { timeout: 15000 });
    const series = await page.$$eval('#compare-loss .u-legend .u-series', (s) => s.length);
    check(series === 3, 'the compare page draws both jobs on one chart (' + (series - 1) + ' series)');

    await page.goto(base + '/#/devices');
    await page.waitForSelector('tr[data-device="cpu"]', { timeout: 15000 });
    check(true, 'the devices page lists the CPU');

    await chartsFitTheirCards(browser, running);
    await loginForm(browser);
    await programSweep(page);
    await searchPage(page);
    await programWithoutBatchCounts(page);
    await failedJobShowsItsError(page);
    await ownMetrics(page);

    check(errors.length === 0, 'no JavaScript error was logged' + (errors.length ? ': ' + errors.join(' | ') : ''));
  } catch (error) {
    // What the page itself reported, to tell a slow page from a broken one.
    if (errors.length) console.error('the page reported: ' + errors.join(' | '));
    throw error;
  } finally {
    await browser.close();
  }
}

main().catch((error) => { console.error(error.stack || String(error)); process.exit(1); });

// A search (random, ASHA, a budget): its page shows how far it got, the best trial, what was decided about packing its
// trials, the compute saved and the budget, every
// trial with its draw, the search curve and each parameter against the metric.
async function searchPage(page) {
  const sweep = trainctl('sweep', '--model', 'mlp', '--dataset', 'fashion-mnist', '--device', 'cpu',
    '--epochs', '3', '--limit-train', '1280', '--limit-test', '200', '--search', 'random',
    '--trials', '4', '--early-stop', 'asha', '--lr', 'loguniform:1e-3:1e-1', '--name', 'search-page',
    '--device-hours', '1');
  await until('the search to end', () =>
    JSON.parse(trainctl('--output', 'json', 'report', sweep)).search.done === true, 300);
  await page.goto(base + '/#/sweep/' + sweep);
  await page.waitForSelector('#search-trials tbody tr', { timeout: 15000 }).catch(async (error) => {
    throw new Error(error.message + '; the page says: ' + await banner(page));
  });
  const trials = await page.$$eval('#search-trials tbody tr', (r) => r.length);
  check(trials === 4, 'the search page lists its 4 trials (' + trials + ')');
  const summary = await page.$eval('#search-summary', (p) => p.textContent);
  check(summary.includes('random search by validation_accuracy') && summary.includes('done'),
    'the search page says what it is and that it is done (' + summary + ')');
  const best = await page.$eval('#search-best', (p) => p.textContent);
  check(/Best: trial \d+ \(job \d+\) [0-9.]+% after 3 epochs: learning_rate=/.test(best),
    'the search page names its best trial and its draw (' + best + ')');
  const compute = await page.$eval('#search-compute', (p) => p.textContent);
  check(/epochs trained, \d+% of the 12 /.test(compute), 'the search page says what it saved (' + compute + ')');
  const packing = await page.$eval('#search-packing', (p) => p.textContent).catch(() => '(none)');
  check(/^Packing: \d+ trials? at once on the CPU(, not packed)?, bounded by .*; alone a trial kept the host's \d+ cores? busy \d+% of the time/.test(packing),
    'the search page says how many trials shared the CPU and why (' + packing + ')');
  const budget = await page.$eval('#search-budget', (p) => p.textContent);
  check(/^Budget: [0-9.]+ s of 1 h 0 m of device-time spent \(\d+%\)$/.test(budget), 'the search page shows its budget (' + budget + ')');
  await page.waitForFunction(() => Number(document.querySelector('#search-curve').dataset.points) === 4 &&
    document.querySelector('#search-curve').dataset.xAscending === 'true', { timeout: 15000 });
  await page.waitForFunction(() => Number(document.querySelector('#search-param-learning_rate').dataset.points) === 4,
    { timeout: 15000 });
  check(true, 'the search page draws the search curve and learning rate against the metric');
  if (screenshots) await page.screenshot({ path: path.join(screenshots, 'dashboard-search.png'), fullPage: true });
}

// A sweep of an unmodified program (seed-style log lines, no traind code): its report, a member's
// curves and log, and the file it wrote to TRAIND_OUTPUT_DIR as a link that downloads it.
async function programSweep(page) {
  await withProgram([
    'import os, sys',
    'seed = int(sys.argv[sys.argv.index("--seed") + 1])',
    'for epoch in (1, 2):',
    '    for batch in range(0, 400, 50):',
    '        print(f"Epoch: {epoch:03d}/002 | Batch {batch:04d}/0400 | Loss: {1.0 / (epoch + batch / 400 + seed):.4f}")',
    '    print(f"Epoch: {epoch:03d}/002 | Train: 8{epoch}.00% | Validation: 8{epoch}.50% | Best Validation (Ep. {epoch:03d}): 8{epoch}.50%")',
    'print("Test accuracy 82.25%")',
    'with open(os.path.join(os.environ["TRAIND_OUTPUT_DIR"], "summary.txt"), "w") as f:',
    '    f.write(f"seed {seed}\\n")',
  ], async (work) => {
    const sweep = trainctl('sweep', '-C', work, '--device', 'cpu', '--name', 'seeds', '--param', 'seed=1,2', '--',
      'python3', 'train.py', '--seed', '{seed}');
    const members = await until('the program sweep to finish', () => {
      const jobs = (JSON.parse(trainctl('--output', 'json', 'list')).jobs || []).filter((j) => j.sweepId === sweep);
      return jobs.length === 2 && jobs.every((j) => j.state === 'SUCCEEDED') && jobs.map((j) => j.id);
    }, 180);
    await page.goto(base + '/#/sweep/' + sweep);
    await page.waitForSelector('#report tbody tr', { timeout: 15000 });
    const rows = await page.$$eval('#report tbody tr', (r) => r.map((row) => row.textContent));
    check(rows.length === 2 && rows.every((text) => text.includes('82.25') && text.includes('train.py param.seed=')),
      'a program sweep\'s page shows its report, each row named by its program and seed (' + rows.join(' | ') + ')');
    const best = await page.$eval('#best', (p) => p.textContent).catch(() => '');
    const marked = await page.$$eval('#report tbody tr.best', (r) => r.length);
    check(/^Best by test accuracy: train.py param.seed=1 on cpu \(82.25%\)$/.test(best) && marked === 1,
      'the sweep page says which run won and marks its row (' + best + ')');
    await page.waitForFunction(() => Number((document.querySelector('#sweep-chart') || { dataset: {} }).dataset.points) > 0, { timeout: 60000 });
    await page.waitForFunction(() => Number((document.querySelector('#sweep-accuracy') || { dataset: {} }).dataset.points) > 0, { timeout: 60000 });
    await page.waitForSelector('#runs tbody tr', { timeout: 60000 });
    check(true, 'the sweep page draws each row\'s validation accuracy by epoch');
    const firstSeed = async () => page.$eval('#runs tbody tr', (row) => row.textContent);
    await page.click('#runs th[data-column="param.seed"]');
    const up = await firstSeed();
    await page.click('#runs th[data-column="param.seed"]');
    const down = await firstSeed();
    const runs = await page.$$eval('#runs tbody tr', (r) => r.length);
    check(runs === 2 && /SUCCEEDED1/.test(up) && /SUCCEEDED2/.test(down),
      'the runs table lists each member with its seed, sorted by a click on the heading (' + up + ' / ' + down + ')');

    await page.goto(base + '/#/sweeps');
    const listed = await page.waitForSelector(`tr[data-sweep="${sweep}"]`, { timeout: 15000 });
    const listedText = await listed.evaluate((row) => row.textContent);
    check(listedText.includes('seeds') && listedText.includes('2 succeeded') && listedText.includes('param.seed=1,2'),
      'the sweeps page lists the sweep with its name, states and what varies (' + listedText + ')');

    const member = members[0];
    await page.goto(base + '/#/job/' + member);
    const program = await page.waitForFunction(() => {
      const facts = document.querySelector('dl.kv');
      return facts && facts.textContent.includes('{seed}=') && facts.textContent;
    }, { timeout: 15000 }).then((handle) => handle.jsonValue());
    check(/python3 train\.py --seed \{seed\}\s+\{seed\}=[12]/.test(program),
      'a sweep member\'s page says its program and the value it ran with (' + program + ')');
    const lossPoints = await until('the program\'s loss curve', async () => {
      const n = await page.$eval('#loss-chart', (box) => Number(box.dataset.points)).catch(() => 0);
      return n >= 16 && n;
    }, 30);
    const accuracyPoints = await until('the program\'s accuracy curve', async () =>
      page.$eval('#accuracy-chart', (box) => Number(box.dataset.points)).catch(() => 0), 30);
    check(lossPoints >= 16 && accuracyPoints > 0,
      `a program's job page draws its printed metrics (${lossPoints} loss, ${accuracyPoints} accuracy points)`);
    const link = await page.waitForSelector('#artifacts a', { timeout: 15000 });
    const [name, href] = await link.evaluate((a) => [a.textContent, a.getAttribute('href')]);
    const fetched = await page.evaluate(async (url) => {
      const response = await fetch(url);
      return { status: response.status, body: await response.text() };
    }, href);
    check(name === 'summary.txt' && fetched.status === 200 && /^seed [12]\n$/.test(fetched.body),
      'the file the program wrote is an artifact the page downloads (' + name + ': ' + JSON.stringify(fetched.body) + ')');
  });
}

// A program printing Hugging Face's log dicts (a fractional epoch, no batch counts): its steps'
// batches restart each epoch, and the job page's loss curve must still rise along x.
async function programWithoutBatchCounts(page) {
  await withProgram([
    'for step in range(1, 13):',
    '    print({"loss": round(1.0 / step, 4), "learning_rate": 0.001, "epoch": step / 4})',
  ], async (work) => {
    const job = trainctl('run', '-C', work, '--device', 'cpu', '--', 'python3', 'train.py');
    await until('the program job ' + job + ' to finish', () => jobState(job) === 'SUCCEEDED', 120);
    await page.goto(base + '/#/job/' + job);
    const points = await until('its loss curve', async () => {
      const n = await page.$eval('#loss-chart', (box) => Number(box.dataset.points)).catch(() => 0);
      return n >= 12 && n;
    }, 30);
    const ascending = await page.$eval('#loss-chart', (box) => box.dataset.xAscending);
    check(ascending === 'true',
      `a program without batch counts gets a loss curve whose x rises (${points} points, ascending ${ascending})`);
  });
}

// A job page opened fresh at common window widths: each chart's drawing lies inside its own card,
// and no two cards overlap (a chart sized before the grid placed its neighbours was drawn across
// them until the window was resized). The layout is read from the browser, not computed here.
async function chartsFitTheirCards(browser, job) {
  for (const width of [1024, 1280, 1400, 1920]) {
    const page = await browser.newPage();
    try {
      await page.setViewport({ width, height: 900 });
      await page.goto(base + '/#/job/' + job);
      await page.waitForFunction(() => document.querySelectorAll('.chart .uplot').length === 4, { timeout: 15000 });
      const fits = () => Array.from(document.querySelectorAll('.chart')).every((card) => {
        const box = card.getBoundingClientRect();
        const drawn = card.querySelector('.uplot').getBoundingClientRect();
        return drawn.left >= box.left - 0.5 && drawn.right <= box.right + 0.5;
      });
      const laidOut = await page.waitForFunction(fits, { timeout: 5000 }).then(() => true, () => false);
      const rects = await page.$$eval('.chart', (cards) => cards.map((card) => {
        const box = card.getBoundingClientRect();
        const drawn = card.querySelector('.uplot').getBoundingClientRect();
        return { id: card.id, left: box.left, right: box.right, top: box.top, bottom: box.bottom,
          drawnLeft: drawn.left, drawnRight: drawn.right };
      }));
      const overlap = rects.some((a, i) => rects.some((b, j) => i < j &&
        a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5));
      check(laidOut && !overlap, `at ${width} px every chart is drawn inside its own card (` +
        rects.map((r) => `${r.id} card ${Math.round(r.left)}-${Math.round(r.right)} drawn ${Math.round(r.drawnLeft)}-${Math.round(r.drawnRight)}`).join('; ') + ')');
    } finally {
      await page.close();
    }
  }
}

// The login form as a user meets it once the one-time link is spent: the link again says it was
// used; a wrong token typed in says it was not accepted; the right one (the local user's
// http.token) typed and submitted with a click lands on the queue. A fresh browser context each,
// so no cookie of the main page helps.
async function loginForm(browser) {
  const token = fs.readFileSync(process.env.TRAIND_HTTP_TOKEN_FILE, 'utf8').trim();
  const context = await browser.createBrowserContext();
  try {
    const page = await context.newPage();
    const spent = await page.goto(login);
    const said = await page.$eval('#error', (p) => p.textContent).catch(() => '');
    check(spent.status() === 401 && /already used or has expired/.test(said),
      'the spent login link shows the form saying so (' + spent.status() + ': ' + said + ')');

    await page.type('input[name=token]', 'not-a-token');
    const [wrong] = await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
    const refusal = await page.$eval('#error', (p) => p.textContent).catch(() => '');
    check(wrong.status() === 401 && /not accepted/.test(refusal),
      'a wrong token typed into the form is refused with a message (' + wrong.status() + ': ' + refusal + ')');

    await page.type('input[name=token]', token);
    const [landed] = await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
    check(landed.status() === 200 && page.url() === base + '/',
      'the token typed into the login form logs in and lands on the queue (' + landed.status() + ' ' + page.url() + ')');
    await page.waitForSelector('#logout', { timeout: 15000 });
  } finally {
    await context.close();
  }
}

// A program that fails with a long error line: its page says so in a banner above everything,
// the error whole and wrapped (not cut off at the card's right edge), and the result in words.
async function failedJobShowsItsError(page) {
  await withProgram([
    'import sys',
    'print("epoch 1 loss 0.9 val_acc 0.61")',
    'sys.exit("ValueError: " + "the learning rate schedule could not be built " * 6)',
  ], async (work) => {
    const job = trainctl('run', '-C', work, '--device', 'cpu', '--', 'python3', 'train.py');
    await until('the program job ' + job + ' to fail', () => jobState(job) === 'FAILED', 120);
    await page.setViewport({ width: 1024, height: 900 });
    await page.goto(base + '/#/job/' + job);
    await page.waitForSelector('#failure:not([hidden])', { timeout: 15000 });
    const banner = await page.$eval('#failure', (box) => ({
      text: box.textContent,
      fits: Array.from(box.querySelectorAll('pre')).every((pre) => pre.scrollWidth <= pre.clientWidth + 1),
      top: box.getBoundingClientRect().top,
    }));
    const facts = await page.$eval('#result-facts', (dl) => dl.textContent);
    check(banner.text.includes('failed') && banner.text.includes('could not be built') && banner.fits,
      'a failed job\'s page shows its error in a banner, wrapped to the page (' + banner.text.slice(0, 80) + '...)');
    check(facts.includes('best validation61.00% (epoch 1)') && !facts.includes('test accuracy'),
      'its result says what it measured and nothing it did not (' + facts + ')');
    await page.setViewport({ width: 1280, height: 900 });
  });
}

// A program's own metric given to traind.report() becomes a curve on its job page and a value in
// its export, as W&B and MLflow show a logged metric.
async function ownMetrics(page) {
  await withProgram([
    'import traind',
    'for step in range(1, 9):',
    '    traind.report(epoch=1, epochs=1, batch=step, batches=8, loss=1.0 / step, grad_norm=2.0 + step)',
  ], async (work) => {
    const job = trainctl('run', '-C', work, '--device', 'cpu', '--', 'python3', 'train.py');
    await until('the program job ' + job + ' to finish', () => jobState(job) === 'SUCCEEDED', 120);
    await page.goto(base + '/#/job/' + job);
    const points = await until('its own metric\'s curve', async () =>
      page.$eval('#own-chart', (box) => Number(box.dataset.points)).catch(() => 0), 30);
    const legend = await page.$eval('#own-chart', (box) => box.textContent);
    const rows = trainctl('export', job, '--format', 'jsonl').split('\n').map((l) => JSON.parse(l));
    const exported = rows.filter((r) => r.kind === 'step' && r.metrics && r.metrics.grad_norm !== undefined);
    await page.goto(base + '/#/');
    const row = await page.waitForSelector(`tr[data-job="${job}"]`, { timeout: 15000 });
    const queued = await row.evaluate((tr) => tr.children[3].textContent);  // the Model column
    check(queued.startsWith('train.py'), 'the queue names a program\'s job by its program (' + queued + ')');
    check(points === 8 && legend.includes('grad_norm') && exported.length === 8 && exported[7].metrics.grad_norm === 10,
      `traind.report(grad_norm=...) is a curve on the job page (${points} points) and a value in its export (${exported.length} rows)`);
  });
}

// Calls fn with a new folder holding train.py made of `lines`, and removes the folder after.
async function withProgram(lines, fn) {
  const work = fs.mkdtempSync('/tmp/dashboard-program.');
  try {
    fs.writeFileSync(path.join(work, 'train.py'), lines.concat('').join('\n'));
    return await fn(work);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

// What the page's error banner said, for a failure's message.
async function banner(page) {
  return page.$eval('#error', (box) => (box.hidden ? '' : box.textContent)).catch(() => '');
}
