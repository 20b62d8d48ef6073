import { describe, expect, it } from 'vitest';
import { startDeadline } from '../src/call/deadline.js';
import { ClientClosedError, UpstreamError } from '../src/errors.js';

/** A call's deadline (src/call/deadline.ts): its signal is made when first read, and says what it would have said. */

const wait = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('a call deadline', () => {
  it('aborts its signal with a timeout once it passes', async () => {
    const deadline = startDeadline(30);
    const { signal } = deadline;
    expect(signal.aborted).toBe(false);
    await wait(60);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(UpstreamError);
    expect((signal.reason as UpstreamError).failure.code).toBe('timeout');
  });

  it('read only after it passed: the signal is already aborted, as a timeout', async () => {
    const deadline = startDeadline(10);
    await wait(30);
    expect(deadline.signal.aborted).toBe(true);
    expect((deadline.signal.reason as UpstreamError).failure.code).toBe('timeout');
  });

  it('read late, it still times out when it was set to, not a whole timeout later', async () => {
    const deadline = startDeadline(80);
    await wait(50);
    const { signal } = deadline;
    expect(signal.aborted).toBe(false);
    await wait(60);
    expect(signal.aborted).toBe(true);
  });

  it('a caller that hung up: the signal is aborted as a closed client, whether read before or after', () => {
    const before = startDeadline(10_000);
    const { signal } = before;
    before.hungUp();
    expect(signal.reason).toBeInstanceOf(ClientClosedError);
    const after = startDeadline(10_000);
    after.hungUp();
    expect(after.signal.reason).toBeInstanceOf(ClientClosedError);
    after.clear();
    before.clear();
  });

  it('cleared, it no longer times out', async () => {
    const read = startDeadline(20);
    const { signal } = read;
    read.clear();
    const unread = startDeadline(20);
    unread.clear();
    await wait(40);
    expect(signal.aborted).toBe(false);
    expect(unread.signal.aborted).toBe(false);
  });
});
