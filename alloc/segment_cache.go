package alloc

import "sync/atomic"

// segCacheSlots is the size of the hot-path tag cache (a power of two).
const segCacheSlots = 256

// segCache is a direct-mapped cache in front of the tag map: a slot picked
// from the name's length and three of its bytes, confirmed by comparing the
// name. It spares the hot path the map's full hash (most of its cost).
// Slots are only written on a miss, so a hit is one atomic load and a
// string compare; colliding hot tags fall back to the map, never to a
// wrong tag.
type segCache [segCacheSlots]atomic.Pointer[segTag]

// segSlot needs len(s) > 0.
func segSlot(s string) uint {
	n := uint(len(s))
	return (n<<5 ^ uint(s[0])<<2 ^ uint(s[n-1])<<3 ^ uint(s[n>>1])) & (segCacheSlots - 1)
}

// find returns the loaded state of tag, or nil. NextID has this probe
// written out so it is inlined there.
func (a *SegmentAllocator) find(tag string) *segTag {
	if len(tag) > 0 {
		if t := a.cache[segSlot(tag)].Load(); t != nil && t.name == tag {
			return t
		}
	}
	return a.findMiss(tag)
}

func (a *SegmentAllocator) findMiss(tag string) *segTag {
	t := a.lookup(tag)
	if t != nil {
		a.cache[segSlot(tag)].Store(t)
	}
	return t
}

// uncache drops a removed tag from the cache.
func (a *SegmentAllocator) uncache(t *segTag) {
	a.cache[segSlot(t.name)].CompareAndSwap(t, nil)
}
