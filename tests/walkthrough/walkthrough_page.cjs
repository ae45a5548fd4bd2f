// The browser half of the walkthrough (walkthrough_test.py runs it after the terminal half): the
// dashboard, logged in by its one-time link, finds both sweeps on its Sweeps page by name, and
// each sweep's page names the same winner `trainctl report` named; the crashed job's page shows
// its error. Headless Chromium through the pages themselves (clicks, not crafted requests).
//   node walkthrough_page.cjs NODE_MODULES '{"winners": {...}, "crashed": "ID"}'
'use strict';
const fs = require('fs');
const path = require('path');

const [modules, found] = process.argv.slice(2);
const { winners, crashed } = JSON.parse(found);
const puppeteer = require(path.resolve(modules, 'puppeteer-core'));
const base = process.env.TRAIND_DASHBOARD_URL;
const chromium = process.env.CHROMIUM || '/usr/bin/chromium';

function check(condition, message) {
  if (!condition) throw new Error('FAILED: ' + message);
  console.log('ok: ' + message);
}

async function main() {
  if (!fs.existsSync(chromium)) {
    console.log('SKIP: no Chromium at ' + chromium);
    process.exit(77);
  }
  let browser;
  try {
    browser = await puppeteer.launch({
      executablePath: chromium, headless: true,
      args: (process.getuid() === 0 ? ['--no-sandbox'] : []).concat(['--disable-gpu', '--disable-dev-shm-usage']),
    });
  } catch (error) {
    console.log('SKIP: Chromium does not start here: ' + error.message.split('\n')[0]);
    process.exit(77);
  }
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    await page.goto(process.env.TRAIND_DASHBOARD_LOGIN_URL);
    await page.click('header nav a[href="#/sweeps"]');
    await page.waitForSelector('#sweeps tr[data-sweep]', { timeout: 15000 });
    for (const [name, [by, config, percent]] of Object.entries(winners)) {
      const link = await page.waitForFunction((wanted) => {
        const row = Array.from(document.querySelectorAll('#sweeps tr[data-sweep]'))
          .find((tr) => tr.children[1].textContent === wanted);
        return row && row.querySelector('a');
      }, { timeout: 15000 }, name);
      await Promise.all([page.waitForSelector('#best', { timeout: 15000 }), link.click()]);
      const best = await page.$eval('#best', (p) => p.textContent);
      check(best === `Best by ${by}: ${config} on cpu (${percent}%)`,
        `the sweep page of ${name} names the winner trainctl report named (${best})`);
      await page.goBack();
      await page.waitForSelector('#sweeps tr[data-sweep]', { timeout: 15000 });
    }
    await page.goto(base + '/#/job/' + crashed);
    await page.waitForSelector('#failure:not([hidden])', { timeout: 15000 });
    const banner = await page.$eval('#failure', (box) => box.textContent);
    check(banner.includes('illegal memory access'), 'the crashed job\'s page shows its error (' + banner.slice(0, 60) + '...)');
  } finally {
    await browser.close();
  }
}

main().catch((error) => { console.error(error.stack || String(error)); process.exit(1); });
