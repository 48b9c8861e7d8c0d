package nemesis

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"time"
)

// Schedule runs faults until ctx ends: one lane per Fault.Lane (store
// faults one after another, alloc faults one after another, the two lanes
// concurrently), each picking uniformly from its faults with its own
// random source derived from seed, with a pause of gapLo..gapHi between
// faults. The same seed gives the same choices (their timing still depends
// on the system). copies > 1 runs that many of each lane at once, so
// faults overlap (e.g. a pause during a kill).
func Schedule(ctx context.Context, e *Env, faults []Fault, seed int64, copies int, gapLo, gapHi time.Duration) error {
	lanes := map[string][]Fault{}
	var order []string
	for _, f := range faults {
		if _, ok := lanes[f.Lane]; !ok {
			order = append(order, f.Lane)
		}
		lanes[f.Lane] = append(lanes[f.Lane], f)
	}
	var lanesRun []string
	for range max(copies, 1) {
		lanesRun = append(lanesRun, order...)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(lanesRun))
	for i, lane := range lanesRun {
		fs := lanes[lane]
		r := rand.New(rand.NewSource(seed + int64(i)*7919))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				hold(ctx, r, gapLo, gapHi)
				if ctx.Err() != nil {
					return
				}
				f := fs[r.Intn(len(fs))]
				if f.Rest > 0 {
					hold(ctx, r, f.Rest, 2*f.Rest)
					if ctx.Err() != nil {
						return
					}
				}
				since, before := e.Log.Since(), e.Log.Injected(f.Name)
				err := f.Run(ctx, e, r)
				if e.Log.Injected(f.Name) > before {
					e.Log.Window(f.Name, since)
				}
				if err != nil {
					e.Log.Error(f.Name, "", err)
					errs <- fmt.Errorf("%s: %w", f.Name, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// Lookup resolves fault names against the catalogue.
func Lookup(names []string) ([]Fault, error) {
	cat := Catalogue()
	out := make([]Fault, 0, len(names))
	for _, n := range names {
		f, ok := cat[n]
		if !ok {
			return nil, fmt.Errorf("nemesis: unknown fault %q", n)
		}
		out = append(out, f)
	}
	return out, nil
}
