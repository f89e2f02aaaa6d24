// speedscope.mjs APP_DIR OUT_DIR FILE... [--no-shots FILE...] — opens each FILE in the real speedscope web app, in
// headless Chromium, and reports what speedscope made of it.
//
// APP_DIR is speedscope's static build (dist/release of its npm package). It is served with FILE
// on a loopback port and each FILE is opened the way a user shares a profile: index.html
// #profileURL=... (speedscope fetches it and imports it with its own importers, picking the format
// itself). Chromium is driven over the DevTools protocol through a pipe (--remote-debugging-pipe),
// so nothing but Node and Chromium is needed.
//
// For each FILE one JSON line on stdout:
//   {"file", "title", "error", "dialogs", "warnings", "profiles": [{"name", "label", "frames"}], "screenshot"}
// title is document.title (speedscope sets "NAME - speedscope" only after a successful import);
// error is speedscope's "Something went wrong" text when an importer threw; dialogs are alert()s
// ("Unrecognized format!", "... but it's empty!"); warnings are what it logged as warnings or
// errors meanwhile (what its importers worked around). profiles are the entries of its profile
// selector (one per thread or goroutine track of a trace-event file), each with its frames as
// [name, total, self] from the Sandwich view's table, the view that lists every frame as text (the
// flame charts are drawn on a canvas). Screenshots go to OUT_DIR: NAME.png (the Time Order view of
// the first profile), NAME.K.png (of the K-th), NAME.sandwich.png (the first profile's table).
//
// Exit status: 0 when every file was opened and read (whatever speedscope said about it), 1 when
// the browser could not be driven, 77 when Chromium is not installed.
import {spawn} from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

const [appDir, outDir, ...args] = process.argv.slice(2);
// --no-shots before files: no screenshots of those (the damaged copies), which saves seconds.
const files = args.filter(a => a !== '--no-shots');
const noShots = new Set(args.slice(args.indexOf('--no-shots') + 1));
if (!args.includes('--no-shots')) noShots.clear();
if (!appDir || !outDir || files.length === 0) {
  console.error('usage: speedscope.mjs APP_DIR OUT_DIR FILE... [--no-shots FILE...]');
  process.exit(2);
}
const chromium = process.env.WEAVE_CHROMIUM || '/usr/bin/chromium';
if (!fs.existsSync(chromium)) {
  console.error(`speedscope.mjs: SKIPPED: no Chromium at ${chromium} (Debian package chromium)`);
  process.exit(77);
}
fs.mkdirSync(outDir, {recursive: true});

// Every step is bounded: a hung browser fails the run instead of hanging the suite.
const deadline = setTimeout(() => fail('timed out after 100 s'), 100_000);
let browser;
function fail(message) {
  console.error(`speedscope.mjs: ${message}`);
  if (browser) killGroup('SIGKILL');
  process.exit(1);
}

// ---- the static server: speedscope's files, and the profiles under /profiles/ -------------------
const types = {'.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json',
               '.wasm': 'application/wasm', '.png': 'image/png', '.woff2': 'font/woff2'};
const served = new Map(files.map(f => [path.basename(f), f]));
const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://127.0.0.1');
  let file;
  if (url.pathname.startsWith('/profiles/')) {
    file = served.get(decodeURIComponent(url.pathname.slice('/profiles/'.length)));
  } else {
    const rel = path.normalize(decodeURIComponent(url.pathname === '/' ? '/index.html' : url.pathname));
    file = path.join(appDir, rel);
    if (!file.startsWith(path.resolve(appDir) + path.sep)) file = undefined;
  }
  if (!file || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
    res.writeHead(404);
    res.end();
    return;
  }
  res.writeHead(200, {'Content-Type': types[path.extname(file)] || 'application/octet-stream'});
  fs.createReadStream(file).pipe(res);
});
await new Promise(resolve => server.listen(0, '127.0.0.1', resolve));
const origin = `http://127.0.0.1:${server.address().port}`;

