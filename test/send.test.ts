import { closeSync, mkdtempSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyReply } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { errorPage } from '../src/inbound/reply.js';
import { send } from '../src/inbound/send.js';
import { lineStream } from '../src/log/loggers.js';

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

  it('gives a request the first reply decided for it, status and headers included, without a warning', async () => {
    const warnings: string[] = [];
    const fastify = Fastify({
      logger: { level: 'warn', stream: { write: (line: string) => warnings.push(line) } },
    });
    cleanups.push(() => fastify.close());
    fastify.get('/', (_request, reply) => {
      reply.header('link', '</product.search.cp?v=3>; rel="successor-version"');
      send(reply, { status: 200, contentType: 'text/xml; charset=utf-8', body: '<first/>', cacheControl: 'private, max-age=0' });
      send(reply, errorPage(500, 'second'));
    });
    const response = await fastify.inject('/');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/xml; charset=utf-8');
    expect(response.headers.link).toBe('</product.search.cp?v=3>; rel="successor-version"');
    expect(response.body).toBe('<first/>');
    expect(warnings).toEqual([]);
  });

  it("takes the error handler's reply when writing the first one fails", async () => {
    const fastify = Fastify();
    cleanups.push(() => fastify.close());
    let failures = 0;
    fastify.addHook('onSend', (_request, _reply, payload, done) => {
      if (failures++ === 0) done(new Error('hook failed'));
      else done(null, payload);
    });
    fastify.setErrorHandler((_error, _request, reply) => send(reply, errorPage(500, 'handled')));
    fastify.get('/', (_request, reply) => send(reply, { ...errorPage(200, 'unused'), body: 'first' }));
    const response = await fastify.inject('/');
    expect(response.statusCode).toBe(500);
    expect(response.body).toContain('handled');
  });

  it('logs a reply that fastify answered for, empty, before it was written', async () => {
    const errors: { event?: string }[] = [];
    const fastify = Fastify({
      logger: { level: 'error', stream: { write: (line: string) => errors.push(JSON.parse(line) as { event?: string }) } },
    });
    cleanups.push(() => fastify.close());
    // The defect: an async handler resolving to nothing, which fastify answers itself.
    fastify.get('/', async (_request, reply) => {
      send(reply, errorPage(500, 'lost'));
    });
    const response = await fastify.inject('/');
    await turnEnd();
    expect(response.body).toBe('');
    expect(errors.map((line) => line.event)).toEqual(['send_failed']);
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
    expect(events).toEqual(['a destroyed', 'a send_failed', 'b sent']);
  });

  it('writes the hit lines gathered in the turn before its replies, even a reply decided before its line', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'send-')), 'hits.log');
    const fd = openSync(file, 'a');
    const hits = lineStream(fd);
    const fastify = Fastify();
    cleanups.push(async () => {
      await fastify.close();
      closeSync(fd);
    });
    const loggedWhenWritten: string[] = [];
    fastify.addHook('onSend', async (_request, _reply, payload) => {
      loggedWhenWritten.push(readFileSync(file, 'utf8'));
      return payload;
    });
    fastify.get('/', (_request, reply) => {
      send(reply, errorPage(200, 'ok'));
      hits.gather('{"event":"deprecated_call"}\n');
    });
    const response = await fastify.inject('/');
    expect(response.statusCode).toBe(200);
    expect(loggedWhenWritten).toEqual(['{"event":"deprecated_call"}\n']);
  });
});
