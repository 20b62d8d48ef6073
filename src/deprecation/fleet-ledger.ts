import { createHash, randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { BoundedValue, Shared } from '../redis/shared.js';
import { SEAL_BYTES } from '../redis/seal.js';
import { ledgerCommands, type MergeReply } from './fleet-ledger-scripts.js';
import { combined, DEFAULT_MAX_ENTRIES, FOLDED_CLIENT, Ledger, type LedgerEntry, type LedgerHit } from './ledger.js';
import { entryOfRecord, MAX_RECORD_BYTES, recordOf } from './ledger-record.js';
import { type LedgerView, viewOfEntries } from './ledger-view.js';

/**
 * The fleet's ledger in Redis (docs/fleet.md), so that `GET /ledger` on any instance shows who calls
 * what across all of them. Each instance counts its calls in a ledger of its own that is not yet
 * written (`pending`) and merges it into Redis once a second: a call is never a Redis round trip.
 * While Redis is away the pending ledger keeps counting (bounded as every ledger is) and is merged
 * when Redis is back; `/ledger` then shows the instance's own ledger and says so.
 *
 * In Redis (docs/security.md): each entry (client × operation × binding) a JSON value sealed
 * with the fleet's secret under its key, which expires after `deprecation.ledgerRetentionDays`
 * without calls; an index of them (a ZSET by lastSeen, trimmed of those past retention); and the
 * unnamed callers' entries in a Space-Saving summary of `maxEntries` (a ZSET of counts). The secret
 * never goes to Redis, so entries are merged in Node: read, opened, added to, sealed, and written by
 * a script only if unchanged since the read. `/ledger` reads a view of the whole ledger made off the
 * request path, so that a page costs what it holds.
 */

export interface FleetLedger {
  add(hit: LedgerHit, at: number): void;
  /**
   * The fleet's ledger as last read: read again in the background once older than `viewMaxAgeMs`,
   * waited for only the first time. Null while Redis cannot be read.
   */
  view(): Promise<LedgerView | null>;
  /** The fleet's ledger as Redis holds it now; null when Redis cannot be read. */
  read(): Promise<LedgerView | null>;
  /** Merges what is pending now (also done every `flushIntervalMs`). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

export interface FleetLedgerOptions {
  /** `deprecation.ledgerRetentionDays`: an entry without calls for this long is dropped. */
  readonly retentionDays: number;
  readonly maxEntries?: number;
  readonly flushIntervalMs?: number;
  readonly viewMaxAgeMs?: number;
}

const FLUSH_INTERVAL_MS = 1000;
/** How stale `/ledger` may be, beyond the merge's second: each read of a view costs every entry (some 0.2 s of CPU at 10,000). */
const VIEW_MAX_AGE_MS = 5000;
/** Entries merged or read in one command: a long one would outlast redis.commandTimeoutMs and look like an outage. */
const CHUNK = 200;
/** How long Redis remembers a merge was made, so that sending it again counts nothing twice. */
const MERGE_MARKER_MS = 3_600_000;
/** Writes of one entry that found it changed since it was read, before it waits for the next merge. */
const MERGE_TRIES = 4;
/** Index members past retention dropped per merge: the rest go with the next ones. */
const TRIM_MOST = 1000;
/** Index members read for a view beyond `maxEntries`: the configured clients' entries and `other`'s. */
const VIEW_ROOM = 10_000;
const DAY_MS = 86_400_000;
/** The largest stored value read: a sealed entry of the largest record. */
const LARGEST = SEAL_BYTES + MAX_RECORD_BYTES;

/** A merge not yet known to be made: its entry and the id that makes it happen once. */
interface Unmerged {
  readonly id: string;
  readonly entry: LedgerEntry;
}

export function createFleetLedger(shared: Shared, options: FleetLedgerOptions): FleetLedger | null {
  if (!shared.configured) return null;
  const maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
  const retentionMs = options.retentionDays * DAY_MS;
  const viewMaxAgeMs = options.viewMaxAgeMs ?? VIEW_MAX_AGE_MS;
  const keys = {
    index: shared.key('ledger', 'v2', 'index'),
    unnamed: shared.key('ledger', 'v2', 'unnamed'),
    prefix: shared.key('ledger', 'v2', 'entry', ''),
    marker: (id: string): string => shared.key('ledger', 'v2', 'merged', id),
  };
  /** An entry's index member: a keyed hash of its client, operation and binding. */
  const memberOf = (entry: LedgerEntry): string =>
    shared.hashOf(`${entry.client}\u0000${entry.operation}\u0000${entry.binding}`).slice(0, 32);

  /** The entry `stored` under `key` holds; a value that is not one this fleet wrote is refused, counted and said. */
  const opened = (key: string, stored: BoundedValue, now: number): LedgerEntry | null => {
    const record = shared.open('ledger', key, stored);
    if (record === null) return null;
    const entry = entryOfRecord(record, now);
    if (entry === null) shared.refuse('ledger', 'bounds', key);
    return entry;
  };

  let pending = new Ledger(maxEntries);
  /**
   * Merges sent whose outcome is not known (a reply timed out, Redis went away mid-pipeline), or that
   * kept finding their entry changed: sent again, with the same ids, before anything newer.
   */
  let unmerged: Unmerged[] = [];
  const instance = randomUUID();
  let batches = 0;
  let flushing: Promise<void> | null = null;

  /** Members of `index` or `unnamed` that were no member of this fleet's, dropped inside Redis: each counted `bounds`. */
  const refuseDropped = (key: string, dropped: number): void => {
    for (let i = 0; i < dropped; i++) shared.refuse('ledger', 'bounds', key);
  };

  /** An entry another merge pushed out of the unnamed callers' summary: its calls go to `other`, counted at the next merge. */
  const foldPushedOut = (member: string, stored: Buffer | null, now: number): void => {
    const entry = opened(keys.prefix + member, stored, now);
    if (entry !== null) pending.absorb({ ...entry, client: FOLDED_CLIENT, configured: false });
  };

  /** Merges `chunk`; returns those whose merge is not known to be made. */
  const mergeChunk = async (redis: Redis, chunk: readonly Unmerged[]): Promise<Unmerged[]> => {
    const commands = ledgerCommands(redis);
    const failed: Unmerged[] = [];
    let left = chunk;
    for (let tries = 0; tries < MERGE_TRIES && left.length > 0; tries++) {
      const now = Date.now();
      const members = left.map((item) => memberOf(item.entry));
      const stored = await commands.fleetLedgerReadBuffer(LARGEST, ...members.map((member) => keys.prefix + member));
      const pipeline = redis.pipeline() as unknown as typeof commands;
      left.forEach(({ id, entry }, at) => {
        const member = members[at] as string;
        const key = keys.prefix + member;
        const value = stored[at] ?? null;
        const base = opened(key, value, now);
        const merged = base === null ? entry : combined(base, entry);
        const unnamed = !entry.configured && entry.client !== FOLDED_CLIENT;
        pipeline.fleetLedgerMergeBuffer(
          ...[key, keys.index, keys.unnamed, keys.marker(id), tokenOf(value), shared.seal.close(key, recordOf(merged)), retentionMs],
          ...[merged.lastSeen, member, unnamed ? '1' : '0', maxEntries, LARGEST, keys.prefix, entry.calls, MERGE_MARKER_MS],
        );
      });
      const results = (await (pipeline as unknown as ReturnType<Redis['pipeline']>).exec()) ?? [];
      const changed: Unmerged[] = [];
      left.forEach((item, at) => {
        const [err, reply] = results[at] ?? [new Error('no reply'), null];
        if (err !== null) failed.push(item);
        else if ((reply as MergeReply)[0] === 1) changed.push(item);
        else if ((reply as MergeReply)[0] === 2) {
          const [, dropped, member, value] = reply as [2, number, Buffer?, (Buffer | null)?];
          refuseDropped(keys.unnamed, dropped);
          if (member !== undefined) foldPushedOut(member.toString('utf8'), value ?? null, now);
        }
      });
      left = changed;
    }
    return [...failed, ...left];
  };

  const merge = async (redis: Redis, items: readonly Unmerged[]): Promise<Unmerged[]> => {
    await ledgerCommands(redis).fleetLedgerTrim(keys.index, keys.unnamed, Date.now() - retentionMs, keys.prefix, TRIM_MOST);
    const left: Unmerged[] = [];
    for (let from = 0; from < items.length; from += CHUNK) left.push(...(await mergeChunk(redis, items.slice(from, from + CHUNK))));
    return left;
  };

  const flush = async (): Promise<void> => {
    // One merge at a time: a slow Redis must not pile merges up behind each other. While Redis is
    // away nothing is sent: the pending ledger keeps counting (bounded), merged when it is back.
    if (flushing !== null) return flushing;
    if (!shared.available() && unmerged.length === 0) return;
    const batch = `${instance}:${++batches}`;
    const fresh: Unmerged[] = pending.entries().map((entry, index) => ({ id: `${batch}:${index}`, entry }));
    pending = new Ledger(maxEntries);
    const items = [...unmerged, ...fresh];
    if (items.length === 0) return;
    flushing = shared
      .run(
        'ledger',
        (redis) => merge(redis, items),
        () => items,
      )
      .then((left) => {
        unmerged = left;
        // Never more than a ledger's worth waiting: past it, counted again (the lesser loss is twice).
        if (unmerged.length > maxEntries) {
          for (const item of unmerged) pending.absorb(item.entry);
          unmerged = [];
        }
      })
      .finally(() => {
        flushing = null;
      });
    return flushing;
  };

  /**
   * The values of the last read and what they held: a value read again unchanged is not opened again
   * (its MAC and checks cost most of a read). Only the last read's, so no larger than the index.
   */
  let known = new Map<string, { readonly stored: Buffer; readonly entry: LedgerEntry }>();
  const read = async (): Promise<LedgerView | null> => {
    const entries = await shared.run(
      'ledger',
      async (redis) => {
        const commands = ledgerCommands(redis);
        // The latest first: past the cap (only what is not this fleet's could put more there), the oldest are left out.
        // A member that is no member of this fleet's (of any length) is dropped inside Redis, never sent.
        const [members, dropped] = await commands.fleetLedgerIndex(keys.index, keys.unnamed, maxEntries + VIEW_ROOM, keys.prefix);
        refuseDropped(keys.index, dropped);
        const now = Date.now();
        const read = new Map<string, { readonly stored: Buffer; readonly entry: LedgerEntry }>();
        for (let from = 0; from < members.length; from += CHUNK) {
          const chunk = members.slice(from, from + CHUNK).map((member) => keys.prefix + member);
          const stored = await commands.fleetLedgerReadBuffer(LARGEST, ...chunk);
          chunk.forEach((key, at) => {
            const value = stored[at] ?? null;
            const before = known.get(key);
            const entry =
              before !== undefined && Buffer.isBuffer(value) && before.stored.equals(value) ? before.entry : opened(key, value, now);
            if (entry !== null) read.set(key, { stored: value as Buffer, entry });
          });
        }
        known = read;
        return [...read.values()].map(({ entry }) => entry);
      },
      () => null,
    );
    if (entries === null) return null;
    // What `other` holds is what was folded. One entry per member: no ledger to merge them in.
    const folded = entries.reduce((sum, entry) => sum + (entry.client === FOLDED_CLIENT ? entry.calls : 0), 0);
    return viewOfEntries(entries, maxEntries, folded);
  };

  let latest: { readonly view: LedgerView | null; readonly at: number } | null = null;
  let reading: Promise<LedgerView | null> | null = null;
  const readAgain = (): Promise<LedgerView | null> => {
    reading ??= read()
      .then((view) => {
        latest = { view, at: performance.now() };
        return view;
      })
      .finally(() => {
        reading = null;
      });
    return reading;
  };

  const timer = setInterval(() => void flush(), options.flushIntervalMs ?? FLUSH_INTERVAL_MS);
  timer.unref();

  return {
    add(hit, at) {
      pending.add(hit, at);
    },
    flush,
    read,
    async view() {
      if (!shared.available()) return null;
      if (latest === null) return readAgain();
      if (performance.now() - latest.at > viewMaxAgeMs) void readAgain();
      return latest.view;
    },
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}

/** What a merge compares the stored value with (fleet-ledger-scripts.ts, TOKEN). */
function tokenOf(stored: BoundedValue): string {
  if (stored === null) return '';
  return typeof stored === 'number' ? 'refused' : createHash('sha1').update(stored).digest('hex');
}