// ---- Chromium, driven over the DevTools protocol on fds 3 (to it) and 4 (from it) ------------------
const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'weave-chromium-'));
browser = spawn(chromium, [
  '--headless=new', '--remote-debugging-pipe', `--user-data-dir=${profileDir}`,
  '--no-sandbox', // as root, Chromium refuses to start with its sandbox
  '--no-first-run', '--no-default-browser-check', '--disable-extensions', '--disable-sync',
  '--disable-background-networking', '--disable-component-update', '--disable-dev-shm-usage',
  // speedscope draws its flame charts with WebGL: software GL, as there is no GPU.
  '--use-angle=swiftshader', '--enable-unsafe-swiftshader',
  '--window-size=1400,900',
  '--lang=en-US', // numbers as speedscope formats them with toLocaleString: "2,119,905"
  'about:blank',
], {stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'], detached: true}); // its own process group
// Chromium's helpers (renderer, GPU, crashpad) are in the browser's process group: ended with it.
function killGroup(signal) {
  try { process.kill(-browser.pid, signal); } catch {}
}
let stderr = '';
browser.stderr.on('data', d => { stderr += d; });
browser.on('exit', code => { if (!finished) fail(`chromium exited (${code}) early:\n${stderr.slice(-2000)}`); });
let finished = false;

let nextId = 1;
const pending = new Map();
const listeners = [];
let buffer = '';
browser.stdio[4].on('data', chunk => {
  buffer += chunk.toString('utf8');
  let end;
  while ((end = buffer.indexOf('\0')) >= 0) {
    const message = JSON.parse(buffer.slice(0, end));
    buffer = buffer.slice(end + 1);
    if (message.id && pending.has(message.id)) {
      const {resolve, reject, method} = pending.get(message.id);
      pending.delete(message.id);
      if (message.error) reject(new Error(`${method}: ${message.error.message}`));
      else resolve(message.result);
    } else if (message.method) {
      for (const l of listeners) l(message);
    }
  }
});
function send(method, params = {}, sessionId) {
  const id = nextId++;
  browser.stdio[3].write(JSON.stringify({id, method, params, ...(sessionId ? {sessionId} : {})}) + '\0');
  return new Promise((resolve, reject) => pending.set(id, {resolve, reject, method}));
}
const sleep = ms => new Promise(r => setTimeout(r, ms));

const {targetId} = await send('Target.createTarget', {url: 'about:blank'});
const {sessionId} = await send('Target.attachToTarget', {targetId, flatten: true});
const page = (method, params) => send(method, params, sessionId);
let dialogs = [], warnings = [];
listeners.push(m => {
  // speedscope's importers say on the console what they had to work around ("Tried to end frame
  // ... when ... was on the top of the stack", "still open at end of profile").
  if (m.sessionId === sessionId && m.method === 'Runtime.consoleAPICalled' &&
      (m.params.type === 'warning' || m.params.type === 'error')) {
    warnings.push(m.params.args.map(a => a.value ?? a.description ?? '').join(' '));
  }
  if (m.sessionId === sessionId && m.method === 'Page.javascriptDialogOpening') {
    dialogs.push(m.params.message);
    page('Page.handleJavaScriptDialog', {accept: true}).catch(() => {});
  }
});
await page('Page.enable');
await page('Runtime.enable');
await page('Emulation.setDeviceMetricsOverride', {width: 1400, height: 900, deviceScaleFactor: 1, mobile: false});

async function evaluate(expression) {
  const r = await page('Runtime.evaluate', {expression, returnByValue: true, awaitPromise: true});
  if (r.exceptionDetails) throw new Error(`evaluate: ${r.exceptionDetails.text} ${expression.slice(0, 80)}`);
  return r.result.value;
}

// Waits until the expression is truthy (or the time is up) and returns its value.
async function until(expression, ms, stop = () => false) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await evaluate(expression);
    if (v || stop() || Date.now() > end) return v;
    await sleep(100);
  }
}

async function screenshot(file) {
  const shot = await page('Page.captureScreenshot', {format: 'png'});
  fs.writeFileSync(file, Buffer.from(shot.data, 'base64'));
}

const errorText = `[...document.querySelectorAll('div')].map(d => d.textContent)
  .find(t => t.startsWith('\u{1F63F} Something went wrong')) || ''`;

// The toolbar's middle, right of the view tabs: the active profile's name, then "(i/N)" when there
// are several.
const activeProfile = `(() => {
  const tab = [...document.querySelectorAll('div')].find(d => d.children.length === 1 && d.textContent.endsWith('Time Order'));
  const center = tab && tab.parentElement.nextSibling; // an element with a selector, or the name alone
  if (!center) return '';
  return center.firstChild ? center.firstChild.textContent : center.textContent;
})()`;

