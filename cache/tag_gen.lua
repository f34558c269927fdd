-- tag_gen: read a tag's generation before a load starts.
-- KEYS[1] tag generation  (STRING)
-- ARGV: none
-- Returns {'ok', generation} or {'ok', false} when the tag was never
-- invalidated (within the generation's TTL).
return {'ok', redis.call('GET', KEYS[1])}
