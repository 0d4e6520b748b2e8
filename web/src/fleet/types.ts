// GET /api/fleet (src/core/fleet.c, docs/API.md): the fleet as the Prometheus that scrapes the
// daemons sees it. Unknown values are null, never 0 (a node that is down has no GPU count).

import type { Num } from '../lib/types';

export interface FleetTarget {
  instance: string;
  up: boolean;
  last_scrape: string | null;
}

export interface FleetGpu {
  gpu: string;
  uuid: string | null;
  model: string | null;
  instance: string | null;
  idle: boolean;
  utilization_percent: Num;
  memory_used_mib: Num;
  memory_total_mib: Num;
  memory_used_percent: Num;
  power_w: Num;
  temperature_c: Num;
  xid_last: Num;
  ecc_uncorrected_volatile: Num;
  row_remap_failure: boolean | null;
}

export interface FleetNode {
  name: string;
  /** The node's own dashboard: http://INSTANCE/ of its scrape target, null when unknown. */
  url: string | null;
  up: boolean;
  targets: FleetTarget[];
  last_scrape: string | null;
  last_scrape_age_seconds: Num;
  gpu_count: Num;
  idle_gpu_count: Num;
  utilization_mean_percent: Num;
  memory: { used_mib: Num; total_mib: Num; used_percent: Num };
  power_w: Num;
  hottest: { gpu: string; temperature_c: Num } | null;
  health: { status: 'ok' | 'degraded' | 'unknown'; problems: string[] };
  gpus: FleetGpu[];
  /** With ?gpus=N: whether it has N idle GPUs and is up, whether it is the choice, and why. */
  fits?: boolean;
  chosen?: boolean;
  reason?: string;
}

export interface FleetDoc {
  time: string | null;
  prometheus: string;
  job: string;
  fetched_at: string;
  cache_seconds: number;
  thresholds: { max_util_percent: number; max_memory_percent: number };
  totals: { nodes: number; nodes_up: number; gpus: number; idle_gpus: number };
  nodes: FleetNode[];
  gpus_needed?: number;
  chosen?: string | null;
  warning?: string;
}
