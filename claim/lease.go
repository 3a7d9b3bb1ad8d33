package claim

import (
	"fmt"
	"strings"
	"time"

	sq "github.com/Masterminds/squirrel"
)

// bd-claim keeps all of its state in Beads' own tables, in the comment of
// the events it writes (bd leaves status_changed and claimed events
// uncommented). Every such comment starts with "bd-claim ":
//
//	bd-claim lease until 2026-11-21T07:05:00Z (5m0s)   claim event with a lease; a heartbeat rewrites it
//	bd-claim released: REASON                          status_changed in_progress → open
//	bd-claim failed: REASON                            status_changed in_progress → open; a failed attempt
//	bd-claim expired: lease of A (claim N) ended ...   status_changed in_progress → open; taken over or reaped
//	bd-claim reset: ...                                commented; failures before it no longer count
const (
	leasePrefix    = "bd-claim lease until "
	releasedPrefix = "bd-claim released: "
	failedPrefix   = "bd-claim failed: "
	expiredPrefix  = "bd-claim expired: "
	resetPrefix    = "bd-claim reset: "
)

// leaseTime is how a lease's end is written: UTC, whole seconds, so that
// it compares as text (and SQLite's datetime() reads it).
const leaseTime = "2006-01-02T15:04:05Z"

// eventTime is how events.created_at and comments.created_at are written:
// CURRENT_TIMESTAMP's form, as bd's column defaults leave them.
const eventTime = "2006-01-02 15:04:05"

// Lease is a claim's lease: the claim may be taken over once Until passes.
type Lease struct {
	Until    time.Time     // rounded up to a whole second
	Duration time.Duration // what a heartbeat without --lease renews it by
}

func newLease(now time.Time, d time.Duration) *Lease {
	if d <= 0 {
		return nil
	}
	until := now.Add(d).UTC()
	if t := until.Truncate(time.Second); t.Before(until) {
		until = t.Add(time.Second)
	}
	return &Lease{Until: until, Duration: d}
}

func (l *Lease) comment() string {
	return fmt.Sprintf("%s%s (%s)", leasePrefix, l.Until.Format(leaseTime), l.Duration)
}

// parseLease reads the lease of a claim event's comment; nil when it has
// none.
func parseLease(comment string) *Lease {
	rest, ok := strings.CutPrefix(comment, leasePrefix)
	if !ok || len(rest) < len(leaseTime) {
		return nil
	}
	until, err := time.Parse(leaseTime, rest[:len(leaseTime)])
	if err != nil {
		return nil
	}
	d, _ := time.ParseDuration(strings.Trim(rest[len(leaseTime):], " ()"))
	return &Lease{Until: until, Duration: d}
}

// heldLease is the lease of a claim event whose actor is the issue's
// holder, as bd-claim writes them; a claim bd made for someone else, or
// one bd reassigned since, has none. leaseExpired is the same rule in SQL.
func heldLease(comment, actor, holder string) *Lease {
	if actor != holder {
		return nil
	}
	return parseLease(comment)
}

// expired reports whether the lease has ended at now.
func (l *Lease) expired(now time.Time) bool { return l != nil && !now.Before(l.Until) }

// leaseExpired is true for an in_progress issue whose current claim event
// (see EventClaimCurrent) was written by its assignee with a lease that
// has ended at now. A claim bd made, or one bd reassigned since, has no
// lease. The lookups go through idx_events_issue_type.
func leaseExpired(now time.Time) sq.Sqlizer {
	return sq.Expr(`(i.status = 'in_progress' AND EXISTS (
	SELECT 1 FROM events e
	WHERE e.id = (SELECT max(c.id) FROM events c WHERE c.issue_id = i.id AND c.event_type IN ('claimed', 'status_changed'))
	  AND e.actor = i.assignee
	  AND e.comment LIKE '`+leasePrefix+`%'
	  AND substr(e.comment, ?, ?) <= ?))`, len(leasePrefix)+1, len(leaseTime), now.UTC().Format(leaseTime))
}
