//go:build faults

package alloc

import "github.com/seqsvr/seqsvr/internal/faults"

// plantedRepeatsCarry is the planted bug front-repeats-carry: the HTTP/1.1
// front's NextIDs answer, when its IDs span two ranges (the end of one
// segment carried into the next), repeats the carried range's last ID in
// place of the first ID of the next range. Only the front's encoding is
// wrong: the connect-go handler answers the same call right, so only a
// load through the front can catch it.
var plantedRepeatsCarry = faults.Bug(faults.BugFrontRepeatsCarry)

func repeatCarried(ids []int64) {
	if !plantedRepeatsCarry {
		return
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] != ids[i-1]+1 {
			ids[i] = ids[i-1]
			return
		}
	}
}
