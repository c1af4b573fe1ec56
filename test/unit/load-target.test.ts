// --load's target, --table and the scope: what may be shown never holds the password.

import { describe, expect, it } from 'vitest';
import { scopeOf } from '../../src/load/load.js';
import { withoutPassword } from '../../src/load/target.js';
import { parseLoadTarget, sameLoad, tableName } from '../../src/load/engines.js';
import { retryCommand } from '../../src/engine/outcome.js';

describe('--load TARGET', () => {
  it('duckdb:PATH and postgres:// URLs; the password is kept apart from what is shown', () => {
    // shown (and recorded) absolute: the same words in another folder are another database
    expect(parseLoadTarget('duckdb:w.duckdb', '/data')).toEqual({ engine: 'duckdb', location: 'w.duckdb', shown: 'duckdb:/data/w.duckdb' });
    const pg = parseLoadTarget('postgresql://u:p%40ss@db:5433/ana?sslmode=require&password=other', '/');
    expect(pg).toMatchObject({ engine: 'postgres', password: 'p@ss', shown: 'postgresql://u@db:5433/ana?sslmode=require' });
    expect(() => parseLoadTarget('mysql://u:secret@h/db', '/')).toThrow(/duckdb:PATH or postgres:/);
    expect(() => parseLoadTarget('mysql://u:secret@h/db', '/')).not.toThrow(/secret/);
    expect(() => parseLoadTarget('duckdb:', '/')).toThrow(/path/);
  });

  it('a printed retry command leaves the password out', () => {
    const target = parseLoadTarget('postgres://u:hunter2@db/ana', '/');
    const argv = withoutPassword(['run', 'buyer', '--load', 'postgres://u:hunter2@db/ana', '--since', '2026-11-01'], target);
    const command = retryCommand(argv, { since: 1793487600, until: 1793573999 });
    expect(command).toContain('postgres://u@db/ana');
    expect(command).not.toContain('hunter2');
  });

  it('a password in the query string or with a bare % is kept out of what is shown and of retry commands', () => {
    const target = parseLoadTarget('postgres://u:50%@db/ana?password=q-secret', '/');
    expect(target.password).toBe('50%');
    expect(target.hidden).toEqual(['q-secret']);
    const argv = withoutPassword(['run', 'buyer', '--load', 'postgres://u:50%@db/ana?password=q-secret'], target);
    expect(argv.join(' ')).not.toMatch(/50%|q-secret/);
  });

  it('--table: {side}, schema.table for Postgres only, never empty parts', () => {
    expect(tableName(undefined, 'buyer', 'duckdb')).toEqual(['buyer_report']);
    expect(tableName('ads.{side}_daily', 'seller', 'postgres')).toEqual(['ads', 'seller_daily']);
    expect(() => tableName('ads.x', 'buyer', 'duckdb')).toThrow(/not a table name/);
    expect(() => tableName('a..b', 'buyer', 'postgres')).toThrow(/not a table name/);
  });

  it('the scope is canonical: breakdowns and filters sorted, whatever order they were given in', () => {
    const a = scopeOf({ side: 'buyer', breakdowns: ['DAILY', 'COUNTRY'], filters: { os: ['ios', 'android'], country: ['FR'] } }, 'https://api', 'default');
    const b = scopeOf({ side: 'buyer', breakdowns: ['COUNTRY', 'DAILY'], filters: { country: ['FR'], os: ['android', 'ios'] } }, 'https://api', 'default');
    expect(a).toBe(b);
    expect(a).toBe('base=https://api;side=buyer;breakdowns=COUNTRY,DAILY;filters=country=FR&os=android,ios;account=default');
    expect(scopeOf({ side: 'seller', breakdowns: [], filters: {} }, 'https://api', 'env')).toBe('base=https://api;side=seller;breakdowns=-;filters=-;account=env');
  });

  it('a state\'s --load compared as a database and a table, not as text', () => {
    const load = (target: string, table: string) => ({ target, table });
    expect(sameLoad(load('postgresql://u@localhost/ana', 'public.buyer'), load('postgresql://u@127.0.0.1:5432/ana', 'public.buyer'))).toBe(true);
    expect(sameLoad(load('postgresql://u@localhost/ana', 'public.buyer'), load('postgresql://u@localhost:5433/ana', 'public.buyer'))).toBe(false);
    expect(sameLoad(load('postgresql://u@localhost/ana', 'public.buyer'), load('postgresql://u@localhost/other', 'public.buyer'))).toBe(false);
    expect(sameLoad(load('duckdb:/data/w.duckdb', 'buyer_report'), load('duckdb:/data/x/../w.duckdb', 'main.Buyer_Report'))).toBe(true);
    expect(sameLoad(load('duckdb:/data/w.duckdb', 'buyer_report'), load('duckdb:/data/w.duckdb', 'seller_report'))).toBe(false);
    expect(sameLoad(load('duckdb:/data/w.duckdb', 'buyer_report'), load('postgresql://u@localhost/ana', 'buyer_report'))).toBe(false);
    expect(sameLoad(load('mysql://h/db', 't'), load('mysql://h/db/', 't')), 'a target not understood is compared as text').toBe(false);
  });
});