// The profile selector's rows (hidden until clicked, always in the DOM): one per profile.
const profileNames = `[...(document.querySelector('input[placeholder="Filter..."]')?.closest('div[style]')
  .querySelectorAll('tbody tr[title]') || [])].map(r => r.title)`;

// The Sandwich table lists rows only where they are visible: scroll it through, collecting
// [name, total, self] for every row.
const sandwichRows = `(async () => {
  const rows = new Map();
  const sizer = [...document.querySelectorAll('div[style]')].find(d => /^height: \\d+px;$/.test(d.getAttribute('style')) &&
    d.querySelector('tr'));
  if (!sizer) return [];
  const scroller = sizer.parentElement;
  scroller.scrollTop = 0;
  for (let i = 0; i < 1000; ++i) {
    await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
    for (const tr of sizer.querySelectorAll('tr')) {
      const td = tr.querySelectorAll('td');
      if (td.length === 3) rows.set(td[2].textContent, [td[2].textContent, td[0].textContent, td[1].textContent]);
    }
    const before = scroller.scrollTop;
    scroller.scrollTop = before + Math.max(20, scroller.clientHeight - 40);
    if (scroller.scrollTop === before) break;
  }
  return [...rows.values()];
})()`;

const clickTab = label => evaluate(`[...document.querySelectorAll('div')]
  .find(d => d.children.length === 1 && d.textContent.endsWith(${JSON.stringify(label)})).click()`);

for (const file of files) {
  const name = path.basename(file);
  dialogs = [];
  warnings = [];
  const hash = `#profileURL=${encodeURIComponent(`${origin}/profiles/${encodeURIComponent(name)}`)}`;
  // about:blank between files: a new hash alone would not reload the app.
  await page('Page.navigate', {url: 'about:blank'});
  await page('Page.navigate', {url: `${origin}/index.html${hash}`});
  // Loaded: the title names the file; failed: an error view or an alert.
  await until(`document.title.endsWith(' - speedscope') || (${errorText}) !== ''`, 20_000, () => dialogs.length > 0);
  await sleep(300);
  const result = {file: name, title: await evaluate('document.title'), error: await evaluate(errorText), dialogs,
                  warnings};
  result.profiles = [];
  if (result.title.endsWith(' - speedscope')) {
    // Every profile (a trace-event file has one per track): its Time Order view as a picture
    // (NAME.png for the first, as a user first sees it, NAME.K.png for the K-th), then its frames
    // read in the Sandwich view (pictured for the first, NAME.sandwich.png).
    await sleep(700);
    if (!noShots.has(file)) result.screenshot = path.join(outDir, `${name}.png`);
    const names = await evaluate(profileNames);
    const count = Math.max(1, names.length);
    for (let i = 0; i < count; ++i) {
      if (i > 0) {
        // speedscope's own shortcut for the next profile.
        await evaluate(`window.dispatchEvent(new KeyboardEvent('keypress', {key: 'n'}))`);
        await until(`${activeProfile}.includes('(${i + 1}/${count})')`, 5_000);
        await sleep(300);
      }
      if (!noShots.has(file)) await screenshot(i === 0 ? result.screenshot : path.join(outDir, `${name}.${i + 1}.png`));
      await clickTab('Sandwich');
      await sleep(200);
      const label = await evaluate(activeProfile);
      result.profiles.push({name: names[i] ?? label.replace(/ \(\d+\/\d+\)$/, ''), label,
                            frames: await evaluate(sandwichRows)});
      if (i === 0 && !noShots.has(file)) await screenshot(path.join(outDir, `${name}.sandwich.png`));
      await clickTab('Time Order');
    }
  }
  process.stdout.write(JSON.stringify(result) + '\n');
}

finished = true;
clearTimeout(deadline);
const exited = new Promise(resolve => browser.exitCode !== null ? resolve() : browser.on('exit', resolve));
await send('Browser.close').catch(() => {});
await Promise.race([exited, sleep(5000)]);
killGroup('SIGKILL'); // whatever helper outlived the browser
server.closeAllConnections(); // keep-alive connections would hold the process for 5 s
server.close();
// Helpers that were still exiting may have written into the profile a moment ago: retried.
try {
  fs.rmSync(profileDir, {recursive: true, force: true, maxRetries: 10, retryDelay: 100});
} catch (e) {
  console.error(`speedscope.mjs: could not remove ${profileDir}: ${e.message}`);
}
process.exit(0); // not waiting for the timers still pending
