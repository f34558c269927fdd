package cache

import (
	"container/list"
	"hash/maphash"
	"slices"
	"sync"
	"time"
)

// localTier is the optional in-process tier: a bounded LRU in shards,
// each value kept at most maxAge and never past its freshness in Redis.
type localTier struct {
	shards [localShards]localShard
	maxAge time.Duration
	seed   maphash.Seed
}

const localShards = 16

type localShard struct {
	mu  sync.Mutex
	m   map[string]*list.Element
	ll  list.List
	max int
}

type localEntry struct {
	key  string
	val  []byte
	exp  time.Time
	tags []string
}

func newLocalTier(size int, maxAge time.Duration) *localTier {
	t := &localTier{maxAge: maxAge, seed: maphash.MakeSeed()}
	per := max(1, (size+localShards-1)/localShards)
	for i := range t.shards {
		t.shards[i].m = map[string]*list.Element{}
		t.shards[i].max = per
	}
	return t
}

func (t *localTier) shard(key string) *localShard {
	return &t.shards[maphash.String(t.seed, key)%localShards]
}

// get returns key's value and the freshness it has left.
func (t *localTier) get(key string) ([]byte, time.Duration, bool) {
	sh := t.shard(key)
	now := time.Now()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	el, ok := sh.m[key]
	if !ok {
		return nil, 0, false
	}
	e := el.Value.(*localEntry)
	if !now.Before(e.exp) {
		sh.ll.Remove(el)
		delete(sh.m, key)
		return nil, 0, false
	}
	sh.ll.MoveToFront(el)
	return e.val, e.exp.Sub(now), true
}

// put keeps val for key for min(fresh, maxAge).
func (t *localTier) put(key string, val []byte, fresh time.Duration, tags []string) {
	if fresh <= 0 {
		return
	}
	e := &localEntry{key: key, val: val, exp: time.Now().Add(min(fresh, t.maxAge)), tags: slices.Clone(tags)}
	sh := t.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if el, ok := sh.m[key]; ok {
		el.Value = e
		sh.ll.MoveToFront(el)
		return
	}
	sh.m[key] = sh.ll.PushFront(e)
	for sh.ll.Len() > sh.max {
		last := sh.ll.Back()
		sh.ll.Remove(last)
		delete(sh.m, last.Value.(*localEntry).key)
	}
}

// del drops key.
func (t *localTier) del(key string) {
	sh := t.shard(key)
	sh.mu.Lock()
	if el, ok := sh.m[key]; ok {
		sh.ll.Remove(el)
		delete(sh.m, key)
	}
	sh.mu.Unlock()
}

// delTag drops every value stored with tag (a scan: invalidations are
// rare, lookups are not).
func (t *localTier) delTag(tag string) {
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		for el := sh.ll.Front(); el != nil; {
			next := el.Next()
			if e := el.Value.(*localEntry); slices.Contains(e.tags, tag) {
				sh.ll.Remove(el)
				delete(sh.m, e.key)
			}
			el = next
		}
		sh.mu.Unlock()
	}
}

// len returns the number of values held.
func (t *localTier) len() int {
	n := 0
	for i := range t.shards {
		t.shards[i].mu.Lock()
		n += t.shards[i].ll.Len()
		t.shards[i].mu.Unlock()
	}
	return n
}
