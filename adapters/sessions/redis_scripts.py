"""The Lua scripts of RedisSessionStore: each write of a session is one script, so it is atomic."""

from __future__ import annotations

# Every write bumps the project's write counter inside its script, so "written most recently" holds when clocks tie.
# KEYS: session hash, by-creation set, by-write set, write counter, messages list, turn-ids set.
# ARGV: id, creation score, then the hash's field/value pairs. Returns 0 when the id is taken, 1 when created.
CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('DEL', KEYS[5], KEYS[6])
local written = redis.call('INCR', KEYS[4])
redis.call('HSET', KEYS[1], 'written', written, unpack(ARGV, 3))
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[3], written, ARGV[1])
return 1
"""
# KEYS: session hash, messages list, by-write set, write counter, turn-ids set.
# ARGV: id, encoded turn, counted messages, update time, '1' when a first message follows, it, turn id or ''.
# Returns 0 when the session is missing, 2 when the turn id (ARGV[7], if any) is already recorded, 1 when appended.
APPEND = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[7] ~= '' then
  if redis.call('SISMEMBER', KEYS[5], ARGV[7]) == 1 then return 2 end
  redis.call('SADD', KEYS[5], ARGV[7])
end
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('HINCRBY', KEYS[1], 'message_count', ARGV[3])
if ARGV[5] == '1' then redis.call('HSETNX', KEYS[1], 'first_message', ARGV[6]) end
local written = redis.call('INCR', KEYS[4])
redis.call('HSET', KEYS[1], 'updated', ARGV[4], 'written', written)
redis.call('ZADD', KEYS[3], written, ARGV[1])
return 1
"""
# KEYS: session hash, by-write set, write counter. ARGV: id, end reason, update time. Returns 0 when missing.
END = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local written = redis.call('INCR', KEYS[3])
redis.call('HSET', KEYS[1], 'end_reason', ARGV[2], 'updated', ARGV[3], 'written', written)
redis.call('ZADD', KEYS[2], written, ARGV[1])
return 1
"""
# KEYS: session hash, messages list, turn-ids set, execution log, by-creation set, by-write set. ARGV: id.
DELETE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('ZREM', KEYS[6], ARGV[1])
return 1
"""
# KEYS: source hash, source messages, new hash, new messages, by-creation set, by-write set, write counter, new
# turn-ids set. ARGV: source id, new id, time, creation score, project path.
# Returns 0 when the source is missing, 1 when the new id is taken, else the new session's hash as a flat list.
FORK = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('EXISTS', KEYS[3]) == 1 then return 1 end
redis.call('DEL', KEYS[4], KEYS[8])
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('COPY', KEYS[2], KEYS[4]) end
redis.call('HSET', KEYS[3], unpack(redis.call('HGETALL', KEYS[1])))
redis.call('HDEL', KEYS[3], 'end_reason')
local copied = redis.call('INCR', KEYS[7])
redis.call('HSET', KEYS[3], 'id', ARGV[2], 'created', ARGV[3], 'updated', ARGV[3], 'forked_from', ARGV[1],
  'project_path', ARGV[5], 'written', copied)
redis.call('ZADD', KEYS[5], ARGV[4], ARGV[2])
redis.call('ZADD', KEYS[6], copied, ARGV[2])
local ended = redis.call('INCR', KEYS[7])
redis.call('HSET', KEYS[1], 'end_reason', 'forked', 'updated', ARGV[3], 'written', ended)
redis.call('ZADD', KEYS[6], ended, ARGV[1])
return redis.call('HGETALL', KEYS[3])
"""
