package seq

import "sync/atomic"

// spaceDir indexes a space's sections in memory by section number, so the
// one-key path finds its section with one load instead of the sections
// map (hashing a space name and a number under n.mu's read lock was half
// of a NextSeq, by pprof). It mirrors n.sections: an entry is set when a
// section is created and cleared when it is dropped, both under n.mu; a
// nil entry sends the caller to the map, which creates the section.
type spaceDir struct {
	secs []atomic.Pointer[section]
}

// maxDirSections bounds a directory to 8 MB; a space with more sections
// is served through the map alone.
const maxDirSections = 1 << 20

// dirLocked is space's directory for a table of count sections (n.mu
// held), made on first use; a different count (a space recreated with
// another shape) starts a new one.
func (n *Node) dirLocked(space string, count uint64) *spaceDir {
	if count == 0 || count > maxDirSections {
		delete(n.dirs, space)
		return nil
	}
	d := n.dirs[space]
	if d == nil || uint64(len(d.secs)) != count {
		d = &spaceDir{secs: make([]atomic.Pointer[section], count)}
		for k, s := range n.sections {
			if k.space == space && k.section < count {
				d.secs[k.section].Store(s)
			}
		}
		n.dirs[space] = d
	}
	return d
}

// get is section sec if it is in memory, else nil.
func (d *spaceDir) get(sec uint64) *section {
	if d == nil || sec >= uint64(len(d.secs)) {
		return nil
	}
	return d.secs[sec].Load()
}

// setLocked and clearLocked keep the directory in step with n.sections
// (n.mu held).
func (n *Node) setLocked(k secKey, s *section) {
	if d := n.dirs[k.space]; d != nil && k.section < uint64(len(d.secs)) {
		d.secs[k.section].Store(s)
	}
}

func (n *Node) clearLocked(k secKey, s *section) {
	if d := n.dirs[k.space]; d != nil && k.section < uint64(len(d.secs)) {
		d.secs[k.section].CompareAndSwap(s, nil)
	}
}
