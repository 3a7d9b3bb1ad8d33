package claim

import (
	"fmt"
	"strconv"
	"strings"
	"time"
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
//
// This file is the one place that spells the protocol: the prefixes below,
// and the SQL that reads them (built from the prefixes, never re-spelled).
const (
	leasePrefix    = "bd-claim lease until "
	releasedPrefix = "bd-claim released: "
	failedPrefix   = "bd-claim failed: "
	expiredPrefix  = "bd-claim expired: "
	resetPrefix    = "bd-claim reset: "
)

// like is the LIKE pattern of comments that start with prefix.
func like(prefix string) string { return prefix + "%" }

// The patterns as SQL string literals, for the claim queries: SQLite
// re-prepares a statement on every run when a LIKE pattern is a bound
// parameter (its LIKE optimisation depends on the value), which doubled
// the cost of a claim. The prefixes hold no quote.
const (
	leaseLike  = "'" + leasePrefix + "%'"
	failedLike = "'" + failedPrefix + "%'"
	resetLike  = "'" + resetPrefix + "%'"
)

// leaseTime is how a lease's end is written in a claim event's comment:
// UTC, whole seconds, so that it compares as text.
const leaseTime = "2006-01-02T15:04:05Z"

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

// claimOf is the lease's comment naming the claim it belongs to, where the
// claim's event alone cannot say (Dolt: events are ordered by the second
// only, so two claims of one issue in one second are told apart by the
// key, the issue's row_lock): "bd-claim lease until T (D) claim KEY".
func (l *Lease) claimOf(key int64) string { return l.comment() + claimMark + strconv.FormatInt(key, 10) }

// claimMark joins a lease's comment and the key of its claim.
const claimMark = " claim "

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
	length, _, _ := strings.Cut(strings.TrimPrefix(rest[len(leaseTime):], " ("), ")")
	d, _ := time.ParseDuration(length)
	return &Lease{Until: until, Duration: d}
}

// claimEvent is an issue with its current claim, as claims selects it.
type claimEvent struct {
	IssueID, Holder, Status string
	ID                      int64 // the claim's fencing token; 0 when the issue has no claim event
	Actor, Comment, At      string
	Until                   string // the lease's end as leaseTime, "" without a lease
	Expired                 bool
	// length is the lease's length where the engine records it apart from
	// the comment (0: read it from the comment); leaseless, a claim that
	// can hold no lease (the engine keeps none for its row).
	length    time.Duration
	leaseless bool
	// legacy is the id an earlier bd-claim printed for this claim, where it
	// differs from ID (0 where it does not): still accepted as its fence.
	legacy int64
	// bdLease: the lease is bd's own, which every claim on a Dolt workspace
	// carries (bd's 5 minutes, renewed by bd heartbeat), not one the holder
	// asked bd-claim for: no claim takes the issue over when it ends (bd
	// never does either); reap --older-than and bd reclaim recover it.
	bdLease bool
	// event is the engine's key of the claim event whose comment holds an
	// asked lease, where the claim's id is not that key (Dolt: the event's
	// UUID; "" without one), and key the claim's own key (Dolt: the
	// issue's row_lock), which an asked lease's comment names.
	event string
	key   int64
}

// is says whether claimID names claim c: its id, or the id an earlier
// bd-claim printed for it.
func (c claimEvent) is(claimID int64) bool {
	return claimID == c.ID || (c.legacy != 0 && claimID == c.legacy)
}

func (c *claimEvent) dest() []any {
	return []any{&c.IssueID, &c.Holder, &c.Status, &c.ID, &c.Actor, &c.Comment, &c.At, &c.Until, &c.Expired}
}

// lease is the claim's lease, nil without one: its end (Until), and its
// length as the engine records it, else as the comment gives it.
func (c claimEvent) lease() *Lease {
	if c.Until == "" {
		return nil
	}
	until, _ := time.Parse(leaseTime, c.Until) // written in this form by every engine's claim state
	l := &Lease{Until: until, Duration: c.length}
	if asked := parseLease(c.Comment); asked != nil && l.Duration == 0 {
		l.Duration = asked.Duration
	}
	return l
}

// takeable says whether another claim may take the issue over: its
// holder's lease is one it asked for, and has ended.
func (c claimEvent) takeable() bool { return c.Expired && !c.bdLease }

// history is how a flavor's SQL reads the failed attempts of the
// protocol: built once per flavor by newHistory, the one spelling of the
// failure and reset rules.
type history struct {
	// failures selects (n, last): the failed attempts of issue i since its
	// last reset, and the time of the latest; lookups by issue in events,
	// whatever the size of the table.
	failures string
	// anyFailure selects 1 for any failed attempt of issue i: one range of
	// the index, which spares the common issue without failures the
	// counting of failures.
	anyFailure string
	unixTime   string // a datetime expression (the %s) as unix seconds
	least      string // the SQL function of the lesser of two numbers
}

// newHistory spells the failure rules for a flavor whose failed release
// is an event of type releaseEvent and whose events are ordered by the
// column order (zero sorts before any event).
func newHistory(releaseEvent, order, zero, unixTime, least string) history {
	failed := "f.issue_id = i.id AND f.event_type = '" + releaseEvent + "' AND f.comment LIKE " + failedLike
	return history{
		failures: `SELECT count(*) AS n, max(f.created_at) AS last FROM events f
	WHERE ` + failed + `
	  AND f.` + order + ` > COALESCE((SELECT max(r.` + order + `) FROM events r
	      WHERE r.issue_id = i.id AND r.event_type = 'commented' AND r.comment LIKE ` + resetLike + `), ` + zero + `)`,
		anyFailure: "SELECT 1 FROM events f WHERE " + failed,
		unixTime:   unixTime, least: least,
	}
}

// The histories of the two families: SQLite's failed release is a
// status_changed event and events are ordered by their integer id; a Dolt
// workspace's is bd unclaim's unclaimed event, and its events (UUIDs) are
// ordered by created_at, whole seconds: a failure recorded in the same
// second as a reset, after it, does not count.
var (
	sqliteHistory = newHistory("status_changed", "id", "0", "unixepoch(%s)", "min")
	doltHistory   = newHistory("unclaimed", "created_at", "'1970-01-01 00:00:00'", "TIMESTAMPDIFF(SECOND, '1970-01-01 00:00:00', %s)", "LEAST")
)
