// xstate side of the statechart benchmark (driven by `python -m bench.statechart`, see docs/benchmarks.md).
//
// Reads a JSON spec on stdin: {"charts": [{"name", "config", "cycle", "events", "reps", "warmup", "clock"}]}, where
// `config` is the very xstate config our engine is given (bench/charts.py), with guards and actions referenced
// by name; this file implements those names. For each chart: `warmup` untimed runs, then `reps` timed runs,
// each on a fresh createActor(machine).start() that receives `events` events ({type} objects, built up front)
// through actor.send. Writes JSON on stdout: events/s of every run, and each run's final value/context/status,
// which the Python side checks against the chart's reference model.
//
// xstate is resolved from tests/differential/.node (installed by `make node`), or from $XSTATE_DIR (a folder
// whose node_modules holds xstate).

import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';

const here = dirname(fileURLToPath(import.meta.url));
const xstateDir = process.env.XSTATE_DIR || join(here, '..', 'tests', 'differential', '.node');
const require = createRequire(join(xstateDir, 'package.json'));
const { setup, createActor, assign } = require('xstate'); // the production CJS build
const xstateVersion = require('xstate/package.json').version;

const implementations = {
  guards: {
    countEven: ({ context }) => context.count % 2 === 0,
    lapsEven: ({ context }) => context.laps % 2 === 0,
  },
  actions: {
    inc: assign({ count: ({ context }) => context.count + 1 }),
    lap: assign({ laps: ({ context }) => context.laps + 1 }),
  },
};

// "wall": elapsed time. "cpu": CPU time of the process (user + system): it leaves out time spent descheduled on a
// busy machine, but also counts V8's helper threads (GC, compiler), which on an idle machine would run alongside:
// a slight handicap for xstate.
function seconds(clock) {
  if (clock === 'cpu') {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  }
  return performance.now() / 1000;
}

function runOnce(machine, events, clock) {
  const actor = createActor(machine).start();
  const t0 = seconds(clock);
  for (let i = 0; i < events.length; i++) actor.send(events[i]);
  const dt = seconds(clock) - t0;
  const snap = actor.getSnapshot();
  const final = { value: snap.value, context: snap.context ?? null, status: snap.status };
  actor.stop();
  return { rate: events.length / dt, seconds: dt, final };
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function benchChart(spec) {
  const machine = setup(implementations).createMachine(spec.config);
  const types = spec.cycle.map((type) => ({ type }));
  const events = Array.from({ length: spec.events }, (_, i) => types[i % types.length]);
  const clock = spec.clock || 'wall';
  for (let i = 0; i < spec.warmup; i++) runOnce(machine, events, clock);
  const runs = [];
  for (let i = 0; i < spec.reps; i++) runs.push(runOnce(machine, events, clock));
  const rates = runs.map((r) => r.rate);
  return {
    rates,
    median: median(rates),
    best: Math.max(...rates),
    finals: runs.map((r) => r.final),
  };
}

const input = JSON.parse(readFileSync(0, 'utf8'));
const out = { xstate: xstateVersion, node: process.version, charts: {} };
for (const spec of input.charts) out.charts[spec.name] = benchChart(spec);
process.stdout.write(JSON.stringify(out) + '\n');
