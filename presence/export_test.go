package presence

// ShardTag is slotTag for the external tests: the hash tag of the online
// index shard of a cluster slot.
var ShardTag = slotTag
