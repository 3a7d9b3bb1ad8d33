package engine

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
// and the SQL patterns that read them (built from the prefixes, never
// re-spelled).
const (
	LeasePrefix    = "bd-claim lease until "
	ReleasedPrefix = "bd-claim released: "
	FailedPrefix   = "bd-claim failed: "
	ExpiredPrefix  = "bd-claim expired: "
	ResetPrefix    = "bd-claim reset: "
)

// Like is the LIKE pattern of comments that start with prefix.
func Like(prefix string) string { return prefix + "%" }

// The patterns as SQL string literals, for the claim queries: SQLite
// re-prepares a statement on every run when a LIKE pattern is a bound
// parameter (its LIKE optimisation depends on the value), which doubled
// the cost of a claim. The prefixes hold no quote.
const (
	LeaseLike  = "'" + LeasePrefix + "%'"
	FailedLike = "'" + FailedPrefix + "%'"
	ResetLike  = "'" + ResetPrefix + "%'"
)

// LeaseTime is how a lease's end is written in a claim event's comment:
// UTC, whole seconds, so that it compares as text.
const LeaseTime = "2006-01-02T15:04:05Z"

// Lease is a claim's lease: the claim may be taken over once Until passes.
type Lease struct {
	Until    time.Time     // rounded up to a whole second
	Duration time.Duration // what a heartbeat without --lease renews it by
}

// NewLease is a lease of d from now, nil for none (d <= 0).
func NewLease(now time.Time, d time.Duration) *Lease {
	if d <= 0 {
		return nil
	}
	until := now.Add(d).UTC()
	if t := until.Truncate(time.Second); t.Before(until) {
		until = t.Add(time.Second)
	}
	return &Lease{Until: until, Duration: d}
}

// Comment is the lease as a claim event's comment holds it.
func (l *Lease) Comment() string {
	return fmt.Sprintf("%s%s (%s)", LeasePrefix, l.Until.Format(LeaseTime), l.Duration)
}

// ClaimOf is the lease's comment naming the claim it belongs to, where the
// claim's event alone cannot say (Dolt: events are ordered by the second
// only, so two claims of one issue in one second are told apart by the
// key, the issue's row_lock): "bd-claim lease until T (D) claim KEY".
func (l *Lease) ClaimOf(key int64) string {
	return l.Comment() + ClaimMark + strconv.FormatInt(key, 10)
}

// ClaimMark joins a lease's comment and the key of its claim.
const ClaimMark = " claim "

// ParseLease reads the lease of a claim event's comment; nil when it has
// none.
func ParseLease(comment string) *Lease {
	rest, ok := strings.CutPrefix(comment, LeasePrefix)
	if !ok || len(rest) < len(LeaseTime) {
		return nil
	}
	until, err := time.Parse(LeaseTime, rest[:len(LeaseTime)])
	if err != nil {
		return nil
	}
	length, _, _ := strings.Cut(strings.TrimPrefix(rest[len(LeaseTime):], " ("), ")")
	d, _ := time.ParseDuration(length)
	return &Lease{Until: until, Duration: d}
}

// NoReason is the reason of a failed release that gives none.
const NoReason = "no reason given"

// ReleaseComment is the comment of a release's event, as the protocol
// records a release: its prefix (a failed attempt counts towards the
// backoff) and its reason.
func ReleaseComment(failed bool, reason string) string {
	prefix := ReleasedPrefix
	if failed {
		prefix = FailedPrefix
	}
	if reason == "" {
		reason = NoReason
	}
	return prefix + reason
}

// History is how an engine's SQL reads the failed attempts of the protocol:
// built once per engine by NewHistory, the one spelling of the failure and
// reset rules.
type History struct {
	// Failures selects (n, last): the failed attempts of issue i since its
	// last reset, and the time of the latest; lookups by issue in events,
	// whatever the size of the table.
	Failures string
	// AnyFailure selects 1 for any failed attempt of issue i: one range of
	// the index, which spares the common issue without failures the
	// counting of failures.
	AnyFailure string
	UnixTime   string // a datetime expression (the %s) as unix seconds
	Least      string // the SQL function of the lesser of two numbers
}

// NewHistory spells the failure rules for an engine whose failed release
// is an event of type releaseEvent and whose events are ordered by the
// column order (zero sorts before any event).
func NewHistory(releaseEvent, order, zero, unixTime, least string) History {
	failed := "f.issue_id = i.id AND f.event_type = '" + releaseEvent + "' AND f.comment LIKE " + FailedLike
	return History{
		Failures: `SELECT count(*) AS n, max(f.created_at) AS last FROM events f
	WHERE ` + failed + `
	  AND f.` + order + ` > COALESCE((SELECT max(r.` + order + `) FROM events r
	      WHERE r.issue_id = i.id AND r.event_type = 'commented' AND r.comment LIKE ` + ResetLike + `), ` + zero + `)`,
		AnyFailure: "SELECT 1 FROM events f WHERE " + failed,
		UnixTime:   unixTime, Least: least,
	}
}

// Holder is an agent holding an issue under one claim.
type Holder struct {
	Agent      string     `json:"agent"`
	ClaimID    int64      `json:"claim_id"`
	LeaseUntil *time.Time `json:"lease_expires_at,omitempty"`
}

// State is an issue with its current claim: who holds it, under which
// claim, and its lease.
type State struct {
	IssueID, Holder, Status string
	ID                      int64  // the claim's fencing token; 0 when the issue has no claim
	Actor, Comment, At      string // the claim's author, its event's comment and time (the engine's Flavor.EventTime)
	Until                   string // the lease's end as LeaseTime, "" without a lease
	Expired                 bool   // the lease has ended
	// Length is the lease's length where the engine records it apart from
	// the comment (0: read it from the comment); Wisp, a claim that can
	// hold no lease (a Dolt wisp).
	Length time.Duration
	Wisp   bool
	// Legacy is the id an earlier bd-claim printed for this claim, where it
	// differs from ID (0 where it does not): still accepted as its fence.
	Legacy int64
	// BdLease: the lease is bd's own, which every claim on a Dolt workspace
	// carries (bd's 5 minutes, renewed by bd heartbeat), not one the holder
	// asked bd-claim for: no claim takes the issue over when it ends (bd
	// never does either); reap --older-than and bd reclaim recover it.
	BdLease bool
	Data    any // what the engine keeps of the claim for its writes
}

// Is says whether claimID names claim s: its id, or the id an earlier
// bd-claim printed for it.
func (s State) Is(claimID int64) bool {
	return claimID == s.ID || (s.Legacy != 0 && claimID == s.Legacy)
}

// Lease is the claim's lease, nil without one: its end (Until), and its
// length as the engine records it, else as the comment gives it.
func (s State) Lease() *Lease {
	if s.Until == "" {
		return nil
	}
	until, _ := time.Parse(LeaseTime, s.Until) // written in this form by every engine's claim state
	l := &Lease{Until: until, Duration: s.Length}
	if asked := ParseLease(s.Comment); asked != nil && l.Duration == 0 {
		l.Duration = asked.Duration
	}
	return l
}

// Takeable says whether another claim may take the issue over: its
// holder's lease is one it asked for, and has ended.
func (s State) Takeable() bool { return s.Expired && !s.BdLease }
