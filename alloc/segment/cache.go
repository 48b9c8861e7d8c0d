package segment

import "sync/atomic"

// cacheSlots is the size of the hot-path tag cache (a power of two).
const cacheSlots = 256

// tagCache is a direct-mapped cache in front of the tag map: a slot picked
// from the name's length and three of its bytes, confirmed by comparing the
// name. It spares the hot path the map's full hash (most of its cost).
// Slots are only written on a miss, so a hit is one atomic load and a
// string compare; colliding hot tags fall back to the map, never to a
// wrong tag.
type tagCache [cacheSlots]atomic.Pointer[tagState]

// cacheSlot needs len(s) > 0.
func cacheSlot(s string) uint {
	n := uint(len(s))
	return (n<<5 ^ uint(s[0])<<2 ^ uint(s[n-1])<<3 ^ uint(s[n>>1])) & (cacheSlots - 1)
}

// find returns the loaded state of tag, or nil: NextIDs' one lookup, a
// cache probe and the map on a miss. (tagFor, which creates tags, reads the
// map itself: the slot may hold a removed incarnation of the name.)
func (a *Allocator) find(tag string) *tagState {
	if len(tag) > 0 {
		if t := a.cache[cacheSlot(tag)].Load(); t != nil && t.name == tag {
			return t
		}
	}
	t := a.lookup(tag)
	if t != nil {
		a.cache[cacheSlot(tag)].Store(t)
	}
	return t
}

// uncache drops a removed tag from the cache.
func (a *Allocator) uncache(t *tagState) {
	a.cache[cacheSlot(t.name)].CompareAndSwap(t, nil)
}
