// What the Fleet page shows, as pure functions of the daemon's /api/fleet answer: the request
// path, the order of the nodes (the order `gpumon cluster select` ranks them), each row's text,
// and which links are safe to follow. The choice of a node itself is the daemon's (?gpus=N), so
// the rule lives in one place (src/core/fleet.c).

import { NA, fmtAgo, fmtPercent, fmtTemp, fmtWatts } from '../lib/format';
import type { FleetDoc, FleetNode } from './types';

/** Most GPUs a job may ask for (the daemon's limit too). */
export const NEED_MAX = 4096;

const SP = '\u00a0';

/** The daemon path of the fleet view, with the GPUs a job needs when one is asked. */
export function fleetPath(need: number | null): string {
  return need === null ? 'api/fleet' : `api/fleet?gpus=${need}`;
}

/** The "GPUs needed" field: a whole number from 1 to NEED_MAX, else null (no choice asked). */
export function parseNeed(text: string): number | null {
  const t = text.trim();
  if (!/^[0-9]{1,4}$/.test(t)) return null;
  const n = Number(t);
  return n >= 1 && n <= NEED_MAX ? n : null;
}

/** Names compare as bytes, as the daemon sorts them (strcmp), not by locale. */
function byName(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The nodes best first, as `select` ranks them: nodes that are up before those that are not,
 * then the most idle GPUs, then the lowest mean utilization (unknown last), then the name.
 */
export function rankNodes(nodes: readonly FleetNode[]): FleetNode[] {
  const util = (n: FleetNode): number => n.utilization_mean_percent ?? Number.POSITIVE_INFINITY;
  return [...nodes].sort((a, b) => {
    if (a.up !== b.up) return a.up ? -1 : 1;
    const ia = a.idle_gpu_count ?? -1;
    const ib = b.idle_gpu_count ?? -1;
    if (ia !== ib) return ib - ia;
    if (util(a) !== util(b)) return util(a) < util(b) ? -1 : 1;
    return byName(a.name, b.name);
  });
}

/**
 * The node's own dashboard, only as a plain http(s) URL: the daemon builds it from Prometheus's
 * instance label, and a page must never turn a label into a javascript: link.
 */
export function safeLink(url: string | null | undefined): string | null {
  if (!url) return null;
  try {
    const u = new URL(url);
    return (u.protocol === 'http:' || u.protocol === 'https:') && !u.username && !u.password ? u.href : null;
  } catch {
    return null;
  }
}

/** The gpu labels of a node's idle GPUs: ["1", "3"]. */
export function idleGpus(n: FleetNode): string[] {
  return n.gpus.filter((g) => g.idle).map((g) => g.gpu);
}

/** One row of the table, as text. */
export interface NodeCells {
  state: string;
  gpus: string;
  idle: string;
  idleWhich: string;
  util: string;
  memory: string;
  power: string;
  hottest: string;
  health: string;
  healthLevel: 'ok' | 'bad' | 'na';
  scraped: string;
}

export function nodeCells(n: FleetNode, nowMs: number): NodeCells {
  const which = idleGpus(n);
  const mem = n.memory;
  const gib = (mib: number): string => `${(mib / 1024).toFixed(0)}${SP}GiB`;
  const problems = n.health.problems.length;
  return {
    state: n.up ? 'up' : 'down',
    gpus: n.gpu_count === null ? NA : String(n.gpu_count),
    idle: n.idle_gpu_count === null ? NA : String(n.idle_gpu_count),
    idleWhich: which.length ? `GPU${SP}${which.join(', ')}` : '',
    util: fmtPercent(n.utilization_mean_percent),
    memory:
      mem.used_percent === null || mem.total_mib === null
        ? NA
        : `${fmtPercent(mem.used_percent)} of ${gib(mem.total_mib)}`,
    power: fmtWatts(n.power_w),
    hottest: n.hottest ? `${fmtTemp(n.hottest.temperature_c)} (GPU${SP}${n.hottest.gpu})` : NA,
    health:
      n.health.status === 'degraded'
        ? `${problems} problem${problems === 1 ? '' : 's'}`
        : n.health.status === 'ok'
          ? 'ok'
          : NA,
    healthLevel: n.health.status === 'degraded' ? 'bad' : n.health.status === 'ok' ? 'ok' : 'na',
    scraped: n.last_scrape ? `${fmtAgo(n.last_scrape, nowMs)} ago` : NA,
  };
}

/** "3 nodes (2 up) · 6 GPUs · 3 idle (utilization < 30 %, memory < 50 %)". */
export function totalsLine(doc: FleetDoc): string {
  const t = doc.totals;
  const th = doc.thresholds;
  const s = (n: number, w: string): string => `${n} ${w}${n === 1 ? '' : 's'}`;
  return (
    `${s(t.nodes, 'node')} (${t.nodes_up} up) · ${s(t.gpus, 'GPU')} · ${t.idle_gpus} idle ` +
    `(utilization < ${th.max_util_percent}${SP}%, memory < ${th.max_memory_percent}${SP}%)`
  );
}

/** What the daemon chose for a job of doc.gpus_needed GPUs, or null when none was asked. */
export function choiceLine(doc: FleetDoc): { chosen: string | null; text: string } | null {
  if (doc.gpus_needed === undefined) return null;
  const n = doc.gpus_needed;
  const gpus = `${n} GPU${n === 1 ? '' : 's'}`;
  if (doc.chosen) return { chosen: doc.chosen, text: `A job of ${gpus} would go to ${doc.chosen}` };
  return { chosen: null, text: `No node that is up has ${n} idle GPU${n === 1 ? '' : 's'}` };
}
