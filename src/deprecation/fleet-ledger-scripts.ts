import { scriptCommands, type BoundedValue } from '../redis/shared.js';

/**
 * The fleet ledger's Lua scripts (src/deprecation/fleet-ledger.ts). Redis never sees the fleet's
 * secret: entries are sealed and opened in Node, and the scripts only compare, store, index and count.
 * Keys an index names (an entry pushed out, past its retention, or a member dropped) are made from
 * `prefix` and the member, and READ's keys are its arguments, not KEYS: the fleet's Redis is one
 * server, not a cluster.
 */

/**
 * What MERGE answers: 0 made already (a merge sent again), 1 changed since it was read (read again), 2 made,
 * with how many members of `unnamed` were no member (MEMBER) and were dropped, and the entry pushed out, if any.
 */
export type MergeReply = [0] | [1] | [2, number] | [2, number, string, Buffer | null];

/** What INDEX gives: the index's members, the latest first, and how many were no member (MEMBER) and were dropped. */
export type IndexReply = [string[], number];

/**
 * Whether `member` is one the fleet writes (fleet-ledger.ts, memberOf): 32 lowercase hex digits. Any
 * other is not the fleet's and may be of any length: it is removed inside Redis, never sent.
 */
const MEMBER = `
local function wellFormed(member)
  return #member == 32 and not string.find(member, '[^0-9a-f]')
end
local function dropMember(index, unnamed, prefix, member)
  redis.call('ZREM', index, member)
  redis.call('ZREM', unnamed, member)
  redis.call('DEL', prefix .. member)
end
`;

/**
 * KEYS index, unnamed; ARGV the most members read, the entries' key prefix. Gives the index's latest
 * members and how many of those read were no member: each of those is removed (from both ZSETs, with
 * its key), so that a member of a megabyte is never sent to every instance at each read.
 */
const INDEX = `${MEMBER}
local listed = redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
local out, dropped = {}, 0
for _, member in ipairs(listed) do
  if wellFormed(member) then
    out[#out + 1] = member
  else
    dropMember(KEYS[1], KEYS[2], ARGV[2], member)
    dropped = dropped + 1
  end
end
return {out, dropped}
`;

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
 * here and its value returned, for Node to open and count under `other`. A least that is no member
 * (MEMBER) is not pushed out but dropped, with its key, and counted in the answer: never returned.
 */
const MERGE = `${TOKEN}${MEMBER}
if redis.call('EXISTS', KEYS[4]) == 1 then return {0} end
local largest = tonumber(ARGV[8])
if token(KEYS[1], largest) ~= ARGV[1] then return {1} end
local member = ARGV[5]
local pushed = nil
local dropped = 0
if ARGV[6] == '1' and not redis.call('ZSCORE', KEYS[3], member) then
  -- The least counted, if it is no member, is dropped (never returned), and the next least looked at.
  while redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[7]) do
    local least = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
    if wellFormed(least) then break end
    dropMember(KEYS[2], KEYS[3], ARGV[9], least)
    dropped = dropped + 1
  end
end
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
if pushed then return {2, dropped, pushed[1], pushed[2]} end
return {2, dropped}
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
  fleetLedgerIndex(index: string, unnamed: string, most: number, prefix: string): Promise<IndexReply>;
  fleetLedgerReadBuffer(largest: number, ...keys: string[]): Promise<BoundedValue[]>;
  fleetLedgerMergeBuffer(...keysAndArgs: (string | number | Buffer)[]): Promise<MergeReply>;
  fleetLedgerTrim(index: string, unnamed: string, oldest: number, prefix: string, most: number): Promise<number>;
}

export const ledgerCommands = scriptCommands<LedgerCommands>({
  fleetLedgerIndex: { keys: 2, lua: INDEX },
  fleetLedgerRead: { keys: 0, lua: READ },
  fleetLedgerMerge: { keys: 4, lua: MERGE },
  fleetLedgerTrim: { keys: 2, lua: TRIM },
});
