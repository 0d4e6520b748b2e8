// The MIG devices of a GPU in MIG mode: profile, UUID (what CUDA_VISIBLE_DEVICES takes) and the
// memory of each. Nothing at all for a GPU that is not in MIG mode.

import { fmtMiB } from '../lib/format';
import type { Gpu } from '../lib/types';

export function MigTable({ g }: { g: Gpu }) {
  const devs = g.mig_devices;
  if (!devs || devs.length === 0) return null;
  return (
    <div class="table-wrap mig" data-field="mig-devices">
      <table>
        <caption>MIG devices</caption>
        <thead>
          <tr>
            <th>Profile</th>
            <th>UUID</th>
            <th class="num">Memory used</th>
          </tr>
        </thead>
        <tbody>
          {devs.map((m) => (
            <tr key={m.uuid ?? `${m.gpu_instance_id}/${m.compute_instance_id}`} data-uuid={m.uuid ?? undefined}>
              <td title={`GPU instance ${m.gpu_instance_id}, compute instance ${m.compute_instance_id}`}>
                {m.profile ?? 'n/a'}
              </td>
              <td class="uuid">{m.uuid ?? 'n/a'}</td>
              <td class={m.memory.used_mib === null ? 'num na' : 'num'}>
                {fmtMiB(m.memory.used_mib)} / {fmtMiB(m.memory.total_mib)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
