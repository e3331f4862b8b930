// Runs a batch of random charts through xstate itself, for the differential test.
//
// stdin:  {"charts": [{"config": {...}, "events": ["A", ...]}, ...]}
// stdout: {"results": [{"steps": [step, ...]}, ...]}, one result per chart, where steps[0] is the initial
//         snapshot and steps[i] the snapshot after events[i-1]; a step is {value, status, context, output}, or
//         {error} if xstate threw (the steps stop there).
//
// The named actions and guards below must behave exactly like the Python ones in test_differential.py.
// JSON has no `undefined`: a `null` anywhere in a config is removed (Python's None means "missing").
// Each machine gets `options: {maxIterations}`, so a chart that loops forever is an error, not a hang.
//
// xstate comes from tests/differential/.node (`make node`), or from XSTATE_NODE_MODULES if set.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';

const here = dirname(fileURLToPath(import.meta.url));
const base = process.env.XSTATE_NODE_MODULES
  ? join(process.env.XSTATE_NODE_MODULES, '..')
  : join(here, '.node');
const require = createRequire(join(base, 'package.json'));
const { setup, assign, raise, initialTransition, transition, getInitialMicrosteps, getMicrosteps } = require('xstate');

const actions = {
  log: assign({
    log: ({ context, event }, params) => [
      ...context.log,
      params.ev ? `${params.tag}@${event.type}` : params.tag
    ]
  }),
  bump: assign({ count: ({ context }) => context.count + 1 }),
  raiseEv: raise((_, params) => ({ type: params.event }))
};

const guards = {
  countIs: ({ context }, params) => context.count === params.n,
  countLt: ({ context }, params) => context.count < params.n,
  countGe: ({ context }, params) => context.count >= params.n,
  countOdd: ({ context }) => context.count % 2 === 1
};

const MAX_ITERATIONS = 5000;

function stripNulls(value) {
  if (Array.isArray(value)) return value.map(stripNulls);
  if (value !== null && typeof value === 'object') {
    const out = {};
    for (const [k, v] of Object.entries(value)) {
      if (v !== null) out[k] = stripNulls(v);
    }
    return out;
  }
  return value;
}

function view(snapshot) {
  return {
    value: snapshot.value,
    status: snapshot.status,
    context: snapshot.context,
    output: snapshot.output === undefined ? null : snapshot.output
  };
}

// With "trace": true on a chart, each step also lists its microsteps (value, active node ids, context).
function micro(steps) {
  return steps.map(([s]) => ({
    value: s.value,
    nodes: s._nodes.map((n) => n.id),
    context: s.context
  }));
}

function errorOf(err) {
  return { error: String(err && err.message ? err.message : err) };
}

function run(chart) {
  const steps = [];
  let machine;
  let snapshot;
  try {
    // A bounded macrostep: a chart that loops forever (the shrinker can make one) is an error, not a hang.
    const config = { ...stripNulls(chart.config), options: { maxIterations: MAX_ITERATIONS } };
    machine = setup({ actions, guards }).createMachine(config);
    [snapshot] = initialTransition(machine);
    steps.push(view(snapshot));
    if (chart.trace) steps[0].micro = micro(getInitialMicrosteps(machine));
  } catch (err) {
    steps.push(errorOf(err));
    return { steps };
  }
  for (const type of chart.events) {
    try {
      const before = snapshot;
      [snapshot] = transition(machine, snapshot, { type });
      steps.push(view(snapshot));
      if (chart.trace) steps[steps.length - 1].micro = micro(getMicrosteps(machine, before, { type }));
    } catch (err) {
      steps.push(errorOf(err));
      break;
    }
  }
  return { steps };
}

const batch = JSON.parse(readFileSync(0, 'utf8'));
const results = batch.charts.map(run);
process.stdout.write(JSON.stringify({ results }));
