// SPDX-License-Identifier: MIT
// Loads a Chrome JSON export of nanoclock in an independent reader:
// DevTools' own trace model (chrome-devtools-frontend's SDK.TracingModel
// and TimelineModel, as the npm package devtools-timeline-model runs them
// in a sandbox), and prints what it saw as one JSON line:
//   {processes, threads: [names], slices, instants, counters, argClashes,
//    errors, notices, samples, firstSlice: {name, startTime, endTime, args}}
// argClashes counts the model's "Same argument name (...) is used for
// begin and end phases" complaints (a B/E pair whose arguments collide).
'use strict';
const fs = require('fs');
const path = require('path');
const vm = require('vm');

const file = process.argv[2];
const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
let argClashes = 0, errors = 0, notices = 0;
// what the model says of any trace that is not a browser's (no page, no
// browser main thread): notices, not errors
const browserOnly = ['TracingStartedInPage event not found', 'Failed to find browser main thread'];
const samples = [];
const quiet = {
  log() {}, info() {}, debug() {}, time() {}, timeEnd() {},
  warn(...a) { this.error(...a); },
  error(...a) {
    const s = a.join(' ');
    if (s.startsWith('Same argument name')) argClashes++;
    else if (browserOnly.some((b) => s.startsWith(b))) notices++;
    else { errors++; if (samples.length < 3) samples.push(s.slice(0, 160)); }
  },
  assert() {},
};
// the package's own loader, with a console the model can find
// (Common.console is missing in its sandbox: a non-browser trace crashed it)
const dir = path.dirname(require.resolve('devtools-timeline-model'));
const script = new vm.Script(fs.readFileSync(path.join(dir, 'lib/timeline-model.js'), 'utf8'));
const glob = {require, global, console: quiet, __dirname: dir};
const ctx = vm.createContext(glob);
script.runInContext(ctx);
ctx.Common.console = quiet;
const model = ctx.sandboxedModel;
model.init(doc.traceEvents);
const tm = model.tracingModel();
const threads = [];
let slices = 0, instants = 0, counters = 0, firstSlice = null;
for (const p of tm.sortedProcesses()) {
  for (const t of p.sortedThreads()) {
    threads.push(t.name());
    for (const e of t.events()) {
      if (e.phase === 'B' || e.phase === 'X') {
        slices++;
        if (!firstSlice)
          firstSlice = {name: e.name, startTime: e.startTime, endTime: e.endTime, args: e.args};
      } else if (e.phase === 'i' || e.phase === 'I') {
        instants++;
      } else if (e.phase === 'C') {
        counters++;
      }
    }
  }
}
process.stdout.write(JSON.stringify({processes: tm.sortedProcesses().length, threads, slices,
  instants, counters, argClashes, errors, notices, samples, firstSlice}) + '\n');
