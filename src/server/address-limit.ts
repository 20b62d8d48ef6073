/**
 * Requests per address, for an answer anyone may ask (the callers' self-service): a bucket of `burst`
 * requests for each address, refilled at `perMinute`. At most `maxAddresses` are remembered; past
 * that the one asked least recently is forgotten, so a flood of addresses costs a bounded map.
 */
export interface AddressLimitOptions {
  readonly burst: number;
  readonly perMinute: number;
  readonly maxAddresses: number;
}

export interface AddressLimit {
  /** Whether `address` may be answered now (`now` in ms); when not, the seconds until it may. */
  take(address: string, now: number): { readonly allowed: true } | { readonly allowed: false; readonly retryAfterSeconds: number };
}

export function addressLimit({ burst, perMinute, maxAddresses }: AddressLimitOptions): AddressLimit {
  const msPerRequest = 60_000 / perMinute;
  /** Tokens left and when they were counted; in the order last asked, oldest first. */
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    take(address, now) {
      const held = buckets.get(address);
      buckets.delete(address);
      const tokens = held === undefined ? burst : Math.min(burst, held.tokens + (now - held.at) / msPerRequest);
      if (buckets.size >= maxAddresses) buckets.delete(buckets.keys().next().value as string);
      if (tokens < 1) {
        buckets.set(address, { tokens, at: now });
        return { allowed: false, retryAfterSeconds: Math.ceil(((1 - tokens) * msPerRequest) / 1000) };
      }
      buckets.set(address, { tokens: tokens - 1, at: now });
      return { allowed: true };
    },
  };
}

/**
 * What the per-address limit counts by: an IPv4 address, or the /64 of an IPv6 one, which one host
 * holds whole and could otherwise walk through for a fresh bucket at every request.
 */
export function addressGroup(address: string): string {
  if (!address.includes(':') || /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(address)) return address.replace(/^::ffff:/i, '');
  const [head = '', tail = ''] = address.toLowerCase().split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const groups = address.includes('::') ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${groups
    .slice(0, 4)
    .map((group) => group.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
