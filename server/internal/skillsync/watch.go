package skillsync

import (
	"context"
	"time"
)

// WatchOptions configure Watch.
type WatchOptions struct {
	// Options are each round's (Source is set by Watch).
	Options
	// Open connects to the registry; Watch calls it again after a round
	// failed.
	Open func(ctx context.Context) (Source, error)
	// Debounce is how long a change waits for the ones right behind it
	// before a round starts (default 20 ms).
	Debounce time.Duration
	// Interval is how often a round runs without a change notification,
	// to catch one that was lost (default 1 minute).
	Interval time.Duration
	// RoundTimeout bounds one round (default 10 minutes).
	RoundTimeout time.Duration
	// Round, when set, is told how each round went.
	Round func(rep *Report, err error)
}

// Watch keeps the targets in sync until ctx ends: a round (Sync) at the
// start, after every change the registry announces (MCP
// notifications/resources/list_changed and updated over HTTP; the
// registry's change trigger over iii), and every Interval. A failed round
// closes the connection; the next one opens a new one, with a growing
// pause up to 30 s. It returns when ctx ends.
func Watch(ctx context.Context, wo WatchOptions) error {
	if wo.Debounce <= 0 {
		wo.Debounce = 20 * time.Millisecond
	}
	if wo.Interval <= 0 {
		wo.Interval = time.Minute
	}
	if wo.RoundTimeout <= 0 {
		wo.RoundTimeout = 10 * time.Minute
	}
	wo.cache = newDigestCache() // files unchanged since the last round are not read again
	changed := make(chan struct{}, 1)
	signal := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	var src Source
	var stop func()
	closeSource := func() {
		if stop != nil {
			stop()
		}
		if src != nil {
			_ = src.Close()
		}
		src, stop = nil, nil
	}
	defer closeSource()
	pause := time.Duration(0)
	for {
		var rep *Report
		var err error
		if l, ok := src.(interface{ Lost() error }); ok && l.Lost() != nil {
			closeSource() // its notifications stopped with it
		}
		if src == nil {
			src, err = wo.Open(ctx)
			if err == nil {
				// Subscribed before the round: nothing that changes while
				// it runs is missed.
				if stop, err = src.Watch(ctx, signal); err != nil {
					_ = src.Close()
					src = nil
				}
			}
		}
		if err == nil {
			opts := wo.Options
			opts.Source = src
			rctx, cancel := context.WithTimeout(ctx, wo.RoundTimeout)
			rep, err = Sync(rctx, opts)
			cancel()
		}
		if ctx.Err() != nil {
			return nil
		}
		if wo.Round != nil {
			wo.Round(rep, err)
		}
		wait := wo.Interval
		if err != nil {
			closeSource()
			pause = min(max(2*pause, time.Second), 30*time.Second)
			wait = pause
		} else {
			pause = 0
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-changed:
			timer.Stop()
			// Changes come in bursts (a publisher registers many skills):
			// one round for the burst.
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wo.Debounce):
			}
			select {
			case <-changed:
			default:
			}
		case <-timer.C:
		}
	}
}
