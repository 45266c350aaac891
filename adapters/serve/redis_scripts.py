"""The Lua scripts of turns on Redis: each one atomic step of a front or a worker (the key and argument lists named)."""

from __future__ import annotations

# KEYS: seq, done, open turns, turns stream. ARGV: most waiting turns, session id, turn id, request line.
# One script, so the session's turn numbers are given out in the stream's order and a full queue takes nothing.
SUBMIT = """
local seq = tonumber(redis.call('GET', KEYS[1]) or '0')
local done = tonumber(redis.call('GET', KEYS[2]) or '0')
if seq - done > tonumber(ARGV[1]) then return -1 end
seq = redis.call('INCR', KEYS[1])
redis.call('HSET', KEYS[3], ARGV[3], seq)
redis.call('XADD', KEYS[4], '*', 'session_id', ARGV[2], 'turn_id', ARGV[3], 'seq', seq, 'request', ARGV[4])
return seq
"""

# Every write of a turn's events checks, in the same script, that the turn is not finished and that this worker
# still holds it: a worker that lost its turn to another (it stalled past the visibility timeout) writes nothing more.
OWNED = """
local function owned(turns, group, entry, consumer)
  local held = redis.call('XPENDING', turns, group, entry, entry, 1)
  return held[1] ~= nil and held[1][2] == consumer
end
"""
# KEYS: done, turns, events. ARGV: seq, group, entry id, consumer, event log size, line.
APPEND = (
    OWNED
    + """
if tonumber(redis.call('GET', KEYS[1]) or '0') >= tonumber(ARGV[1]) then return false end
if not owned(KEYS[2], ARGV[2], ARGV[3], ARGV[4]) then return false end
return redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[5], '*', 'e', ARGV[6])
"""
)
# The finish of a turn that recorded no history (it failed, was cancelled, or never ran): its turn_end, the done mark
# and the ack in one script; a turn finished before is only acked. KEYS: done, turn ids, events, open turns, started,
# cancelled, turns, control channel. ARGV: seq, turn id, turn_end line, event log size, group, entry id, consumer,
# the "done" control message.
FINISH = (
    OWNED
    + """
local done = tonumber(redis.call('GET', KEYS[1]) or '0')
local written = 0
if done < tonumber(ARGV[1]) and redis.call('SISMEMBER', KEYS[2], ARGV[2]) == 0 then
  if not owned(KEYS[7], ARGV[5], ARGV[6], ARGV[7]) then return -1 end
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[4], '*', 'e', ARGV[3])
  redis.call('SET', KEYS[1], ARGV[1])
  redis.call('SADD', KEYS[2], ARGV[2])
  redis.call('PUBLISH', KEYS[8], ARGV[8])
  written = 1
end
redis.call('HDEL', KEYS[4], ARGV[2])
redis.call('DEL', KEYS[5], KEYS[6])
redis.call('XACK', KEYS[7], ARGV[5], ARGV[6])
redis.call('XDEL', KEYS[7], ARGV[6])
return written
"""
)
# Resets the idle time of the entries this consumer still holds; returns those it no longer holds.
# KEYS: turns. ARGV: group, consumer, entry ids...
REFRESH = (
    OWNED
    + """
local lost = {}
for i = 3, #ARGV do
  if owned(KEYS[1], ARGV[1], ARGV[i], ARGV[2]) then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'JUSTID')
  else
    table.insert(lost, ARGV[i])
  end
end
return lost
"""
)
