// The Fleet page (#/fleet): every node the Prometheus behind the daemon sees, best
// first for a new job, with idle GPUs, health, last scrape and a link to the node's own
// dashboard. Shown only when the daemon runs with --prometheus.

import { useEffect, useState } from 'preact/hooks';

import type { PageProps } from '../app';
import { choiceLine, nodeCells, rankNodes, safeLink, totalsLine } from './model';
import type { FleetStore } from './store';
import type { FleetNode } from './types';
import './fleet.css';

function useFleet(fleet: FleetStore): void {
  const [, setTick] = useState(0);
  useEffect(() => fleet.subscribe(() => setTick((n) => (n + 1) & 0xffff)), [fleet]);
}

function Row({ n, now, asked }: { n: FleetNode; now: number; asked: boolean }) {
  const c = nodeCells(n, now);
  const link = safeLink(n.url);
  const cols = asked ? 11 : 10;
  return (
    <>
      <tr
        data-node={n.name}
        data-up={n.up ? 'yes' : 'no'}
        data-chosen={n.chosen ? 'yes' : undefined}
        class={n.chosen ? 'chosen' : n.up ? undefined : 'down'}
      >
        <td class="node">
          {link ? (
            <a href={link} target="_blank" rel="noopener noreferrer" title={`${n.name}'s own dashboard`}>
              {n.name}
            </a>
          ) : (
            n.name
          )}
        </td>
        <td data-field="state" class={n.up ? 'state-up' : 'state-down'}>
          {c.state}
        </td>
        <td data-field="gpus" class="num">
          {c.gpus}
        </td>
        <td data-field="idle" class="num" title={c.idleWhich}>
          {c.idle}
          {c.idleWhich && <span class="which"> {c.idleWhich}</span>}
        </td>
        <td data-field="util" class="num">
          {c.util}
        </td>
        <td data-field="memory">{c.memory}</td>
        <td data-field="power" class="num">
          {c.power}
        </td>
        <td data-field="hottest">{c.hottest}</td>
        <td data-field="health" class={`fleet-health-${c.healthLevel}`} title={n.health.problems.join('\n')}>
          {c.health}
        </td>
        <td data-field="scraped" title={n.targets.map((t) => `${t.instance}: ${t.up ? 'up' : 'down'}`).join('\n')}>
          {c.scraped}
        </td>
        {asked && <td data-field="reason">{n.reason ?? ''}</td>}
      </tr>
      {n.health.problems.length > 0 && (
        <tr class="problems" data-problems-of={n.name}>
          <td colSpan={cols}>{n.health.problems.join(' · ')}</td>
        </tr>
      )}
    </>
  );
}

export function FleetPage({ fleet }: { fleet: FleetStore }) {
  useFleet(fleet);
  const [needText, setNeedText] = useState(fleet.need === null ? '' : String(fleet.need));
  useEffect(() => {
    fleet.setActive(true);
    return () => fleet.setActive(false);
  }, [fleet]);
  const now = Date.now();
  const doc = fleet.doc;

  if (fleet.state === 'off')
    return (
      <section class="fleet" data-fleet="off">
        <p class="banner banner-soft">
          The fleet view is off: start this daemon with <code>--prometheus URL</code> (the Prometheus that scrapes the
          daemons) to see every node here.
        </p>
      </section>
    );

  const asked = doc?.gpus_needed !== undefined;
  const choice = doc ? choiceLine(doc) : null;
  return (
    <section class="fleet" data-fleet={doc ? 'ready' : 'loading'}>
      <div class="fleet-head">
        <h2>Fleet</h2>
        <span class="fleet-source">
          from Prometheus <span data-field="prometheus">{fleet.prometheus ?? '…'}</span>
          {doc && <> · job {doc.job}</>}
        </span>
        <div class="spacer" />
        <label class="need">
          GPUs needed{' '}
          <input
            type="number"
            min={1}
            max={4096}
            inputMode="numeric"
            placeholder="any"
            value={needText}
            onInput={(e) => {
              const t = (e.currentTarget as HTMLInputElement).value;
              setNeedText(t);
              const n = Number(t);
              fleet.setNeed(t.trim() === '' || !Number.isInteger(n) || n < 1 || n > 4096 ? null : n);
            }}
          />
        </label>
      </div>
      {fleet.error && (
        <p class="banner" role="alert" data-field="fleet-error">
          {fleet.error}
          {doc && ' (showing the last answer)'}
        </p>
      )}
      {doc?.warning && <p class="banner banner-soft">{doc.warning}</p>}
      {!doc && !fleet.error && <p class="loading">Asking Prometheus…</p>}
      {doc && (
        <>
          <p class="fleet-totals" data-field="totals">
            {totalsLine(doc)}
          </p>
          {choice && (
            <p class={choice.chosen ? 'fleet-choice' : 'fleet-choice none'} data-field="choice">
              {choice.text}
            </p>
          )}
          <div class="fleet-wrap">
            <table class="fleet-table">
              <thead>
                <tr>
                  <th>Node</th>
                  <th>State</th>
                  <th class="num">GPUs</th>
                  <th class="num">Idle</th>
                  <th class="num">Util</th>
                  <th>Memory</th>
                  <th class="num">Power</th>
                  <th>Hottest</th>
                  <th>Health</th>
                  <th>Scraped</th>
                  {asked && <th>Why</th>}
                </tr>
              </thead>
              <tbody>
                {rankNodes(doc.nodes).map((n) => (
                  <Row key={n.name} n={n} now={now} asked={asked} />
                ))}
              </tbody>
            </table>
          </div>
          <p class="fleet-note">
            Best node for a new job first (most idle GPUs, then lowest mean utilization). Node links open each daemon's
            own dashboard at the address Prometheus scrapes (the target's instance label).
          </p>
        </>
      )}
    </section>
  );
}

/** The page as the route table (src/pages.ts) has it: the fleet store lives with the app. */
export function FleetRoutePage({ app }: PageProps) {
  return <FleetPage fleet={app.fleet} />;
}
