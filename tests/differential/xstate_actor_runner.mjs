// Runs a batch of random actor charts (actor_charts.py) through xstate's real actors, for the differential test.
//
// stdin:  {"charts": [{"config", "children", "spawns", "events"}, ...]}
// stdout: {"results": [{"steps": [step, ...]}, ...]}: steps[0] after `start()`, steps[i] after events[i-1] (an
//         event type to send, or "+10" to move the SimulatedClock on); a step is {value, status, context, output,
//         children: [[id, status, value]], log: [...]}, or {error} if xstate threw (the steps stop there).
//
// `log` holds what the chart did since the step before, in order: `<actor id>:<tag>` from the custom action
// `note`, `log:<text>` from the logger, `emit:<type>` from the root's emitted events. The named actions and
// guards below must behave exactly like the Python ones in harness_actors.py.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';

const here = dirname(fileURLToPath(import.meta.url));
const base = process.env.XSTATE_NODE_MODULES
  ? join(process.env.XSTATE_NODE_MODULES, '..')
  : join(here, '.node');
const require = createRequire(join(base, 'package.json'));
const {
  setup, createActor, assign, raise, log, emit, sendTo, sendParent, cancel, enqueueActions, spawnChild,
  stopChild, stateIn, SimulatedClock
} = require('xstate');

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

function implementations(out, chart) {
  const later = (id) =>
    raise((_, p) => ({ type: p.event }), { delay: (_, p) => p.delay, ...(id ? { id } : {}) });
  const toGuard = (guard) => ('in' in guard ? stateIn(guard.in) : guard);
  const actions = {
    log: assign({
      log: ({ context, event }, params) => [
        ...context.log,
        params.ev ? `${params.tag}@${event.type}` : params.tag
      ]
    }),
    bump: assign({ count: ({ context }) => context.count + 1 }),
    raiseEv: raise((_, params) => ({ type: params.event })),
    note: ({ event, self }, p) => {
      let entry = `${self.id}:${p.tag}`;
      if (p.ev) entry += `@${event.type}`;
      if (p.out) entry += `=${JSON.stringify(event.output ?? null)}`;
      out.push(entry);
    },
    say: log((_, p) => p.text),
    shout: emit((_, p) => ({ type: p.event })),
    later: later(undefined),
    laterX: later('X'),
    laterY: later('Y'),
    unlater: cancel((_, p) => p.id),
    tell: sendTo((_, p) => p.to, (_, p) => ({ type: p.event })),
    tellLater: sendTo((_, p) => p.to, (_, p) => ({ type: p.event }), { delay: (_, p) => p.delay }),
    tellParent: sendParent((_, p) => ({ type: p.event })),
    unspawn: stopChild((_, p) => p.id),
    choose: enqueueActions(({ enqueue, check }, p) => {
      for (const item of p.items) {
        if (!item.guard || check(toGuard(item.guard))) enqueue(item.action);
      }
    })
  };
  for (const [name, spec] of Object.entries(chart.spawns || {})) {
    actions[name] = spawnChild(spec.src, { id: spec.id });
  }
  const guards = {
    countIs: ({ context }, params) => context.count === params.n,
    countLt: ({ context }, params) => context.count < params.n,
    countGe: ({ context }, params) => context.count >= params.n,
    countOdd: ({ context }) => context.count % 2 === 1
  };
  return { actions, guards };
}

function build(chart, out) {
  const { actions, guards } = implementations(out, chart);
  const withOptions = (config) => ({ ...stripNulls(config), options: { maxIterations: MAX_ITERATIONS } });
  const actors = {};
  for (const [src, config] of Object.entries(chart.children || {})) {
    actors[src] = setup({ actions, guards }).createMachine(withOptions(config));
  }
  return setup({ actions, guards, actors }).createMachine(withOptions(chart.config));
}

function view(actor, out) {
  const s = actor.getSnapshot();
  const orNull = (v) => (v === undefined ? null : v);
  return {
    // a machine that fails while it builds its initial snapshot has only a status and an error
    value: orNull(s.value),
    status: s.status,
    context: orNull(s.context),
    output: orNull(s.output),
    children: Object.entries(s.children || {}).map(([id, ref]) => {
      const c = ref.getSnapshot();
      return [id, c.status, c.value === undefined ? null : c.value];
    }),
    log: out.splice(0)
  };
}

function errorOf(err) {
  return { error: String(err && err.message ? err.message : err) };
}

function run(chart) {
  const steps = [];
  const out = [];
  const clock = new SimulatedClock();
  let actor;
  try {
    actor = createActor(build(chart, out), {
      id: 'root',
      clock,
      logger: (...args) => out.push(`log:${args.map(String).join(' ')}`)
    });
    actor.subscribe({ error: () => {} });
    actor.on('*', (event) => out.push(`emit:${event.type}`));
    actor.start();
    steps.push(view(actor, out));
  } catch (err) {
    steps.push(errorOf(err));
    return { steps };
  }
  for (const step of chart.events) {
    try {
      if (step.startsWith('+')) clock.increment(Number(step.slice(1)));
      else actor.send({ type: step });
      steps.push(view(actor, out));
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
