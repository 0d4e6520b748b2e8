// The daemon's JSON shapes (src/core/json.c, src/server/http.c). An absent metric is null,
// never 0, so every metric is `number | null` and the UI must say "n/a" for it.

export type Num = number | null;

export interface GpuProcess {
  gpu: number;
  pid: number;
  type: string;
  used_memory_mib: Num;
  used_memory_bytes: Num;
  user: string | null;
  command: string | null;
  /** Share of each engine over the driver's last period (%); null where NVML gave none. */
  utilization?: { sm: Num; memory: Num; encoder: Num; decoder: Num };
  /** UUID of the MIG device it runs in; null outside MIG mode. */
  mig_device?: string | null;
}

/** A MIG device of a GPU in MIG mode. */
export interface MigDevice {
  uuid: string | null;
  profile: string | null;
  gpu_instance_id: number;
  compute_instance_id: number;
  memory: { used_mib: Num; total_mib: Num; free_mib: Num };
}

/** The health block of a GPU (absent metrics null: an older driver, or a GPU without ECC). */
export interface GpuHealth {
  xid: { last: Num; count: Num; last_time: string | null } | null;
  ecc: {
    mode: { current: boolean | null; pending: boolean | null };
    corrected_volatile: Num;
    uncorrected_volatile: Num;
    corrected_aggregate?: Num;
    uncorrected_aggregate?: Num;
  };
  retired_pages: { single_bit: Num; double_bit: Num; pending: boolean | null };
  remapped_rows: { correctable: Num; uncorrectable: Num; pending: boolean | null; failure: boolean | null };
  pcie_replay_counter: Num;
  /** Time the clocks were held down, microseconds (counters). */
  violations_us?: { power: Num; thermal: Num } | null;
  nvlink?: {
    links_active: Num;
    crc_flit_errors: Num;
    crc_data_errors: Num;
    replay_errors: Num;
    recovery_errors: Num;
  };
  degraded: boolean;
  reasons: string | null;
}

export interface Gpu {
  index: number;
  name: string;
  uuid: string | null;
  pci_bus_id: string | null;
  vendor?: string | null; /* "NVIDIA", "AMD", ...: who made it */
  provider?: string | null; /* which gpumon provider read it */
  lost: boolean;
  utilization: { gpu: Num; memory: Num; encoder: Num; decoder: Num };
  memory: {
    total_mib: Num;
    used_mib: Num;
    free_mib: Num;
    reserved_mib: Num;
    used_percent: Num;
  };
  temperature_c: Num;
  temperature_memory_c?: Num;
  /** The GPU's own slowdown threshold, and how far below the nearest one it is (T.Limit). */
  temperature_slowdown_c?: Num;
  temperature_tlimit_c?: Num;
  power: { draw_w: Num; limit_w: Num };
  energy_j?: Num;
  clocks: {
    graphics_mhz: Num;
    sm_mhz: Num;
    memory_mhz: Num;
    max_graphics_mhz: Num;
    max_sm_mhz: Num;
    max_memory_mhz: Num;
  };
  fan_percent: Num;
  pcie: {
    gen_current: Num;
    gen_max: Num;
    width_current: Num;
    width_max: Num;
    tx_kbps: Num;
    rx_kbps: Num;
  };
  pstate: string | null;
  throttle_reasons: { mask: string; active: string[] } | null;
  persistence_mode: boolean | null;
  processes: GpuProcess[];
  health?: GpuHealth;
  serial?: string | null;
  vbios_version?: string | null;
  compute_capability?: string | null;
  compute_mode?: string | null;
  mig_mode?: { current: boolean | null; pending: boolean | null };
  /** Present only while the GPU is in MIG mode. */
  mig_devices?: MigDevice[];
}

export interface HostMetrics {
  hostname: string | null;
  kernel: string | null;
  cpu_model: string | null;
  cpu_count: Num;
  cpu_percent: Num;
  cpu_per_core: Num[];
  memory: { total_bytes: Num; used_bytes: Num; available_bytes: Num; used_percent: Num };
  swap: { total_bytes: Num; used_bytes: Num };
  load_average: [Num, Num, Num] | null;
  uptime_seconds: Num;
}

export interface Snapshot {
  timestamp: string;
  timestamp_ms: number;
  seq: number;
  hostname: string | null;
  provider: string;
  driver_version: string | null;
  cuda_version: string | null;
  nvml_version: string | null;
  gpu_count: number;
  gpus: Gpu[];
  processes_dropped: number;
  system: HostMetrics | null;
}

export interface Health {
  status: string;
  provider: string;
  gpu_count: number;
  poll_interval_ms: number;
  last_sample_age_seconds: Num;
  lost_gpus: number[];
  version: string;
  last_error: string | null;
  diagnosis?: string;
  hint?: string;
}

export interface ServerConfig {
  history_seconds: number;
  poll_interval_ms: number;
  ws_max_rate_hz: number;
  version: string;
  /** Prometheus behind the fleet view (no credentials), null without --prometheus. */
  prometheus?: string | null;
}

/** One series of GET /api/history: points are [time in ms, value or null]. */
export interface HistorySeries {
  gpu?: number;
  metric: string;
  unit: string;
  clamped: boolean;
  points: [number, Num][];
}

export interface HistoryResponse {
  interval_ms: number;
  step_ms: number | null;
  seconds: number;
  series: HistorySeries[];
}
