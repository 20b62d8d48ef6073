import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { lazyChildLogger } from '../src/log/loggers.js';

/** A request's logger (fastify's childLoggerFactory): pino's child, made when something logs through it. */

function capturing(): { logger: pino.Logger; lines: string[] } {
  const lines: string[] = [];
  return { logger: pino({ level: 'info', timestamp: false, base: null }, { write: (line: string) => lines.push(line) }), lines };
}

describe('the request logger', () => {
  it('makes no child while no line is written, and writes what pino’s child writes once something is', () => {
    const lazy = capturing();
    const child = vi.spyOn(lazy.logger, 'child');
    const log = lazyChildLogger(lazy.logger, { reqId: 'r-1' }, {});
    expect(log.level).toBe('info');
    log.debug('below its level');
    log.silent('never written');
    expect(child).not.toHaveBeenCalled();

    log.error({ event: 'call_failed', err: new Error('boom') }, 'legacy call failed unexpectedly');
    log.debug('not at this level');
    log.warn('said once');
    expect(child).toHaveBeenCalledTimes(1);
    log.child({ upstream: 'x' }).info('from a grandchild');

    const eager = capturing();
    const pinos = eager.logger.child({ reqId: 'r-1' });
    pinos.error({ event: 'call_failed', err: new Error('boom') }, 'legacy call failed unexpectedly');
    pinos.warn('said once');
    pinos.child({ upstream: 'x' }).info('from a grandchild');
    const withoutStack = (line: string) => line.replace(/"stack":"[^"]*"/, '"stack":""');
    expect(lazy.lines.map(withoutStack)).toEqual(eager.lines.map(withoutStack));
    expect(lazy.lines).toHaveLength(3);
  });

  it('takes a level of its own, as a child does', () => {
    const { logger, lines } = capturing();
    const log = lazyChildLogger(logger, { reqId: 'r-2' }, { level: 'warn' });
    expect(log.level).toBe('warn');
    log.info('below its level');
    log.level = 'debug';
    log.debug('now at its level');
    expect(lines.map((line) => JSON.parse(line) as unknown)).toEqual([{ level: 20, reqId: 'r-2', msg: 'now at its level' }]);
  });
});
