import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startDeadline } from '../src/call/deadline.js';
import { ClientClosedError, UpstreamError } from '../src/errors.js';
import { type FetchOptions, type FetchTrace, fetchOptionsWith } from '../src/outbound/fetch.js';

/** A call's deadline (src/call/deadline.ts): its signal is made when first read, and says what it would have said. */

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

const timeoutOf = (signal: AbortSignal): string | undefined =>
  signal.reason instanceof UpstreamError ? signal.reason.failure.code : undefined;

describe('a call deadline', () => {
  it('aborts its signal with a timeout once it passes', () => {
    const deadline = startDeadline(30);
    const { signal } = deadline;
    vi.advanceTimersByTime(29);
    expect(signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(timeoutOf(signal)).toBe('timeout');
  });

  it('read only after it passed: the signal is already aborted, as a timeout', () => {
    const deadline = startDeadline(10);
    vi.advanceTimersByTime(30);
    expect(timeoutOf(deadline.signal)).toBe('timeout');
  });

  it('read late, it still times out when it was set to, not a whole timeout later', () => {
    const deadline = startDeadline(80);
    vi.advanceTimersByTime(50);
    const { signal } = deadline;
    expect(signal.aborted).toBe(false);
    vi.advanceTimersByTime(30);
    expect(timeoutOf(signal)).toBe('timeout');
  });

  it('a caller that hung up: the signal is aborted as a closed client, whether read before or after', () => {
    const before = startDeadline(10_000);
    const { signal } = before;
    before.hungUp();
    expect(signal.reason).toBeInstanceOf(ClientClosedError);
    const after = startDeadline(10_000);
    after.hungUp();
    expect(after.signal.reason).toBeInstanceOf(ClientClosedError);
  });

  it('keeps to its time when the wall clock steps, forward or back, before its signal is read', () => {
    for (const step of [60_000, -60_000]) {
      const deadline = startDeadline(80);
      vi.setSystemTime(Date.now() + step);
      expect(deadline.signal.aborted).toBe(false);
      vi.advanceTimersByTime(79);
      expect(deadline.signal.aborted).toBe(false);
      vi.advanceTimersByTime(1);
      expect(timeoutOf(deadline.signal)).toBe('timeout');
    }
  });

  it('cleared, it no longer times out', () => {
    const read = startDeadline(20);
    const { signal } = read;
    read.clear();
    const unread = startDeadline(20);
    unread.clear();
    vi.advanceTimersByTime(40);
    expect(signal.aborted).toBe(false);
    expect(unread.signal.aborted).toBe(false);
  });
});

describe('fetch options derived by a layer (fetchOptionsWith)', () => {
  const base = (deadline = startDeadline(30)): FetchOptions => ({
    requestId: 'r-1',
    appKey: 'the-key',
    deadline: deadline.at,
    get signal() {
      return deadline.signal;
    },
    tally: { upstreamRequest: () => {}, page: () => {} },
  });

  it('leaves the call signal unmade until a layer reads it, then hands on the call signal itself', () => {
    const deadline = startDeadline(30);
    let reads = 0;
    const counted = Object.defineProperty(base(deadline), 'signal', {
      get: () => {
        reads++;
        return deadline.signal;
      },
    });
    const derived = fetchOptionsWith(fetchOptionsWith(counted, { tally: null }), { revalidation: {} });
    expect(reads).toBe(0);
    expect(derived.signal).toBe(deadline.signal);
    expect(reads).toBe(1);
    vi.advanceTimersByTime(30);
    expect(timeoutOf(derived.signal)).toBe('timeout');
  });

  it('takes what the layer changes, nulls included, and the rest from the options it was given', () => {
    const given = base();
    const own = new AbortController().signal;
    const derived = fetchOptionsWith(given, { appKey: null, tally: null, signal: own });
    expect(derived).toMatchObject({ requestId: 'r-1', appKey: null, deadline: given.deadline, tally: null });
    expect(derived.signal).toBe(own);
    const again = fetchOptionsWith(derived, { requestId: 'r-2' });
    expect(again).toMatchObject({ requestId: 'r-2', appKey: null, tally: null });
    expect(again.signal).toBe(own);
    expect(fetchOptionsWith(given, {}).appKey).toBe('the-key');
  });

  it('carries a span, a revalidation and a deadline of its own through the layers below', () => {
    const trace = { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16) } as FetchTrace;
    const revalidation = { responded: () => {} };
    const shadowed = fetchOptionsWith(base(), { trace, revalidation, deadline: 123 });
    const below = fetchOptionsWith(shadowed, { requestId: 'r-3' });
    expect(below).toMatchObject({ requestId: 'r-3', deadline: 123, appKey: 'the-key' });
    expect(below.trace).toBe(trace);
    expect(below.revalidation).toBe(revalidation);
    expect(fetchOptionsWith(below, { trace: undefined }).trace).toBeUndefined();
  });
});
