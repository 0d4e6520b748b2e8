// The REST client: the token on every request, the daemon's error sentences, 401 reported once
// per answer, and export file names.
import { describe, expect, it } from 'vitest';

import { Api, filenameFrom } from '../../src/lib/api';
import { HttpError, makeEndpoint } from '../../src/lib/endpoint';

function reply(status: number, body: string, headers: Record<string, string> = {}): Response {
  return new Response(status === 204 ? null : body, { status, headers });
}

describe('Api', () => {
  it('sends the token and reads JSON', async () => {
    const seen: { url: string; init: RequestInit }[] = [];
    const api = new Api(
      () => makeEndpoint('http://h:1/sub/#/sessions', 'T'),
      () => undefined,
      async (url, init) => {
        seen.push({ url, init });
        return reply(200, '{"a":1}');
      },
    );
    expect(await api.json('api/sessions')).toEqual({ a: 1 });
    expect(seen[0]?.url).toBe('http://h:1/sub/api/sessions');
    expect((seen[0]?.init.headers as Record<string, string>).Authorization).toBe('Bearer T');
    expect(seen[0]?.init.method).toBe('GET');
  });

  it('reports 401 and throws the daemon sentence', async () => {
    let told = 0;
    const api = new Api(
      () => makeEndpoint('http://h/', null),
      () => told++,
      async () => reply(401, '{"error":"missing or wrong token"}'),
    );
    const e = await api.del('api/sessions/x').catch((x: unknown) => x);
    expect(e).toBeInstanceOf(HttpError);
    expect((e as HttpError).status).toBe(401);
    expect((e as HttpError).message).toBe('missing or wrong token');
    expect(told).toBe(1);
  });

  it('passes other failures on without calling the 401 handler', async () => {
    let told = 0;
    const api = new Api(
      () => makeEndpoint('http://h/', null),
      () => told++,
      async () => reply(404, 'not json', { 'Content-Type': 'text/plain' }),
    );
    const e = (await api.json('api/x').catch((x: unknown) => x)) as HttpError;
    expect(e.status).toBe(404);
    expect(told).toBe(0);
    const down = new Api(
      () => makeEndpoint('http://h/', null),
      () => told++,
      async () => {
        throw new TypeError('fetch failed');
      },
    );
    const d = (await down.json('api/x').catch((x: unknown) => x)) as HttpError;
    expect(d.status).toBe(0);
    expect(d.message).toContain('cannot reach the daemon');
  });

  it('accepts listed statuses, DELETE 204 and files with their names', async () => {
    const api = new Api(
      () => makeEndpoint('http://h/', null),
      () => undefined,
      async (url, init) => {
        if (init.method === 'DELETE') return reply(204, '');
        if (url.endsWith('health')) return reply(503, '{"status":"stalled"}');
        return reply(200, 't,gpu\n', { 'Content-Disposition': 'attachment; filename="gpumon-abc.csv"' });
      },
    );
    expect(await api.json('api/health', [503])).toEqual({ status: 'stalled' });
    await expect(api.del('api/sessions/abc')).resolves.toBeUndefined();
    const f = await api.file('api/sessions/abc/export?format=csv');
    expect(f.filename).toBe('gpumon-abc.csv');
    expect(await f.blob.text()).toBe('t,gpu\n');
  });
});

describe('filenameFrom', () => {
  it('reads the attachment name, never a path', () => {
    expect(filenameFrom('attachment; filename="gpumon-1.json"')).toBe('gpumon-1.json');
    expect(filenameFrom('attachment; filename=plain.csv')).toBe('plain.csv');
    expect(filenameFrom('attachment; filename="../../etc/x"')).toBe('.._.._etc_x');
    expect(filenameFrom(null)).toBeNull();
    expect(filenameFrom('inline')).toBeNull();
  });
});
