import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startDeadline } from '../src/call/deadline.js';
import { ClientClosedError, UpstreamError } from '../src/errors.js';

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
