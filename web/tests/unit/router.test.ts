// Hash routes: parsing, matching (static segments beat parameters), addresses, and the token
// taken out of the fragment.
import { describe, expect, it } from 'vitest';

import { href, matchRoute, parseHash, sectionOf, takeToken } from '../../src/lib/router';
import type { Route } from '../../src/lib/router';

const routes: Route<string>[] = [
  { path: '/', page: 'live', nav: 'Live' },
  { path: '/gpu/:index', page: 'gpu', section: '/' },
  { path: '/sessions', page: 'sessions', nav: 'Sessions' },
  { path: '/sessions/:id', page: 'session', section: '/sessions' },
  { path: '/benchmarks/:id', page: 'bench', section: '/benchmarks' },
  { path: '/benchmarks/compare', page: 'compare', section: '/benchmarks' },
];

describe('parseHash', () => {
  it('reads the path and the query', () => {
    const p = parseHash('#/benchmarks/compare?ids=a,b');
    expect(p.path).toBe('/benchmarks/compare');
    expect(p.query.get('ids')).toBe('a,b');
    expect(parseHash('#/sessions/').path).toBe('/sessions');
    expect(parseHash('#//gpu//3').path).toBe('/gpu/3');
  });
  it('takes anything that is not a route as the start page', () => {
    for (const h of ['', '#', '#token=abc', 'garbage']) expect(parseHash(h).path).toBe('/');
  });
});

describe('matchRoute', () => {
  it('captures and decodes parameters', () => {
    const m = matchRoute(routes, '/sessions/20261126-a%20b');
    expect(m?.route.page).toBe('session');
    expect(m?.params).toEqual({ id: '20261126-a b' });
    expect(matchRoute(routes, '/gpu/12')?.params.index).toBe('12');
  });
  it('prefers static segments whatever the order', () => {
    expect(matchRoute(routes, '/benchmarks/compare')?.route.page).toBe('compare');
    expect(matchRoute(routes, '/benchmarks/x1')?.route.page).toBe('bench');
  });
  it('matches the whole path only', () => {
    expect(matchRoute(routes, '/sessions/a/b')).toBeNull();
    expect(matchRoute(routes, '/nope')).toBeNull();
    expect(matchRoute(routes, '/')?.route.page).toBe('live');
  });
  it('says which nav entry a page belongs to', () => {
    expect(sectionOf(matchRoute(routes, '/gpu/1'))).toBe('/');
    expect(sectionOf(matchRoute(routes, '/sessions'))).toBe('/sessions');
    expect(sectionOf(matchRoute(routes, '/sessions/x'))).toBe('/sessions');
    expect(sectionOf(null)).toBeNull();
  });
});

describe('href', () => {
  it('encodes segments and drops empty query values', () => {
    expect(href('/sessions/a b')).toBe('#/sessions/a%20b');
    expect(href('/')).toBe('#/');
    expect(href('/benchmarks/compare', { ids: 'a,b', x: '' })).toBe('#/benchmarks/compare?ids=a%2Cb');
    expect(parseHash(href('/benchmarks/compare', { ids: 'a,b' })).query.get('ids')).toBe('a,b');
  });
  it('round-trips through parseHash and matchRoute', () => {
    const h = href('/sessions/id.with-odd_chars');
    expect(matchRoute(routes, parseHash(h).path)?.params.id).toBe('id.with-odd_chars');
  });
});

describe('takeToken', () => {
  it('takes the token gpumon serve prints, leaving the start page', () => {
    expect(takeToken('#token=s3cr%26t')).toEqual({ token: 's3cr&t', rest: '' });
  });
  it('takes a token from a route, keeping the route and the rest of its query', () => {
    expect(takeToken('#/gpu/1?token=T')).toEqual({ token: 'T', rest: '#/gpu/1' });
    expect(takeToken('#/benchmarks/compare?ids=a,b&token=T')).toEqual({
      token: 'T',
      rest: '#/benchmarks/compare?ids=a%2Cb',
    });
  });
  it('leaves a fragment without a token alone', () => {
    expect(takeToken('#/sessions')).toEqual({ token: null, rest: '#/sessions' });
    expect(takeToken('#/sessions?x=1')).toEqual({ token: null, rest: '#/sessions?x=1' });
    expect(takeToken('')).toEqual({ token: null, rest: '' });
  });
  it('drops an empty token from the address', () => {
    expect(takeToken('#token=')).toEqual({ token: null, rest: '' });
  });
});
