import Fastify, { type FastifyReply } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { errorPage } from '../src/inbound/reply.js';
import { send } from '../src/inbound/send.js';

/** Replies are decided during a turn of the event loop and written at its end (src/inbound/send.ts). */

const turnEnd = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

describe('send', () => {
  it('sets the status and headers at once and writes the body once the turn is over', async () => {
    const fastify = Fastify();
    cleanups.push(() => fastify.close());
    const seen: { sentAtOnce: boolean; statusAtOnce: number }[] = [];
    fastify.get('/', (_request, reply) => {
      send(reply, { ...errorPage(503, 'busy'), headers: { 'retry-after': '1' } });
      seen.push({ sentAtOnce: reply.sent, statusAtOnce: reply.statusCode });
    });
    const response = await fastify.inject('/');
    expect(seen).toEqual([{ sentAtOnce: false, statusAtOnce: 503 }]);
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBe('1');
    expect(response.body).toContain('busy');
  });

  it('gives a request the first reply decided for it, without a warning for the second', async () => {
    const warnings: string[] = [];
    const fastify = Fastify({
      logger: { level: 'warn', stream: { write: (line: string) => warnings.push(line) } },
    });
    cleanups.push(() => fastify.close());
    fastify.get('/', (_request, reply) => {
      send(reply, errorPage(500, 'first'));
      send(reply, errorPage(500, 'second'));
    });
    const response = await fastify.inject('/');
    expect(response.body).toContain('first');
    expect(response.body).not.toContain('second');
    expect(warnings).toEqual([]);
  });

  it('writes the rest of the turn when one reply throws, and closes that one connection', async () => {
    const events: string[] = [];
    const fake = (name: string, fails: boolean): FastifyReply => {
      const reply = {
        sent: false,
        code: () => reply,
        header: () => reply,
        headers: () => reply,
        send: () => {
          if (fails) throw new Error('broken');
          events.push(`${name} sent`);
        },
        log: { error: (fields: { event: string }) => events.push(`${name} ${fields.event}`) },
        raw: { destroy: () => events.push(`${name} destroyed`) },
      };
      return reply as unknown as FastifyReply;
    };
    send(fake('a', true), errorPage(500, 'a'));
    send(fake('b', false), errorPage(500, 'b'));
    expect(events).toEqual([]);
    await turnEnd();
    expect(events).toEqual(['a send_failed', 'a destroyed', 'b sent']);
  });
});
