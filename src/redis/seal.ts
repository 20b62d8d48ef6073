import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Values the fleet keeps in Redis, sealed: an HMAC-SHA256 over the Redis key and the value, made with
 * the fleet's secret, before the value. Whoever can write to Redis but does not hold the secret cannot
 * forge a value, alter one (even a byte of the same length), or move one to another key (a page cached
 * for one appKey served to another): `open` then gives null. Pure, but for the HMAC.
 */

/** The MAC's length in bytes, in front of every sealed value. */
export const SEAL_BYTES = 32;

export interface Seal {
  /** `value` as stored under `key`: its MAC, then the value. */
  close(key: string, value: Buffer): Buffer;
  /** The value stored under `key`, or null when `sealed` is not one this fleet's secret sealed for that key. */
  open(key: string, sealed: Buffer): Buffer | null;
}

export function createSeal(secret: string): Seal {
  const macOf = (key: string, value: Buffer): Buffer => {
    const keyBytes = Buffer.from(key, 'utf8');
    const length = Buffer.allocUnsafe(4);
    length.writeUInt32BE(keyBytes.length);
    // The key's length first: no key and value can be read as another key and value.
    return createHmac('sha256', secret).update(length).update(keyBytes).update(value).digest();
  };
  return {
    close: (key, value) => Buffer.concat([macOf(key, value), value]),
    open(key, sealed) {
      if (sealed.length < SEAL_BYTES) return null;
      const value = sealed.subarray(SEAL_BYTES);
      return timingSafeEqual(sealed.subarray(0, SEAL_BYTES), macOf(key, value)) ? value : null;
    },
  };
}
