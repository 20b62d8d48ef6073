import { scriptCommands } from '../redis/shared.js';

/**
 * The fleet ledger's Lua scripts (src/deprecation/fleet-ledger.ts). Redis never sees the fleet's
 * secret: entries are sealed and opened in Node, and the scripts only compare, store, index and count.
 * Keys an index names (an entry pushed out or past its retention) are made from `prefix` and the
 * member, and READ's keys are its arguments, not KEYS: the fleet's Redis is one server, not a cluster.
 */

/** What READ gives for an entry: its bytes, nothing (no such key), or the length of a value too large to read (-1: not a string). */
export type StoredEntry = Buffer | null | number;

/** What MERGE answers: 0 made already (a merge sent again), 1 changed since it was read (read again), 2 made. */
export type MergeReply = [0] | [1] | [2] | [2, string, Buffer | null];

/** ARGV the largest value read, then the entries' keys. A value too large, or not a string, is given as its length (-1). */
const READ = `
local out = {}
for i = 2, #ARGV do
  local key = ARGV[i]
  local kind = redis.call('TYPE', key).ok
  if kind == 'none' then out[i - 1] = false
  elseif kind ~= 'string' then out[i - 1] = -1
  else
    local length = redis.call('STRLEN', key)
    if length > tonumber(ARGV[1]) then out[i - 1] = length else out[i - 1] = redis.call('GET', key) end
  end
end
return out
`;

/** The value of `key` as a merge compares it: '' none, 'refused' not one to read (too large, not a string), else its SHA-1. */
const TOKEN = `
local function token(key, largest)
  local kind = redis.call('TYPE', key).ok
  if kind == 'none' then return '' end
  if kind ~= 'string' or redis.call('STRLEN', key) > largest then return 'refused' end
  return redis.sha1hex(redis.call('GET', key))
end
`;

/**
 * Writes one entry merged in Node, once, if it is still what Node read. KEYS entry, index, unnamed,
 * the merge's marker; ARGV the token of the value read, the new sealed value, retention (ms), its
 * lastSeen (the index's score), its member, '1' for an unnamed caller's entry, the unnamed callers
 * held (k), the largest value read, the entries' key prefix, the calls merged, the marker's life (ms).
 *
 * An unnamed caller's entry is counted in a Space-Saving summary (a ZSET of counts): a new one, when
 * k are held, takes the place of the least counted and starts from its count; that entry is deleted
 * here and its value returned, for Node to open and count under `other`.
 */
const MERGE = `${TOKEN}
if redis.call('EXISTS', KEYS[4]) == 1 then return {0} end
local largest = tonumber(ARGV[8])
if token(KEYS[1], largest) ~= ARGV[1] then return {1} end
local member = ARGV[5]
local pushed = nil
if ARGV[6] == '1' then
  if redis.call('ZSCORE', KEYS[3], member) then
    redis.call('ZINCRBY', KEYS[3], ARGV[10], member)
  elseif redis.call('ZCARD', KEYS[3]) < tonumber(ARGV[7]) then
    redis.call('ZADD', KEYS[3], ARGV[10], member)
  else
    local least = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
    local leastKey = ARGV[9] .. least[1]
    pushed = {least[1], false}
    if token(leastKey, largest) ~= 'refused' then pushed[2] = redis.call('GET', leastKey) end
    redis.call('DEL', leastKey)
    redis.call('ZREM', KEYS[2], least[1])
    redis.call('ZREM', KEYS[3], least[1])
    redis.call('ZADD', KEYS[3], tonumber(least[2]) + tonumber(ARGV[10]), member)
  end
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], member)
redis.call('SET', KEYS[4], '1', 'PX', ARGV[11])
if pushed then return {2, pushed[1], pushed[2]} end
return {2}
`;

/** KEYS index, unnamed; ARGV the oldest lastSeen kept, the entries' key prefix, how many to drop at most. */
const TRIM = `
local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, member in ipairs(gone) do
  redis.call('ZREM', KEYS[1], member)
  redis.call('ZREM', KEYS[2], member)
  redis.call('DEL', ARGV[2] .. member)
end
return #gone
`;

export interface LedgerCommands {
  fleetLedgerReadBuffer(largest: number, ...keys: string[]): Promise<StoredEntry[]>;
  fleetLedgerMergeBuffer(...keysAndArgs: (string | number | Buffer)[]): Promise<MergeReply>;
  fleetLedgerTrim(index: string, unnamed: string, oldest: number, prefix: string, most: number): Promise<number>;
}

export const ledgerCommands = scriptCommands<LedgerCommands>({
  fleetLedgerRead: { keys: 0, lua: READ },
  fleetLedgerMerge: { keys: 4, lua: MERGE },
  fleetLedgerTrim: { keys: 2, lua: TRIM },
});
