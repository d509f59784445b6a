/**
 * The Lua scripts that make the shared limits atomic on Redis: each check-and-take runs as one script,
 * so replicas never interleave between the check and the take. Times come from Redis's own clock (TIME),
 * so replicas with skewed clocks agree on the window.
 */

const NOW = `local t = redis.call('TIME'); local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * Per-minute sliding-window log, as protocol/rate-limiter.ts keeps it in memory: accepted requests' times
 * in a sorted set; an entry leaves when it is `window` old. KEYS[1] the key's log; ARGV limit, window ms,
 * a unique member suffix. Returns {allowed, remaining, resetMs, retryAfterMs, member, at}.
 */
export const TAKE = `
${NOW}
local limit = tonumber(ARGV[1]); local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local n = redis.call('ZCARD', KEYS[1])
if n < limit then
  local member = now .. ':' .. ARGV[3]
  redis.call('ZADD', KEYS[1], now, member)
  redis.call('PEXPIRE', KEYS[1], window)
  return {1, limit - n - 1, window, 0, member, now}
end
local reset = 0
if n > 0 then reset = tonumber(redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2]) + window - now end
local retry = 0
if limit > 0 then retry = tonumber(redis.call('ZRANGE', KEYS[1], n - limit, n - limit, 'WITHSCORES')[2]) + window - now end
return {0, 0, reset, math.max(0, retry), '', now}
`;

/** The window's state without taking: {remaining, resetMs}. */
export const PEEK = `
${NOW}
local limit = tonumber(ARGV[1]); local window = tonumber(ARGV[2])
local n = redis.call('ZCOUNT', KEYS[1], '(' .. (now - window), '+inf')
local reset = 0
if n > 0 then reset = tonumber(redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2]) + window - now end
return {math.max(0, limit - n), math.max(0, reset)}
`;

/**
 * The monthly allowance: KEYS[1] the holds of one key and period (sorted set, score = expiry), KEYS[2]
 * how many holds were counted so far (the epoch). ARGV: the epoch the caller read before reading the
 * store's count, that count, the limit, the hold id ('' to only check), the hold's lifetime in ms, the
 * keys' lifetime in ms. Returns -1 when a hold was counted since the epoch was read (the count may miss
 * it: read again), 0 when the request does not fit, 1 when it fits (and is held, given an id).
 */
export const HOLD = `
${NOW}
if tonumber(redis.call('GET', KEYS[2]) or '0') ~= tonumber(ARGV[1]) then return -1 end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZCARD', KEYS[1])
if tonumber(ARGV[2]) + held >= tonumber(ARGV[3]) then return 0 end
if ARGV[4] ~= '' then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[5]), ARGV[4])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[6]))
end
return 1
`;

/** A hold's request was counted in the store: the hold goes and the epoch moves (even if the hold had expired). */
export const COUNTED = `
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[2]))
return 1
`;

/** Live holds of this replica get a new expiry (ZADD XX: a hold already gone stays gone). ARGV: lifetime ms, ids. */
export const REFRESH = `
${NOW}
local n = 0
for i = 2, #ARGV do n = n + redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[1]), ARGV[i]) end
return n
`;
